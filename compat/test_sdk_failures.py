"""What the C++ SDK sees when something is wrong."""
import time

import pytest
from rocketmq.client import Producer, SendStatus

from test_sdk_admin import mqadmin
from test_sdk_basics import Collector, message, unique
from test_sdk_delivery import start_consumer


def make_producer(namesrv):
    p = Producer(unique("PG"), timeout=3000)
    p.set_namesrv_addr(namesrv)
    p.start()
    return p


def test_unknown_topic_with_auto_create_off_is_a_clear_error(make_stack):
    s = make_stack("autoCreateTopicEnable=false")
    p = make_producer(s.ns.addr)
    try:
        with pytest.raises(Exception) as failure:
            p.send_sync(message("NoSuchTopic", "x"))
        assert "NoSuchTopic" in str(failure.value) or "route" in str(failure.value).lower(), str(failure.value)
        # The broker keeps serving topics that exist.
        mqadmin(s.as_dict(), "updateTopic", "-t", "Exists", "-c", "DefaultCluster")
        deadline = time.time() + 30
        while True:
            try:
                assert p.send_sync(message("Exists", "ok")).status == SendStatus.OK
                break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        p.shutdown()


def test_broker_stopped_mid_stream_loses_nothing_acknowledged(make_stack):
    s = make_stack()
    topic = unique("Stop")
    p = make_producer(s.ns.addr)
    acked, failed = [], 0
    try:
        for i in range(40):
            if i == 20:
                s.stop_broker()
            try:
                r = p.send_sync(message(topic, "m-%d" % i))
                if r.status == SendStatus.OK:
                    acked.append(("m-%d" % i).encode())
            except Exception as e:
                failed += 1
                assert str(e), "the error says something"
    finally:
        p.shutdown()
    assert len(acked) >= 20 and failed > 0, "sends after the stop fail with an error (%d acked)" % len(acked)
    s.start_broker()
    c, collector = start_consumer(s.as_dict(), topic, unique("CG"))
    try:
        got = collector.wait_for(len(acked), timeout=60)
        assert set(acked) <= {m.body for m in got}, "every acknowledged message survives the restart"
    finally:
        c.shutdown()
