"""The official C++ SDK with session credentials against a broker with RocketMQ 5.3's
ACL 2.0 (authenticationEnabled, authorizationEnabled): users and policies made with
mqadmin createUser/createAcl; the right user sends and consumes; a wrong password, an
unknown user, no credentials, a disabled user and a topic outside the user's policies are
refused and store nothing."""
import os
import subprocess
import time

import pytest
from rocketmq.client import Producer, PushConsumer, SendStatus

from conftest import BIN
from test_sdk_basics import Collector, message, unique

ROOT = ("root", "r00t-pass")
APP = ("app", "app-pass")


@pytest.fixture
def auth_stack(make_stack):
    stack = make_stack(
        "authenticationEnabled=true\nauthorizationEnabled=true\n"
        'initAuthenticationUser={"username":"root","password":"r00t-pass"}\n'
    ).as_dict()
    mqadmin(stack, "createUser", "-u", APP[0], "-p", APP[1])
    mqadmin(stack, "createAcl", "-s", "User:app", "-r", "Topic:Auth*", "-a", "Pub,Sub,Get",
            "-d", "Allow")
    mqadmin(stack, "createAcl", "-s", "User:app", "-r", "Group:*", "-a", "Sub,Get", "-d", "Allow")
    return stack


def mqadmin(stack, *args):
    command = [os.path.join(BIN, "mqadmin"), *args, "-b", stack["broker"], "-n", stack["namesrv"],
               "--accessKey", ROOT[0], "--secretKey", ROOT[1]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def producer(stack, credentials=None):
    p = Producer(unique("PG"))
    p.set_namesrv_addr(stack["namesrv"])
    if credentials:
        p.set_session_credentials(credentials[0], credentials[1], "ALIYUN")
    p.start()
    return p


def refusals(stack):
    text = open(os.path.join(stack["work"], "broker-0.log")).read()
    return [line for line in text.splitlines() if "request refused by ACL 2.0" in line]


def send_fails(stack, topic, credentials, body):
    p = producer(stack, credentials)
    try:
        with pytest.raises(Exception):
            p.send_sync(message(topic, body))
    finally:
        p.shutdown()


def test_a_user_with_policies_sends_and_consumes_and_the_refused_store_nothing(auth_stack):
    topic = unique("AuthTopic")
    p = producer(auth_stack, APP)
    try:
        for i in range(5):
            assert p.send_sync(message(topic, "good-%d" % i)).status == SendStatus.OK
    finally:
        p.shutdown()

    cases = {
        "check signature failed.": (APP[0], "not-the-password"),
        "User:stranger is not found.": ("stranger", "x"),
        "username cannot be null.": None,
    }
    for reason, credentials in cases.items():
        send_fails(auth_stack, topic, credentials, "refused: " + reason)
        assert any(reason in line for line in refusals(auth_stack)), (reason, refusals(auth_stack))
    send_fails(auth_stack, unique("Elsewhere"), APP, "not in the policies")
    assert any("User:app has no permission to access Topic:Elsewhere" in line
               for line in refusals(auth_stack)), refusals(auth_stack)

    c = PushConsumer(unique("CG"))
    c.set_namesrv_addr(auth_stack["namesrv"])
    c.set_session_credentials(APP[0], APP[1], "ALIYUN")
    collector = Collector()
    c.subscribe(topic, collector, "*")
    c.start()
    try:
        collector.wait_for(5)
        time.sleep(2)  # anything refused but stored would arrive now
        got = collector.wait_for(5)
        assert sorted(m.body for m in got) == sorted(("good-%d" % i).encode() for i in range(5))
    finally:
        c.shutdown()


def test_a_disabled_user_is_refused_at_once(auth_stack):
    topic = unique("AuthDisabled")
    p = producer(auth_stack, APP)
    try:
        assert p.send_sync(message(topic, "before")).status == SendStatus.OK
        mqadmin(auth_stack, "updateUser", "-u", APP[0], "-s", "disable")
        with pytest.raises(Exception):
            p.send_sync(message(topic, "after"))
    finally:
        p.shutdown()
    assert any("User:app is disabled." in line for line in refusals(auth_stack))
    listed = mqadmin(auth_stack, "getUser", "-u", APP[0])
    assert "disable" in listed.splitlines()[1], listed
