"""The official Apache RocketMQ C++ SDK (PyPI rocketmq-client-python 0.5.0rc2, which bundles
librocketmq.so) against StellMQ: the client no one here wrote."""
import threading
import time
import uuid

from rocketmq.client import ConsumeStatus, Message, Producer, PushConsumer, SendStatus


def unique(prefix):
    return "%s_%s" % (prefix, uuid.uuid4().hex[:8])


def producer(stack):
    p = Producer(unique("PG"))
    p.set_namesrv_addr(stack["namesrv"])
    p.start()
    return p


def message(topic, body, keys=None, tags=None):
    m = Message(topic)
    m.set_body(body)
    if keys:
        m.set_keys(keys)
    if tags:
        m.set_tags(tags)
    return m


class Seen:
    def __init__(self, id, topic, tags, keys, body, reconsume_times):
        self.id, self.topic, self.tags, self.keys, self.body = id, topic, tags, keys, body
        self.reconsume_times = reconsume_times


class Collector:
    def __init__(self):
        self.lock = threading.Lock()
        self.messages = []

    def __call__(self, msg):
        # The SDK frees the message after the callback returns: copy what the tests need.
        seen = Seen(msg.id, msg.topic, msg.tags, msg.keys, msg.body, msg.reconsume_times)
        with self.lock:
            self.messages.append(seen)
        return ConsumeStatus.CONSUME_SUCCESS

    def wait_for(self, n, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if len(self.messages) >= n:
                    return list(self.messages)
            time.sleep(0.1)
        with self.lock:
            return list(self.messages)


def consumer(stack, topic, expression="*"):
    c = PushConsumer(unique("CG"))
    c.set_namesrv_addr(stack["namesrv"])
    collector = Collector()
    c.subscribe(topic, collector, expression)
    c.start()
    return c, collector


def test_sync_send_then_push_consume(stack):
    topic = unique("Sync")
    p = producer(stack)
    try:
        for i in range(10):
            result = p.send_sync(message(topic, "body-%d" % i, keys="key-%d" % i))
            assert result.status == SendStatus.OK
            assert len(result.msg_id) == 32
    finally:
        p.shutdown()
    c, collector = consumer(stack, topic)
    try:
        got = collector.wait_for(10)
        assert sorted(m.body for m in got) == sorted(("body-%d" % i).encode() for i in range(10))
        assert {m.keys for m in got} == {("key-%d" % i).encode() for i in range(10)}
    finally:
        c.shutdown()


def test_oneway_send_is_delivered(stack):
    topic = unique("Oneway")
    p = producer(stack)
    try:
        p.send_sync(message(topic, "create"))  # the first send creates the topic
        for i in range(5):
            p.send_oneway(message(topic, "oneway-%d" % i))
    finally:
        p.shutdown()
    c, collector = consumer(stack, topic)
    try:
        got = collector.wait_for(6)
        assert {m.body for m in got} >= {("oneway-%d" % i).encode() for i in range(5)}
    finally:
        c.shutdown()


def test_tag_filtering(stack):
    topic = unique("Tags")
    p = producer(stack)
    try:
        for tag in ["TagA", "TagB", "TagC", "TagA"]:
            assert p.send_sync(message(topic, "msg-" + tag, tags=tag)).status == SendStatus.OK
    finally:
        p.shutdown()
    c, collector = consumer(stack, topic, "TagA || TagB")
    try:
        got = collector.wait_for(3)
        time.sleep(1)  # anything unwanted would arrive now
        got = collector.wait_for(3)
        assert sorted(m.tags for m in got) == [b"TagA", b"TagA", b"TagB"]
    finally:
        c.shutdown()
