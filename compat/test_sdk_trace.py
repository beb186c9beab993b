"""Message traces written by another RocketMQ client read back with mqadmin queryMsgTraceById.

The C++ SDK of the suite has no trace support of its own, so it sends, as an ordinary
message to the trace topic, what Apache RocketMQ's Java client (4.9 and 5.x) writes there:
records in TraceDataEncoder's text form, keyed by the traced message's id. StellMQ must find
that message through the index and print the send and each consumer group's consumption.
"""
import time

from rocketmq.client import SendStatus

from conftest import BIN  # noqa: F401 (mqadmin below runs from BIN)
from test_sdk_admin import mqadmin
from test_sdk_basics import message, producer, unique

C, F = "\x01", "\x02"


def java_trace_body(msg_id, offset_id, topic, broker):
    now = int(time.time() * 1000)
    pub = C.join(["Pub", str(now), "DefaultRegion", "JavaProducerGroup", topic, msg_id, "TagJ",
                  "order-9", broker, "12", "3", "0", offset_id, "true"]) + F
    before = C.join(["SubBefore", str(now + 5), "DefaultRegion", "JavaConsumerGroup", "REQ1",
                     msg_id, "0", "order-9"]) + F
    # A 5.x SubAfter (time and group at the end) and a 4.x one of a second group (without).
    after = C.join(["SubAfter", "REQ1", msg_id, "7", "true", "order-9", "0", str(now + 12),
                    "JavaConsumerGroup"]) + F
    old_after = C.join(["SubAfter", "REQ2", msg_id, "9", "false", "order-9", "4"]) + F
    return pub + before + after + old_after


def test_java_written_traces_are_found_by_message_id(make_stack):
    s = make_stack("traceTopicEnable=true").as_dict()
    topic = unique("Traced")
    p = producer(s)
    try:
        sent = p.send_sync(message(topic, "traced by java", keys="order-9", tags="TagJ"))
        assert sent.status == SendStatus.OK
        trace = message("RMQ_SYS_TRACE_TOPIC",
                        java_trace_body(sent.msg_id, "7F00000100002A9F0000000000000000", topic, s["broker"]),
                        keys=sent.msg_id)
        assert p.send_sync(trace).status == SendStatus.OK
    finally:
        p.shutdown()
    deadline = time.time() + 15
    out = ""
    while time.time() < deadline and "JavaConsumerGroup" not in out:
        out = mqadmin(s, "queryMsgTraceById", "-i", sent.msg_id)
        time.sleep(0.2)
    rows = [l.split() for l in out.splitlines() if l and not l.startswith("#")]
    pub = [r for r in rows if r[0] == "Pub"]
    assert len(pub) == 1 and pub[0][1] == "JavaProducerGroup", out
    assert pub[0][-2:] == ["3ms", "success"], out
    subs = [r for r in rows if r[0] == "Sub"]
    assert any(r[1] == "JavaConsumerGroup" and r[-2:] == ["7ms", "success"] for r in subs), out
    # The 4.x record names no group: it is listed apart, with its outcome.
    assert any(r[-2:] == ["9ms", "failed"] for r in subs), out
