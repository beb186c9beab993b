"""The official RocketMQ 5 Python client (PyPI rocketmq-python-client) as a workload of the
fault harness (mqchaos): it sends through mqproxy without pause and receives with a
SimpleConsumer, acknowledging what it receives.

    python grpc_client.py ENDPOINT TOPIC GROUP

Writes one JSON line per event to stdout, which mqchaos reads and time-stamps:
  {"ack": BODY, "ms": LATENCY}   a send answered with a receipt
  {"fail": REASON}               a send that raised
  {"recv": BODY}                 a message the consumer received (before its ack)
Commands on stdin: "stop-sending" stops the sender; end of input shuts the client down.
"""
import sys
import threading
import time
import uuid

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer

from events import emit


def send_loop(producer, topic, stop):
    tag = uuid.uuid4().hex[:8]
    n = 0
    while not stop.is_set():
        body = "g-%s-%d" % (tag, n)
        n += 1
        msg = Message()
        msg.topic = topic
        msg.body = body.encode()
        began = time.monotonic()
        try:
            producer.send(msg)
            emit(ack=body, ms=int((time.monotonic() - began) * 1000))
        except Exception as e:  # every failure is a finding of the run, not of this script
            emit(fail=str(e)[:200])
            time.sleep(0.1)


def receive_loop(consumer, stop):
    while not stop.is_set():
        try:
            messages = consumer.receive(32, 20)
        except Exception as e:
            emit(receive_error=str(e)[:200])
            time.sleep(0.5)
            continue
        emit(received=len(messages))
        for m in messages:
            emit(recv=m.body.decode(errors="replace"))
            try:
                consumer.ack(m)
            except Exception:
                pass  # comes back after its invisible time, received again


def main():
    endpoint, topic, group = sys.argv[1:4]
    config = ClientConfiguration(endpoint, Credentials())
    producer = Producer(config, (topic,))
    producer.startup()
    consumer = SimpleConsumer(config, group, {topic: FilterExpression()}, await_duration=5)
    consumer.startup()
    stop_sending, stop_receiving = threading.Event(), threading.Event()
    sender = threading.Thread(target=send_loop, args=(producer, topic, stop_sending), daemon=True)
    receiver = threading.Thread(target=receive_loop, args=(consumer, stop_receiving), daemon=True)
    sender.start()
    receiver.start()
    emit(started=True)
    for line in sys.stdin:
        if line.strip() == "stop-sending":
            stop_sending.set()
            sender.join()
            emit(stopped_sending=True)
    stop_sending.set()
    stop_receiving.set()
    sender.join(10)
    receiver.join(30)
    producer.shutdown()
    consumer.shutdown()


if __name__ == "__main__":
    main()
