"""Messages the C++ SDK sent, found with StellMQ's mqadmin."""
import os
import subprocess
import time

from rocketmq.client import SendStatus

from conftest import BIN
from test_sdk_basics import message, producer, unique


def mqadmin(stack, *args):
    out = subprocess.run([os.path.join(BIN, "mqadmin")] + list(args) + ["-n", stack["namesrv"]],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, "mqadmin %s failed: %s %s" % (args, out.stdout, out.stderr)
    return out.stdout


def test_sdk_messages_found_by_key_and_id(stack):
    topic = unique("Query")
    p = producer(stack)
    try:
        result = p.send_sync(message(topic, "find me", keys="order-42", tags="TagQ"))
        assert result.status == SendStatus.OK
    finally:
        p.shutdown()
    # The C++ SDK reports the client-generated id (UNIQ_KEY) as msg_id.
    msg_id = result.msg_id
    deadline = time.time() + 10
    by_key = ""
    while time.time() < deadline and msg_id not in by_key:
        by_key = mqadmin(stack, "queryMsgByKey", "-t", topic, "-k", "order-42")
        time.sleep(0.2)
    assert msg_id in by_key
    by_id = mqadmin(stack, "queryMsgById", "-i", msg_id, "-t", topic)
    assert "find me" in by_id and "[TagQ]" in by_id and "[order-42]" in by_id
    by_unique = mqadmin(stack, "queryMsgByUniqueKey", "-i", msg_id, "-t", topic)
    assert "find me" in by_unique
    # The broker's own offset id works too.
    offset_id = [l.split()[-1] for l in by_id.splitlines() if l.startswith("OffsetID:")][0]
    assert "find me" in mqadmin(stack, "queryMsgById", "-i", offset_id)
