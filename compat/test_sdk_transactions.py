"""Transactional messages through the official C++ SDK's TransactionMQProducer: the local
transaction's answer commits or rolls back the half message, and a half left UNKNOWN is
resolved by the broker's check calling the producer's checker."""
import threading
import time

from rocketmq.client import SendStatus, TransactionMQProducer, TransactionStatus

from test_sdk_basics import consumer, message, producer, unique
from test_sdk_delivery import wait_for_route

# Halves older than 1 s are checked every 500 ms (RocketMQ: 6 s and 60 s).
FAST_CHECKS = "transactionTimeOut=1000\ntransactionCheckInterval=500"

LOCAL_ANSWERS = {
    "commit": TransactionStatus.COMMIT,
    "rollback": TransactionStatus.ROLLBACK,
    "unknown": TransactionStatus.UNKNOWN,
}


class Checker:
    """The producer's checker: commits what the local transaction left unknown."""

    def __init__(self):
        self.lock = threading.Lock()
        self.asked = []

    def __call__(self, msg):
        with self.lock:
            self.asked.append((msg.body, msg.keys, msg.topic))
        return TransactionStatus.COMMIT

    def asked_about(self):
        with self.lock:
            return list(self.asked)


def test_transactions_commit_roll_back_and_are_checked(make_stack):
    s = make_stack(FAST_CHECKS).as_dict()
    topic = unique("Tx")
    plain = producer(s)
    try:
        plain.send_sync(message(topic, "route"))  # creates the topic
    finally:
        plain.shutdown()
    wait_for_route(s, topic)

    checker = Checker()
    tx = TransactionMQProducer(unique("TxPG"), checker)
    tx.set_namesrv_addr(s["namesrv"])
    tx.start()
    c, collector = consumer(s, topic)
    try:
        for kind in ("commit", "rollback", "unknown"):
            for i in range(3):
                body = "%s-%d" % (kind, i)
                result = tx.send_message_in_transaction(
                    message(topic, body, keys=body), lambda msg, args, k=kind: LOCAL_ANSWERS[k])
                assert result.status == SendStatus.OK

        # route + 3 committed at once + 3 committed by the check.
        got = collector.wait_for(7, timeout=60)
        bodies = sorted(m.body for m in got)
        assert bodies == sorted([b"route"] + [("%s-%d" % (k, i)).encode()
                                              for k in ("commit", "unknown") for i in range(3)])
        asked = checker.asked_about()
        assert sorted({body for body, _, _ in asked}) == [("unknown-%d" % i).encode() for i in range(3)]
        assert all(t == topic.encode() or t == topic for _, _, t in asked)
        # Rolled back halves never appear, even after more check passes.
        time.sleep(2)
        assert not any(m.body.startswith(b"rollback") for m in collector.wait_for(0))
    finally:
        c.shutdown()
        tx.shutdown()
