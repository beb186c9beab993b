"""The release package as a user gets it: distribution/release.sh packages the release builds
(--no-build: the ones .ci/test built), the tarball is unpacked in a temporary directory and
run from its bin/ with a PATH that has no Rust toolchain: name server and broker start, mqadmin
from the package creates a topic, sends and consumes, and bin/mqshutdown stops both."""
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time

from conftest import BIN, ROOT

BINARIES = ["mqnamesrv", "mqbroker", "mqadmin", "mqbench", "mqproxy", "mqdashboard", "mqcontroller"]
SCRIPTS = ["play.sh", "mqshutdown", "common.sh"]


def path_without_rust():
    """This PATH minus every directory holding cargo or rustc."""
    keep = [d for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if d and not any(os.path.exists(os.path.join(d, tool)) for tool in ("cargo", "rustc"))]
    return os.pathsep.join(keep)


def build_package(out):
    built = subprocess.run(
        [os.path.join(ROOT, "distribution", "release.sh"), "--no-build", "--bin-dir", BIN, "--out", out],
        capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    tarball = built.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"stellmq-[0-9][^/]*-[a-z0-9_]+-[a-z0-9_-]+\.tar\.gz", os.path.basename(tarball)), tarball
    return tarball


def unpack(tarball, into):
    with tarfile.open(tarball) as tar:
        # The "data" filter (Python 3.11.4+) refuses links out of the tree; exec bits stay.
        tar.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (top,) = os.listdir(into)
    assert tarball.endswith(top + ".tar.gz")
    return os.path.join(into, top)


def start(home, env, log_path, args, pattern):
    """Starts a program of the package's bin/ in the background (as `nohup bin/... &`) and
    waits for its boot line; returns the process and what `pattern` captured."""
    log = open(log_path, "w")
    proc = subprocess.Popen(args, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while time.time() < deadline:
        found = re.search(pattern, open(log_path).read())
        if found:
            return proc, found.group(1)
        assert proc.poll() is None, "%s exited early:\n%s" % (args[0], open(log_path).read())
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("%s did not start:\n%s" % (args[0], open(log_path).read()))


def run(home, env, *args):
    out = subprocess.run(list(args), cwd=home, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, "%s failed:\n%s\n%s" % (args, out.stdout, out.stderr)
    return out.stdout


def test_release_package_runs_without_a_toolchain():
    work = tempfile.mkdtemp(prefix="stellmq-package-")
    procs = []
    try:
        home = unpack(build_package(os.path.join(work, "out")), os.path.join(work, "unpacked"))
        check_layout(home)
        env = {"PATH": path_without_rust(), "HOME": os.path.join(work, "home"),
               "STELLMQ_RUN_DIR": os.path.join(work, "run")}
        assert shutil.which("cargo", path=env["PATH"]) is None
        procs = serve_send_consume_and_stop(home, env, work)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def check_layout(home):
    for name in BINARIES:
        path = os.path.join(home, "bin", name)
        with open(path, "rb") as f:
            assert f.read(4) == b"\x7fELF", "bin/%s is the binary itself" % name
    for name in SCRIPTS:
        assert os.access(os.path.join(home, "bin", name), os.X_OK), name
    for name in ["LICENSE", "README.md", "conf/broker.conf", "conf/broker-trace.properties",
                 "conf/plain_acl.yml", "conf/tools.yml", "conf/rmq-proxy.json"]:
        assert os.path.isfile(os.path.join(home, name)), name
    assert "Apache License" in open(os.path.join(home, "LICENSE")).read()


def serve_send_consume_and_stop(home, env, work):
    ns_conf = os.path.join(work, "namesrv.conf")
    with open(ns_conf, "w") as f:
        f.write("listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n"
                % (work, work))
    broker_conf = os.path.join(work, "broker.conf")
    with open(broker_conf, "w") as f:
        f.write("listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/store\n"
                "mappedFileSizeCommitLog=8388608\nmaxMessageSize=1048576\n" % work)
    namesrv, ns = start(home, env, os.path.join(work, "namesrv.log"), ["bin/mqnamesrv", "-c", ns_conf],
                        r"boot success\. serializeType=JSON, address (\S+)")
    broker, _ = start(home, env, os.path.join(work, "broker.log"),
                      ["bin/mqbroker", "-c", broker_conf, "-n", ns], r"The broker\[(\S+)\] boot success")
    procs = [namesrv, broker]

    assert "success" in run(home, env, "bin/mqadmin", "updateTopic", "-n", ns, "-c", "DefaultCluster",
                            "-t", "PackageTopic")
    assert "SEND_OK" in run(home, env, "bin/mqadmin", "sendMessage", "-n", ns, "-t", "PackageTopic",
                            "-p", "from the package")
    # The broker indexes a message for pulls a moment after acknowledging it (as RocketMQ's
    # reput does), and consumeMessage pulls without waiting: ask again for a while.
    deadline = time.monotonic() + 10
    consumed = ""
    while "from the package" not in consumed and time.monotonic() < deadline:
        consumed = run(home, env, "bin/mqadmin", "consumeMessage", "-n", ns, "-t", "PackageTopic")
        if "from the package" not in consumed:
            time.sleep(0.2)
    assert "from the package" in consumed, consumed

    stopped = run(home, env, "bin/mqshutdown", "broker")
    assert "Send shutdown request to mqbroker(%d)" % broker.pid in stopped, stopped
    assert broker.wait(timeout=30) == 0, "clean exit on SIGTERM"
    assert not os.path.exists(os.path.join(work, "store", "abort")), "the broker closed its store"
    stopped = run(home, env, "bin/mqshutdown", "namesrv")
    assert "Send shutdown request to mqnamesrv(%d)" % namesrv.pid in stopped, stopped
    assert namesrv.wait(timeout=30) == 0
    return procs
