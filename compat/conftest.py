"""Starts a StellMQ name server and broker (release binaries) for the SDK tests.

The binaries come from target/release (built by .ci/test). Every test session gets its own
ports (the servers bind port 0 and report it) and a temporary store directory.
"""
import os
import re
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release")


class Server:
    def __init__(self, name, args, log_path, pattern):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([os.path.join(BIN, name)] + args, stdout=self.log, stderr=subprocess.STDOUT)
        self.addr = self._wait_for(pattern)

    def _wait_for(self, pattern):
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited early:\n" + open(self.log_path).read())
            match = re.search(pattern, open(self.log_path).read())
            if match:
                return match.group(1)
            time.sleep(0.05)
        raise RuntimeError("server did not start:\n" + open(self.log_path).read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


@pytest.fixture(scope="session")
def stack():
    work = tempfile.mkdtemp(prefix="stellmq-compat-")
    ns_conf = os.path.join(work, "namesrv.conf")
    with open(ns_conf, "w") as f:
        f.write("listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath=%s/kv.json\n" % work)
    ns = Server("mqnamesrv", ["-c", ns_conf], os.path.join(work, "namesrv.log"), r"boot success\. serializeType=JSON, address (\S+)")
    broker_conf = os.path.join(work, "broker.conf")
    with open(broker_conf, "w") as f:
        f.write(
            "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\n"
            "storePathRootDir=%s/store\nmappedFileSizeCommitLog=67108864\n"
            "messageDelayLevel=1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s\n" % work
        )
    broker = Server("mqbroker", ["-c", broker_conf, "-n", ns.addr], os.path.join(work, "broker.log"), r"The broker\[(\S+)\] boot success")
    yield {"namesrv": ns.addr, "broker": broker.addr, "work": work}
    broker.stop()
    ns.stop()
    for name in ("broker.log", "namesrv.log"):
        text = open(os.path.join(work, name)).read()
        assert " ERROR " not in text, "%s logged errors:\n%s" % (name, text)
