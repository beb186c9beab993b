"""The distribution scripts as a user runs them, on release builds: play.sh, mqadmin,
mqshutdown. Uses the default ports (9876, 10911, 8081) and a private HOME for the stores."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from conftest import ROOT

SCRIPTS = os.path.join(ROOT, "distribution", "bin")


def run(env, *args, check=True):
    out = subprocess.run([os.path.join(SCRIPTS, args[0])] + list(args[1:]), env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert out.returncode == 0, "%s failed:\n%s\n%s" % (args, out.stdout, out.stderr)
    return out


def test_play_admin_and_shutdown():
    home = tempfile.mkdtemp(prefix="stellmq-home-")
    try:
        play_admin_and_shutdown(home)
    finally:
        # The default store preallocates a 1 GiB CommitLog segment: never leave it behind.
        shutil.rmtree(home, ignore_errors=True)


def play_admin_and_shutdown(home):
    env = dict(os.environ, HOME=home, STELLMQ_RUN_DIR=os.path.join(home, "run"))
    env.pop("NAMESRV_ADDR", None)
    started = run(env, "play.sh")
    try:
        assert "StellMQ is running" in started.stdout
        socket.create_connection(("127.0.0.1", 8081), timeout=5).close()  # the gRPC proxy
        ns = ["-n", "127.0.0.1:9876"]
        assert "success" in run(env, "mqadmin", "updateTopic", "-t", "SmokeTopic", "-c", "DefaultCluster", *ns).stdout
        sent = run(env, "mqadmin", "sendMessage", "-t", "SmokeTopic", "-p", "smoke body", "-k", "smoke-key", *ns).stdout
        assert "SEND_OK" in sent
        deadline = time.time() + 10
        while True:
            found = run(env, "mqadmin", "queryMsgByKey", "-t", "SmokeTopic", "-k", "smoke-key", *ns).stdout
            if len(found.strip().splitlines()) >= 2 or time.time() > deadline:
                break
            time.sleep(0.2)
        assert len(found.strip().splitlines()) >= 2, found
        consumed = run(env, "mqadmin", "consumeMessage", "-t", "SmokeTopic", *ns).stdout
        assert "smoke body" in consumed
        assert os.path.exists(os.path.join(home, "store", "commitlog")), "default store under $HOME/store"
    finally:
        stop_proxy = run(env, "mqshutdown", "proxy", check=False)
        stop_broker = run(env, "mqshutdown", "broker", check=False)
        stop_namesrv = run(env, "mqshutdown", "namesrv", check=False)
    assert "Send shutdown request to mqproxy" in stop_proxy.stdout, stop_proxy.stdout
    assert "Send shutdown request to mqbroker" in stop_broker.stdout, stop_broker.stdout
    assert "Send shutdown request to mqnamesrv" in stop_namesrv.stdout, stop_namesrv.stdout
    assert "No mqbroker running." in run(env, "mqshutdown", "broker", check=False).stdout
    assert not os.path.exists(os.path.join(home, "store", "abort")), "the broker stopped cleanly"


def test_scripts_run_the_binaries_where_cargo_puts_them():
    """With CARGO_TARGET_DIR set (absolute or relative to the checkout), the scripts run the
    binaries from that target directory, as `cargo build` would have put them."""
    target = tempfile.mkdtemp(prefix="stellmq-target-")
    try:
        os.makedirs(os.path.join(target, "release"))
        fake = os.path.join(target, "release", "mqadmin")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho \"mqadmin from $0: $*\"\n")
        os.chmod(fake, 0o755)
        env = dict(os.environ, CARGO_TARGET_DIR=target)
        out = run(env, "mqadmin", "topicList")
        assert out.stdout.strip() == "mqadmin from %s: topicList" % fake, out.stdout
        relative = os.path.relpath(target, ROOT)
        env = dict(os.environ, CARGO_TARGET_DIR=relative)
        assert fake in run(env, "mqadmin", "topicList").stdout
    finally:
        shutil.rmtree(target, ignore_errors=True)
