"""The official RocketMQ 5 Python client (gRPC) through mqproxy: sends of every message type,
SimpleConsumer receive / ack / invisible time, FIFO order, transactions, PushConsumer."""
import threading
import time

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression,
                      Message, MessageListener, Producer, PushConsumer, SimpleConsumer)
from rocketmq.v5.producer import TransactionChecker
from rocketmq.grpc_protocol import TransactionResolution


def config(s):
    return ClientConfiguration(s.endpoint, Credentials())


def producer(s, topic, checker=None):
    p = Producer(config(s), (topic,), checker)
    p.startup()
    return p


def simple_consumer(s, group, topic, await_seconds=5):
    c = SimpleConsumer(config(s), group, {topic: FilterExpression()}, await_duration=await_seconds)
    c.startup()
    return c


def message(topic, body, tag=None, keys=(), group=None, deliver_at=None, props=None,
            priority=None):
    m = Message()
    m.topic = topic
    m.body = body
    if tag:
        m.tag = tag
    if keys:
        m.keys = keys[0] if len(keys) == 1 else keys[0]
    if group:
        m.message_group = group
    if deliver_at:
        m.delivery_timestamp = deliver_at
    if priority is not None:
        m.priority = priority
    for k, v in (props or {}).items():
        m.add_property(k, v)
    return m


def receive_all(consumer, count, invisible=15, timeout=40):
    got = []
    deadline = time.time() + timeout
    while len(got) < count and time.time() < deadline:
        got.extend(consumer.receive(32, invisible))
    return got


def test_send_then_simple_consumer_receives_and_acks(proxy_stack):
    topic, group = proxy_stack.topic(), proxy_stack.group()
    consumer = simple_consumer(proxy_stack, group, topic)
    p = producer(proxy_stack, topic)
    try:
        ids = [p.send(message(topic, b"body-%d" % i, tag="TagA", keys=["k%d" % i],
                              props={"color": "red"})).message_id for i in range(3)]
        got = receive_all(consumer, 3)
        assert sorted(m.message_id for m in got) == sorted(ids)
        for m in got:
            assert m.topic == topic
            assert m.tag == "TagA"
            assert m.body.startswith(b"body-")
            assert m.properties.get("color") == "red"
            assert m.delivery_attempt == 1
            consumer.ack(m)
        # Acked: nothing comes back.
        assert consumer.receive(32, 15) == []
    finally:
        p.shutdown()
        consumer.shutdown()


def test_unacked_message_comes_back_with_attempt_two(proxy_stack):
    topic, group = proxy_stack.topic(), proxy_stack.group()
    consumer = simple_consumer(proxy_stack, group, topic)
    p = producer(proxy_stack, topic)
    try:
        sent = p.send(message(topic, b"again")).message_id
        first = receive_all(consumer, 1, invisible=10)
        assert [m.message_id for m in first] == [sent]
        # Not acked: visible again after its 10 s invisible time.
        again = receive_all(consumer, 1, invisible=10, timeout=40)
        assert [m.message_id for m in again] == [sent]
        assert again[0].delivery_attempt == 2
        consumer.ack(again[0])
    finally:
        p.shutdown()
        consumer.shutdown()


def test_change_invisible_duration_brings_a_message_back_early(proxy_stack):
    topic, group = proxy_stack.topic(), proxy_stack.group()
    consumer = simple_consumer(proxy_stack, group, topic)
    p = producer(proxy_stack, topic)
    try:
        sent = p.send(message(topic, b"soon")).message_id
        first = receive_all(consumer, 1, invisible=60)
        assert [m.message_id for m in first] == [sent]
        consumer.change_invisible_duration(first[0], 1)
        started = time.time()
        again = receive_all(consumer, 1, invisible=30, timeout=20)
        assert [m.message_id for m in again] == [sent]
        assert time.time() - started < 20, "came back long before the first 60 s"
        consumer.ack(again[0])
    finally:
        p.shutdown()
        consumer.shutdown()


def test_fifo_messages_arrive_in_group_order(proxy_stack):
    topic, group = proxy_stack.topic("FIFO"), proxy_stack.group(orderly=True)
    consumer = simple_consumer(proxy_stack, group, topic)
    p = producer(proxy_stack, topic)
    try:
        for i in range(10):
            p.send(message(topic, b"%d" % i, group="order-1"))
        got = []
        deadline = time.time() + 60
        while len(got) < 10 and time.time() < deadline:
            batch = consumer.receive(32, 15)
            for m in batch:
                assert m.message_group == "order-1"
                got.append(int(m.body))
                consumer.ack(m)
        assert got == list(range(10))
    finally:
        p.shutdown()
        consumer.shutdown()


def test_normal_topic_refuses_fifo_messages(proxy_stack):
    topic = proxy_stack.topic("NORMAL")
    p = producer(proxy_stack, topic)
    try:
        try:
            p.send(message(topic, b"x", group="g"))
            raise AssertionError("a FIFO message was accepted by a NORMAL topic")
        except AssertionError:
            raise
        except Exception as e:  # the client raises its own exception type
            assert "message type" in str(e).lower() or "40014" in str(e), str(e)
    finally:
        p.shutdown()


