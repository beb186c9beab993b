"""The official C++ SDK with session credentials against a broker with aclEnable=true and
RocketMQ's plain_acl.yml: the right key and secret send and consume; a wrong secret, an
unknown key, no credentials, a DENY topic and a white-list miss are refused and store
nothing."""
import os
import tempfile
import time

import pytest
from rocketmq.client import Producer, PushConsumer, SendStatus

from test_sdk_basics import Collector, message, unique

ACL = """
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms:
      - AclDenied=DENY
    groupPerms:
      - CG_denied=DENY
  - accessKey: Elsewhere1
    secretKey: elsewhere-secret
    whiteRemoteAddress: 192.168.77.*
    defaultTopicPerm: PUB|SUB
  - accessKey: rocketmq2
    secretKey: 87654321
    admin: true
"""

RIGHT = ("RocketMQ", "12345678")


@pytest.fixture
def acl_stack(make_stack):
    home = tempfile.mkdtemp(prefix="stellmq-acl-home-")
    os.makedirs(os.path.join(home, "conf"))
    with open(os.path.join(home, "conf", "plain_acl.yml"), "w") as f:
        f.write(ACL)
    return make_stack("aclEnable=true\nrocketmqHome=%s\n" % home).as_dict()


def producer(stack, credentials=None):
    p = Producer(unique("PG"))
    p.set_namesrv_addr(stack["namesrv"])
    if credentials:
        p.set_session_credentials(credentials[0], credentials[1], "ALIYUN")
    p.start()
    return p


def consumer(stack, topic, credentials, group=None):
    c = PushConsumer(group or unique("CG"))
    c.set_namesrv_addr(stack["namesrv"])
    c.set_session_credentials(credentials[0], credentials[1], "ALIYUN")
    collector = Collector()
    c.subscribe(topic, collector, "*")
    c.start()
    return c, collector


def broker_refusals(stack):
    """The reasons the broker logged for requests its ACL refused."""
    text = open(os.path.join(stack["work"], "broker-0.log")).read()
    return [line for line in text.splitlines() if "request refused by the ACL" in line]


def send_fails(stack, topic, credentials, body):
    p = producer(stack, credentials)
    try:
        with pytest.raises(Exception) as failure:
            p.send_sync(message(topic, body))
        return str(failure.value)
    finally:
        p.shutdown()


def test_right_credentials_send_and_consume_and_the_refused_store_nothing(acl_stack):
    topic = unique("AclTopic")
    p = producer(acl_stack, RIGHT)
    try:
        for i in range(5):
            assert p.send_sync(message(topic, "good-%d" % i)).status == SendStatus.OK
    finally:
        p.shutdown()

    refusals = {
        "Check signature failed for accessKey=RocketMQ": ("RocketMQ", "not-the-secret"),
        "No acl config for Stranger1": ("Stranger1", "12345678"),
        "No accessKey is configured": None,
        "Check signature failed for accessKey=Elsewhere1": ("Elsewhere1", "wrong-secret"),
    }
    for reason, credentials in refusals.items():
        send_fails(acl_stack, topic, credentials, "refused: " + reason)
        logged = broker_refusals(acl_stack)
        sends = [line for line in logged if " code=10 " in line or " code=310 " in line]
        assert any(reason in line for line in sends), (reason, logged)

    c, collector = consumer(acl_stack, topic, RIGHT)
    try:
        got = collector.wait_for(5)
        time.sleep(2)  # anything refused but stored would arrive now
        got = collector.wait_for(5)
        assert sorted(m.body for m in got) == sorted(("good-%d" % i).encode() for i in range(5))
    finally:
        c.shutdown()


def test_deny_topic_is_refused(acl_stack):
    send_fails(acl_stack, "AclDenied", RIGHT, "never")
    assert any("No permission for topic=AclDenied" in line for line in broker_refusals(acl_stack))


def test_denied_group_consumes_nothing(acl_stack):
    # One at a time: the SDK sends one heartbeat for every group of the process, and a
    # heartbeat naming a denied group is refused whole.
    topic = unique("AclGroup")
    p = producer(acl_stack, RIGHT)
    try:
        assert p.send_sync(message(topic, "for-the-allowed")).status == SendStatus.OK
    finally:
        p.shutdown()
    denied, denied_seen = consumer(acl_stack, topic, RIGHT, group="CG_denied")
    try:
        assert denied_seen.wait_for(1, timeout=6) == []
    finally:
        denied.shutdown()
    allowed, allowed_seen = consumer(acl_stack, topic, RIGHT)
    try:
        assert [m.body for m in allowed_seen.wait_for(1)] == [b"for-the-allowed"]
    finally:
        allowed.shutdown()
