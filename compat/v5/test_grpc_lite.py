"""RocketMQ 5.5 lite topics with the official Python 5 client through mqproxy: a lite
producer, a LiteSimpleConsumer and a LitePushConsumer that subscribe to lite topics of
one parent topic, receive them in order and ack them."""
import threading
import time
import uuid

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, LitePushConsumer,
                      LiteSimpleConsumer, Message, MessageListener, Producer)


def config(s):
    return ClientConfiguration(s.endpoint, Credentials())


def lite_stack(s):
    """A LITE parent topic and a group bound to it."""
    topic = s.topic("LITE")
    group = "GL_%s" % uuid.uuid4().hex[:8]
    s.admin("updateSubGroup", "-c", "DefaultCluster", "-g", group,
            "--attributes", "+lite.bind.topic=%s" % topic)
    return topic, group


def lite_message(topic, lite, body):
    m = Message()
    m.topic = topic
    m.body = body
    m.lite_topic = lite
    return m


def subscribe(consumer, *lites):
    """Subscribes to `lites`. The client 5.1.2's PARTIAL_ADD sends the name's characters as
    the set (it extends the request's list with the string): COMPLETE_ADD with its whole set
    (what it otherwise sends every 30 s) puts the real names in place at once."""
    for lite in lites:
        consumer.subscribe_lite(lite)
    consumer.subscribe_lite_all()


def receive_all(consumer, count, timeout=40):
    """Receives until `count` messages came, acking each as it comes (on a slow machine an
    unacked batch would otherwise come back after its invisible time while we wait)."""
    got = []
    deadline = time.time() + timeout
    while len(got) < count and time.time() < deadline:
        for m in consumer.receive(32, 20):
            consumer.ack(m)
            got.append(m)
    return got


def test_a_lite_simple_consumer_receives_only_its_lite_topics_in_order(proxy_stack):
    topic, group = lite_stack(proxy_stack)
    consumer = LiteSimpleConsumer(topic, config(proxy_stack), group, await_duration=5)
    consumer.startup()
    p = Producer(config(proxy_stack), (topic,))
    p.startup()
    try:
        subscribe(consumer, "chat-1", "chat-2")
        for i in range(3):
            p.send(lite_message(topic, "chat-1", b"one-%d" % i))
        p.send(lite_message(topic, "chat-2", b"two-0"))
        p.send(lite_message(topic, "chat-3", b"not-mine"))
        got = receive_all(consumer, 4)
        bodies = sorted(m.body for m in got)
        assert bodies == [b"one-0", b"one-1", b"one-2", b"two-0"], bodies
        one = [m.body for m in got if m.lite_topic == "chat-1"]
        assert one == [b"one-0", b"one-1", b"one-2"], "each lite topic in order: %s" % one
        # Unsubscribed: chat-1 no longer comes; chat-2 still does.
        consumer.unsubscribe_lite("chat-1")
        p.send(lite_message(topic, "chat-1", b"gone"))
        p.send(lite_message(topic, "chat-2", b"two-1"))
        later = receive_all(consumer, 1)
        assert [m.body for m in later] == [b"two-1"]
        assert consumer.receive(32, 20) == []
    finally:
        p.shutdown()
        consumer.shutdown()


def test_an_unacked_lite_message_comes_back_before_what_follows_it(proxy_stack):
    topic, group = lite_stack(proxy_stack)
    consumer = LiteSimpleConsumer(topic, config(proxy_stack), group, await_duration=5)
    consumer.startup()
    p = Producer(config(proxy_stack), (topic,))
    p.startup()
    try:
        subscribe(consumer, "session")
        p.send(lite_message(topic, "session", b"first"))
        first = []
        deadline = time.time() + 40
        while not first and time.time() < deadline:
            first = consumer.receive(32, 10)
        assert [m.body for m in first] == [b"first"]
        p.send(lite_message(topic, "session", b"second"))
        # Not acked: after its 10 s invisible time it comes again, ahead of "second".
        again = []
        deadline = time.time() + 40
        while not again and time.time() < deadline:
            again = consumer.receive(32, 20)
        assert again and again[0].body == b"first", [m.body for m in again]
        assert again[0].delivery_attempt == 2
        for m in again:
            consumer.ack(m)
    finally:
        p.shutdown()
        consumer.shutdown()


class Collect(MessageListener):
    def __init__(self):
        self.bodies = []
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.bodies.append((message.lite_topic, message.body))
        return ConsumeResult.SUCCESS


def test_a_lite_push_consumer_receives_its_lite_topics(proxy_stack):
    topic, group = lite_stack(proxy_stack)
    listener = Collect()
    consumer = LitePushConsumer(config(proxy_stack), group, topic, listener)
    consumer.startup()
    p = Producer(config(proxy_stack), (topic,))
    p.startup()
    try:
        subscribe(consumer, "agent-a")
        sent = [b"a-%d" % i for i in range(5)]
        for body in sent:
            p.send(lite_message(topic, "agent-a", body))
        p.send(lite_message(topic, "agent-b", b"b-0"))
        deadline = time.time() + 60
        while time.time() < deadline and len(listener.bodies) < len(sent):
            time.sleep(0.2)
        with listener.lock:
            got = list(listener.bodies)
        assert [b for (_, b) in got] == sent, got
        assert all(lite == "agent-a" for (lite, _) in got)
    finally:
        p.shutdown()
        consumer.shutdown()
