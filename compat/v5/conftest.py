"""RocketMQ 5 gRPC clients (PyPI rocketmq-python-client) against mqproxy.

The official Python 5 client and the C++ SDK wheel both install a top-level ``rocketmq``
package, so these tests run from their own virtualenv (.venv-v5, made by .ci/test). They
reuse the name server and broker stack of ../conftest.py and add an mqproxy in front of it.
"""
import importlib.util
import json
import os
import subprocess
import uuid

import pytest

_spec = importlib.util.spec_from_file_location(
    "compat_stack", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conftest.py"))
_stack = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stack)
BIN, Server, Stack = _stack.BIN, _stack.Server, _stack.Stack


class ProxyStack:
    """A name server, a broker and an mqproxy on free ports."""

    def __init__(self, extra_broker_conf="", extra_proxy_conf=None, admin_args=()):
        self.stack = Stack(extra_broker_conf)
        self.admin_args = list(admin_args)
        conf = os.path.join(self.stack.work, "rmq-proxy.json")
        with open(conf, "w") as f:
            json.dump(dict({"rocketMQClusterName": "DefaultCluster", "grpcServerPort": 0,
                            "bindAddress": "127.0.0.1"}, **(extra_proxy_conf or {})), f)
        self.proxy = Server("mqproxy", ["-n", self.stack.ns.addr, "--pc", conf],
                            os.path.join(self.stack.work, "proxy.log"),
                            r"gRPC address (\S+)")
        self.endpoint = self.proxy.addr

    def admin(self, *args):
        out = subprocess.run([os.path.join(BIN, "mqadmin")] + list(args) + ["-n", self.stack.ns.addr]
                             + self.admin_args,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    def topic(self, kind="NORMAL", queues=4):
        name = "T5_%s_%s" % (kind, uuid.uuid4().hex[:8])
        self.admin("updateTopic", "-c", "DefaultCluster", "-t", name, "-r", str(queues),
                   "-w", str(queues), "-a", "+message.type=%s" % kind)
        return name

    def group(self, orderly=False, retries=16):
        name = "G5_%s" % uuid.uuid4().hex[:8]
        self.admin("updateSubGroup", "-c", "DefaultCluster", "-g", name,
                   "-o", "true" if orderly else "false", "-r", str(retries))
        return name

    def stop(self):
        self.proxy.stop()
        self.stack.stop()


@pytest.fixture(scope="session")
def proxy_stack():
    s = ProxyStack("transactionCheckInterval=1000\ntransactionTimeOut=1000\nrecallMessageEnable=true\n")
    yield s
    s.stop()
