"""The official C++ SDK (a RocketMQ 4.x remoting client that sends no broker name) through
mqproxy's remoting port (`enableRemotingProxy`): its name server address is the proxy, the
routes it gets name the proxy, and it sends, consumes and is refused by ACL 2.0 through it."""
import json
import os
import pytest
from rocketmq.client import Producer, PushConsumer, SendStatus

from conftest import BIN, Server
from test_sdk_basics import Collector, message, unique

ROOT = ("root", "r00t-pass")
APP = ("app", "app-pass")


@pytest.fixture
def gateway(make_stack):
    stack = make_stack(
        "authenticationEnabled=true\nauthorizationEnabled=true\n"
        'initAuthenticationUser={"username":"root","password":"r00t-pass"}\n'
    )
    conf = os.path.join(stack.work, "rmq-proxy.json")
    with open(conf, "w") as f:
        json.dump({"rocketMQClusterName": "DefaultCluster", "grpcServerPort": 0,
                   "bindAddress": "127.0.0.1", "enableRemotingProxy": True,
                   "remotingListenPort": 0,
                   "innerClientAuthenticationCredentials":
                       '{"accessKey":"root","secretKey":"r00t-pass"}'}, f)
    proxy = Server("mqproxy", ["-n", stack.ns.addr, "--pc", conf],
                   os.path.join(stack.work, "proxy.log"), r"remoting address (\S+)")
    from test_sdk_auth import mqadmin
    d = stack.as_dict()
    mqadmin(d, "createUser", "-u", APP[0], "-p", APP[1])
    mqadmin(d, "createAcl", "-s", "User:app", "-r", "Topic:Gw*", "-a", "Pub,Sub,Get", "-d", "Allow")
    mqadmin(d, "createAcl", "-s", "User:app", "-r", "Group:*", "-a", "Sub,Get", "-d", "Allow")
    yield dict(d, proxy=proxy.addr, proxy_log=os.path.join(stack.work, "proxy.log"))
    proxy.stop()


def test_a_4x_client_sends_and_consumes_through_the_proxy(gateway):
    topic = unique("GwTopic")
    p = Producer(unique("PG"))
    p.set_namesrv_addr(gateway["proxy"])
    p.set_session_credentials(APP[0], APP[1], "ALIYUN")
    p.start()
    try:
        for i in range(5):
            assert p.send_sync(message(topic, "via-proxy-%d" % i)).status == SendStatus.OK
        with pytest.raises(Exception):
            p.send_sync(message(unique("Elsewhere"), "refused by the broker's ACL"))
    finally:
        p.shutdown()

    c = PushConsumer(unique("CG"))
    c.set_namesrv_addr(gateway["proxy"])
    c.set_session_credentials(APP[0], APP[1], "ALIYUN")
    collector = Collector()
    c.subscribe(topic, collector, "*")
    c.start()
    try:
        got = collector.wait_for(5)
        assert sorted(m.body for m in got) == sorted(("via-proxy-%d" % i).encode() for i in range(5))
    finally:
        c.shutdown()
    log = open(gateway["proxy_log"]).read()
    assert "relay port opened" in log, log


def test_wrong_and_missing_credentials_are_refused_through_the_proxy(gateway):
    topic = unique("GwRefused")
    for credentials in [(APP[0], "not-the-password"), None]:
        p = Producer(unique("PG"))
        p.set_namesrv_addr(gateway["proxy"])
        if credentials:
            p.set_session_credentials(credentials[0], credentials[1], "ALIYUN")
        p.start()
        try:
            with pytest.raises(Exception):
                p.send_sync(message(topic, "never"))
        finally:
            p.shutdown()
