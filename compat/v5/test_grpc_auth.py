"""The official RocketMQ 5 Python client through mqproxy with ACL 2.0 on (RocketMQ 5.3's
authenticationEnabled / authorizationEnabled): the proxy authenticates each gRPC request
by its MQv2-HMAC-SHA1 signature against the cluster's users and authorizes it against the
user's policies; it signs its own calls to the brokers with its inner credentials."""
import os

import pytest
from rocketmq import ClientConfiguration, Credentials, FilterExpression, Producer, SimpleConsumer

from conftest import ProxyStack
from test_grpc_sdk import message, receive_all

ROOT = ("root", "r00t-pass")
APP = ("app", "app-pass")


@pytest.fixture(scope="module")
def auth_stack():
    s = ProxyStack(
        "authenticationEnabled=true\nauthorizationEnabled=true\n"
        'initAuthenticationUser={"username":"root","password":"r00t-pass"}\n',
        extra_proxy_conf={
            "authenticationEnabled": True,
            "authorizationEnabled": True,
            "innerClientAuthenticationCredentials": '{"accessKey":"root","secretKey":"r00t-pass"}',
        },
        admin_args=["--accessKey", ROOT[0], "--secretKey", ROOT[1]],
    )
    s.admin("createUser", "-c", "DefaultCluster", "-u", APP[0], "-p", APP[1])
    s.admin("createAcl", "-c", "DefaultCluster", "-s", "User:app", "-r", "Topic:T5_*",
            "-a", "Pub,Sub", "-d", "Allow")
    s.admin("createAcl", "-c", "DefaultCluster", "-s", "User:app", "-r", "Group:G5_*",
            "-a", "Sub", "-d", "Allow")
    yield s
    s.stop()


def config(s, credentials):
    return ClientConfiguration(s.endpoint, Credentials(*credentials))


def proxy_refusals(s):
    text = open(os.path.join(s.stack.work, "proxy.log")).read()
    return [line for line in text.splitlines() if "refused by ACL 2.0" in line]


def test_an_allowed_user_sends_receives_and_acks(auth_stack):
    topic, group = auth_stack.topic(), auth_stack.group()
    consumer = SimpleConsumer(config(auth_stack, APP), group, {topic: FilterExpression()},
                              await_duration=5)
    consumer.startup()
    p = Producer(config(auth_stack, APP), (topic,))
    p.startup()
    try:
        ids = [p.send(message(topic, b"signed-%d" % i)).message_id for i in range(3)]
        got = receive_all(consumer, 3)
        assert sorted(m.message_id for m in got) == sorted(ids)
        for m in got:
            consumer.ack(m)
    finally:
        p.shutdown()
        consumer.shutdown()


def send_refused(s, topic, credentials):
    p = Producer(config(s, credentials), (topic,))
    try:
        with pytest.raises(Exception) as refused:
            p.startup()
            p.send(message(topic, b"never"))
        return str(refused.value)
    finally:
        try:
            p.shutdown()
        except Exception:
            pass


def test_wrong_unknown_and_unallowed_callers_are_refused(auth_stack):
    topic = auth_stack.topic()
    send_refused(auth_stack, topic, (APP[0], "not-the-password"))
    send_refused(auth_stack, topic, ("stranger", "x"))
    other = "Other_%s" % topic
    auth_stack.admin("updateTopic", "-c", "DefaultCluster", "-t", other, "-a",
                     "+message.type=NORMAL")
    send_refused(auth_stack, other, APP)
    logged = "\n".join(proxy_refusals(auth_stack))
    assert "check signature failed." in logged, logged
    assert "User:stranger is not found." in logged, logged
    assert "User:app has no permission to access Topic:%s" % other in logged, logged
    assert APP[1] not in logged and ROOT[1] not in logged

    # Nothing refused reached the topics.
    group = auth_stack.group()
    consumer = SimpleConsumer(config(auth_stack, APP), group, {topic: FilterExpression()},
                              await_duration=3)
    consumer.startup()
    try:
        assert receive_all(consumer, 1, timeout=8) == []
    finally:
        consumer.shutdown()
