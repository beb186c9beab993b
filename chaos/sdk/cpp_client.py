"""The official Apache RocketMQ C++ SDK (PyPI rocketmq-client-python, which bundles
librocketmq.so) as a workload of the fault harness (mqchaos): sync sends through the name
server's routes without pause, and a clustering push consumer.

    python cpp_client.py NAMESRV TOPIC GROUP

Writes one JSON line per event to stdout, which mqchaos reads and time-stamps:
  {"ack": BODY, "ms": LATENCY}   a send answered SEND_OK
  {"fail": REASON}               a send that raised or was answered otherwise
  {"recv": BODY}                 a message the consumer received
Commands on stdin: "stop-sending" stops the sender; end of input shuts the client down.
"""
import sys
import threading
import time
import uuid

from rocketmq.client import ConsumeStatus, Message, Producer, PushConsumer, SendStatus

from events import emit


def send_loop(producer, topic, stop):
    tag = uuid.uuid4().hex[:8]
    n = 0
    while not stop.is_set():
        body = "c-%s-%d" % (tag, n)
        n += 1
        msg = Message(topic)
        msg.set_body(body)
        began = time.monotonic()
        try:
            result = producer.send_sync(msg)
        except Exception as e:  # every failure is a finding of the run, not of this script
            emit(fail=str(e)[:200])
            time.sleep(0.1)
            continue
        if result.status == SendStatus.OK:
            emit(ack=body, ms=int((time.monotonic() - began) * 1000))
        else:
            emit(fail="status %s" % result.status)
            time.sleep(0.1)


def on_message(msg):
    emit(recv=msg.body.decode(errors="replace"))
    return ConsumeStatus.CONSUME_SUCCESS


def main():
    namesrv, topic, group = sys.argv[1:4]
    producer = Producer(group + "_producer")
    producer.set_namesrv_addr(namesrv)
    producer.set_timeout(3000)
    producer.start()
    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message, "*")
    consumer.start()
    stop = threading.Event()
    sender = threading.Thread(target=send_loop, args=(producer, topic, stop), daemon=True)
    sender.start()
    emit(started=True)
    for line in sys.stdin:
        if line.strip() == "stop-sending":
            stop.set()
            sender.join()
            emit(stopped_sending=True)
    stop.set()
    sender.join(10)
    producer.shutdown()
    consumer.shutdown()


if __name__ == "__main__":
    main()