def test_delay_message_is_delivered_at_its_time(proxy_stack):
    topic, group = proxy_stack.topic("DELAY"), proxy_stack.group()
    consumer = simple_consumer(proxy_stack, group, topic)
    p = producer(proxy_stack, topic)
    try:
        at = int(time.time()) + 3
        sent = p.send(message(topic, b"later", deliver_at=at)).message_id
        got = receive_all(consumer, 1, timeout=40)
        assert [m.message_id for m in got] == [sent]
        assert time.time() >= at - 0.5, "delivered before its time"
        consumer.ack(got[0])
    finally:
        p.shutdown()
        consumer.shutdown()


def test_a_recalled_delay_message_is_never_delivered(proxy_stack):
    topic, group = proxy_stack.topic("DELAY"), proxy_stack.group()
    consumer = simple_consumer(proxy_stack, group, topic)
    p = producer(proxy_stack, topic)
    try:
        at = int(time.time()) + 3
        kept = p.send(message(topic, b"kept", deliver_at=at))
        gone = p.send(message(topic, b"gone", deliver_at=at))
        assert kept.recall_handle and gone.recall_handle, "delay sends answer recall handles"
        assert p.recall_message(topic, gone.recall_handle) == gone.message_id
        try:
            p.recall_message(topic, gone.recall_handle)
            raise AssertionError("a second recall succeeded")
        except AssertionError:
            raise
        except Exception as e:
            assert "not waiting on this broker" in str(e), e
        got = receive_all(consumer, 1, timeout=40)
        assert [m.body for m in got] == [b"kept"]
        assert got[0].delivery_timestamp == at * 1000, "the delivery timestamp is kept"
        consumer.ack(got[0])
        # Both were due together: the recalled one would be here by now.
        assert consumer.receive(32, 15) == []
        for handle in (gone.recall_handle, kept.recall_handle):
            try:
                p.recall_message(topic, handle)
                raise AssertionError("a recall of a recalled or delivered message succeeded")
            except AssertionError:
                raise
            except Exception as e:
                # Past its time the handle itself is refused, as RocketMQ refuses it.
                assert "recall failed, timestamp invalid" in str(e), e
    finally:
        p.shutdown()
        consumer.shutdown()


def test_priority_messages_are_received_highest_first(proxy_stack):
    topic, group = proxy_stack.topic("PRIORITY", queues=8), proxy_stack.group()
    consumer = simple_consumer(proxy_stack, group, topic)
    p = producer(proxy_stack, topic)
    try:
        for priority in (2, 0, 7, 5, 12):
            p.send(message(topic, b"p%d" % priority, priority=priority))
        time.sleep(1)
        order = []
        deadline = time.time() + 40
        while len(order) < 5 and time.time() < deadline:
            for m in consumer.receive(1, 30):
                assert m.priority == int(m.body[1:]), (m.priority, m.body)
                order.append(m.body)
                consumer.ack(m)
        # 12 is above the topic's 8 queues: it counts as the highest, with 7.
        assert order[:2] in ([b"p7", b"p12"], [b"p12", b"p7"]), order
        assert order[2:] == [b"p5", b"p2", b"p0"], order
    finally:
        p.shutdown()
        consumer.shutdown()


def test_a_priority_message_is_refused_by_a_normal_topic(proxy_stack):
    topic = proxy_stack.topic()
    p = producer(proxy_stack, topic)
    try:
        try:
            p.send(message(topic, b"urgent", priority=3))
            raise AssertionError("a NORMAL topic took a priority message")
        except AssertionError:
            raise
        except Exception as e:
            assert "PRIORITY" in str(e), e
    finally:
        p.shutdown()


class Checker(TransactionChecker):
    def __init__(self):
        self.checked = []

    def check(self, message):
        self.checked.append(message.message_id)
        return TransactionResolution.COMMIT


def test_transactions_commit_rollback_and_check(proxy_stack):
    topic, group = proxy_stack.topic("TRANSACTION"), proxy_stack.group()
    consumer = simple_consumer(proxy_stack, group, topic)
    checker = Checker()
    p = producer(proxy_stack, topic, checker)
    try:
        t1 = p.begin_transaction()
        committed = p.send(message(topic, b"commit"), t1).message_id
        t1.commit()
        t2 = p.begin_transaction()
        p.send(message(topic, b"rollback"), t2)
        t2.rollback()
        # Neither committed nor rolled back: the broker asks, the checker commits.
        t3 = p.begin_transaction()
        checked = p.send(message(topic, b"checked"), t3).message_id
        got = receive_all(consumer, 2, timeout=60)
        assert sorted(m.message_id for m in got) == sorted([committed, checked])
        assert checked in checker.checked
        for m in got:
            consumer.ack(m)
    finally:
        p.shutdown()
        consumer.shutdown()


class Collect(MessageListener):
    def __init__(self):
        self.ids = set()
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.ids.add(message.message_id)
        return ConsumeResult.SUCCESS


def test_push_consumer_receives_everything(proxy_stack):
    topic, group = proxy_stack.topic(), proxy_stack.group()
    listener = Collect()
    consumer = PushConsumer(config(proxy_stack), group, listener, {topic: FilterExpression()})
    consumer.startup()
    p = producer(proxy_stack, topic)
    try:
        ids = {p.send(message(topic, b"push-%d" % i)).message_id for i in range(20)}
        deadline = time.time() + 60
        while time.time() < deadline and not ids <= listener.ids:
            time.sleep(0.2)
        assert ids <= listener.ids
    finally:
        p.shutdown()
        consumer.shutdown()
