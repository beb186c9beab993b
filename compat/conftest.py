"""Starts a StellMQ name server and broker (release binaries) for the SDK tests.

The binaries come from target/release (built by .ci/test). Every test session gets its own
ports (the servers bind port 0 and report it) and a temporary store directory.
"""
import os
import re
import shutil
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


class Stack:
    """A name server and a broker; the broker can be stopped and restarted on its store."""

    def __init__(self, extra_broker_conf=""):
        self.work = tempfile.mkdtemp(prefix="stellmq-compat-")
        ns_conf = os.path.join(self.work, "namesrv.conf")
        with open(ns_conf, "w") as f:
            f.write("listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath=%s/kv.json\n" % self.work)
        self.ns = Server("mqnamesrv", ["-c", ns_conf], os.path.join(self.work, "namesrv.log"),
                         r"boot success\. serializeType=JSON, address (\S+)")
        self.broker_conf = os.path.join(self.work, "broker.conf")
        with open(self.broker_conf, "w") as f:
            f.write(
                "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\n"
                "storePathRootDir=%s/store\nmappedFileSizeCommitLog=67108864\n"
                "messageDelayLevel=1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s\n%s\n"
                % (self.work, extra_broker_conf)
            )
        self.restarts = 0
        self.broker = None
        self.start_broker()

    def start_broker(self):
        log = os.path.join(self.work, "broker-%d.log" % self.restarts)
        self.restarts += 1
        self.broker = Server("mqbroker", ["-c", self.broker_conf, "-n", self.ns.addr], log,
                             r"The broker\[(\S+)\] boot success")

    def stop_broker(self):
        self.broker.stop()

    def as_dict(self):
        return {"namesrv": self.ns.addr, "broker": self.broker.addr, "work": self.work}

    def stop(self):
        self.broker.stop()
        self.ns.stop()
        for name in os.listdir(self.work):
            if name.endswith(".log"):
                text = open(os.path.join(self.work, name)).read()
                assert " ERROR " not in text, "%s logged errors:\n%s" % (name, text)
        # Clean runs leave nothing behind (each store preallocates hundreds of MB); a run
        # with errors keeps its directory for inspection.
        shutil.rmtree(self.work, ignore_errors=True)


@pytest.fixture(scope="session")
def stack():
    s = Stack()
    yield s.as_dict()
    s.stop()


@pytest.fixture
def make_stack():
    """Private stacks for tests that stop brokers or change their configuration."""
    made = []

    def make(extra_broker_conf=""):
        s = Stack(extra_broker_conf)
        made.append(s)
        return s

    yield make
    for s in made:
        s.stop()
