"""Delivery semantics seen through the official C++ SDK: async send, consumer groups
(clustering split, broadcasting), ordered messages, delay levels, RECONSUME_LATER."""
import ctypes
import threading
import time
from collections import defaultdict

from rocketmq.client import ConsumeStatus, Message, MessageModel, Producer, PushConsumer, SendStatus
from rocketmq.ffi import _CMQException, _CSendResult, dll

from test_sdk_basics import Collector, message, producer, unique

# C API: void (*CSendSuccessCallback)(CSendResult), void (*CSendExceptionCallback)(CMQException).
SEND_OK_CB = ctypes.CFUNCTYPE(None, _CSendResult)
SEND_ERR_CB = ctypes.CFUNCTYPE(None, _CMQException)
dll.SendMessageAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, SEND_OK_CB, SEND_ERR_CB]
dll.SendMessageAsync.restype = ctypes.c_int


def wait_for_route(stack, topic, timeout=15):
    """An auto-created topic reaches the name server asynchronously (as in RocketMQ);
    consumers started before that cannot find it until their next route refresh (30 s)."""
    import os
    import subprocess
    from conftest import BIN
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = subprocess.run([os.path.join(BIN, "mqadmin"), "topicRoute", "-t", topic, "-n", stack["namesrv"]],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError("no route for %s" % topic)


def start_consumer(stack, topic, group, expression="*", orderly=False, model=MessageModel.CLUSTERING, callback=None):
    c = PushConsumer(group, orderly=orderly, message_model=model)
    c.set_namesrv_addr(stack["namesrv"])
    # Two consumers of one group in one process need their own client instances.
    c.set_instance_name(unique("instance"))
    collector = callback or Collector()
    c.subscribe(topic, collector, expression)
    c.start()
    return c, collector


def test_async_send(stack):
    topic = unique("Async")
    p = producer(stack)
    done = threading.Event()
    results, errors = [], []

    def ok(result):
        results.append((result.sendStatus, result.msgId.decode()))
        if len(results) + len(errors) == 20:
            done.set()

    def failed(exc):
        errors.append(exc.msg.decode(errors="replace"))
        done.set()

    ok_cb, err_cb = SEND_OK_CB(ok), SEND_ERR_CB(failed)
    try:
        p.send_sync(message(topic, "create"))
        messages = [message(topic, "async-%d" % i) for i in range(20)]
        for m in messages:
            assert dll.SendMessageAsync(p._handle, m._handle, ok_cb, err_cb) == 0
        assert done.wait(30), "async callbacks arrived"
        assert errors == []
        assert len(results) == 20 and all(status == 0 for status, _ in results)
        assert len({msg_id for _, msg_id in results}) == 20
    finally:
        p.shutdown()
    c, collector = start_consumer(stack, topic, unique("CG"))
    try:
        got = collector.wait_for(21)
        assert {m.body for m in got} >= {("async-%d" % i).encode() for i in range(20)}
    finally:
        c.shutdown()


def test_clustering_consumers_split_the_queues(stack):
    topic, group = unique("Cluster"), unique("CG")
    p = producer(stack)
    p.send_sync(message(topic, "create"))
    wait_for_route(stack, topic)
    c1, col1 = start_consumer(stack, topic, group)
    c2, col2 = start_consumer(stack, topic, group)
    try:
        time.sleep(3)  # let both see each other and rebalance
        for i in range(40):
            assert p.send_sync(message(topic, "m-%d" % i)).status == SendStatus.OK
        deadline = time.time() + 30
        while time.time() < deadline:
            bodies = [m.body for m in col1.wait_for(0) + col2.wait_for(0)]
            if len([b for b in bodies if b.startswith(b"m-")]) >= 40:
                break
            time.sleep(0.2)
        time.sleep(1)
        first = [m.body for m in col1.wait_for(0) if m.body.startswith(b"m-")]
        second = [m.body for m in col2.wait_for(0) if m.body.startswith(b"m-")]
        assert sorted(first + second) == sorted(("m-%d" % i).encode() for i in range(40)), "each message exactly once"
        assert first and second, "both consumers got a share of the queues"
    finally:
        c1.shutdown()
        c2.shutdown()
        p.shutdown()


def test_broadcasting_delivers_everything_to_each_consumer(stack):
    topic, group = unique("Broadcast"), unique("CG")
    p = producer(stack)
    p.send_sync(message(topic, "create"))
    wait_for_route(stack, topic)
    c1, col1 = start_consumer(stack, topic, group, model=MessageModel.BROADCASTING)
    c2, col2 = start_consumer(stack, topic, group, model=MessageModel.BROADCASTING)
    try:
        time.sleep(2)
        for i in range(10):
            assert p.send_sync(message(topic, "b-%d" % i)).status == SendStatus.OK
        want = {("b-%d" % i).encode() for i in range(10)}
        for col in (col1, col2):
            deadline = time.time() + 30
            while time.time() < deadline and not want <= {m.body for m in col.wait_for(0)}:
                time.sleep(0.2)
            assert want <= {m.body for m in col.wait_for(0)}
    finally:
        c1.shutdown()
        c2.shutdown()
        p.shutdown()


def test_orderly_send_and_consume_keep_per_key_order(stack):
    topic, group = unique("Ordered"), unique("CG")
    p = Producer(unique("PG"), orderly=True)
    p.set_namesrv_addr(stack["namesrv"])
    p.start()
    try:
        for i in range(30):
            key = "order-%d" % (i % 3)
            r = p.send_orderly_with_sharding_key(message(topic, "%s:%d" % (key, i)), key)
            assert r.status == SendStatus.OK
    finally:
        p.shutdown()
    c, collector = start_consumer(stack, topic, group, orderly=True)
    try:
        got = collector.wait_for(30)
        assert len(got) == 30
        per_key = defaultdict(list)
        for m in got:
            key, seq = m.body.decode().split(":")
            per_key[key].append(int(seq))
        for key, seqs in per_key.items():
            assert seqs == sorted(seqs), "%s out of order: %s" % (key, seqs)
    finally:
        c.shutdown()


def test_delay_level_message_arrives_no_earlier_than_its_level(stack):
    topic = unique("Delay")
    p = producer(stack)
    try:
        p.send_sync(message(topic, "create"))
        wait_for_route(stack, topic)
        c, collector = start_consumer(stack, topic, unique("CG"))
        try:
            collector.wait_for(1)
            m = message(topic, "delayed")
            m.set_delay_time_level(3)  # 3 s in the test broker's messageDelayLevel
            sent = time.time()
            assert p.send_sync(m).status == SendStatus.OK
            deadline = time.time() + 30
            while time.time() < deadline and b"delayed" not in [x.body for x in collector.wait_for(0)]:
                time.sleep(0.05)
            arrived = time.time()
            assert b"delayed" in [x.body for x in collector.wait_for(0)]
            assert arrived - sent >= 2.9, "arrived after %.2f s" % (arrived - sent)
        finally:
            c.shutdown()
    finally:
        p.shutdown()


def test_reconsume_later_redelivers_with_growing_count(stack):
    topic = unique("Retry")
    p = producer(stack)
    seen = []
    lock = threading.Lock()

    def callback(msg):
        with lock:
            seen.append((msg.body, msg.reconsume_times))
            attempts = len([s for s in seen if s[0] == b"flaky"])
        if msg.body == b"flaky" and attempts < 3:
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    try:
        p.send_sync(message(topic, "flaky"))
        wait_for_route(stack, topic)
        c, _ = start_consumer(stack, topic, unique("CG"), callback=callback)
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                with lock:
                    if len([s for s in seen if s[0] == b"flaky"]) >= 3:
                        break
                time.sleep(0.1)
            with lock:
                counts = [n for body, n in seen if body == b"flaky"]
            assert len(counts) >= 3, "redelivered: %s" % counts
            assert counts[:3] == sorted(counts[:3]) and counts[2] > counts[0], "reconsume count grows: %s" % counts
        finally:
            c.shutdown()
    finally:
        p.shutdown()
