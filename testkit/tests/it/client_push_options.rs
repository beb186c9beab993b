//! Push consumer options against an in-process name server and broker on loopback: a
//! non-default allocation strategy, async listeners (concurrently and orderly) and topics
//! without the namespace prefix.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_client::{
    AdminClient, AllocateStrategy, ConsumeFromWhere, ConsumeResult, ConsumerConfig, Message,
    MessageQueue, Producer, ProducerConfig, PushConsumer, ReceivedMessage, TopicConfig,
};
use stellmq_testkit::{wait_for, Stack};

const TOPICS: [&str; 4] = ["Hashed", "AsyncC", "AsyncO", "ns1%NsTopic"];

async fn stack() -> Stack {
    let stack = Stack::start_with(|c| {
        c.store.message_delay_level = "1s 1s 1s 1s 1s 1s 1s 1s".into();
    })
    .await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    for topic in TOPICS {
        admin
            .create_topic(stack.addr(), &TopicConfig::with_queues(topic, 8, 8, 6))
            .await
            .expect("topic");
    }
    stack.broker().register_now().await;
    admin.shutdown().await;
    stack
}

fn config(stack: &Stack, group: &str, instance: &str) -> ConsumerConfig {
    ConsumerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: group.into(),
        instance_name: instance.into(),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    }
}

async fn producer(stack: &Stack, namespace: Option<&str>) -> Producer {
    Producer::start(ProducerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: "p".into(),
        namespace: namespace.map(str::to_owned),
        ..Default::default()
    })
    .await
    .expect("producer")
}

fn body(m: &ReceivedMessage) -> String {
    String::from_utf8_lossy(&m.body).into_owned()
}

/// The queues of `Hashed` a consumer owns (it also owns its group's retry queue).
fn owned(consumer: &PushConsumer) -> Vec<MessageQueue> {
    let mut queues = consumer.assigned_queues();
    queues.retain(|q| q.topic == "Hashed");
    queues
}

fn ids(queues: &[MessageQueue]) -> Vec<i32> {
    queues.iter().map(|q| q.queue_id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_hash_members_split_the_queues_as_rocketmq_does() {
    let stack = stack().await;
    let got: Arc<Mutex<Vec<(String, i32)>>> = Arc::default();
    let mut consumers = Vec::new();
    for name in ["c1", "c2"] {
        let seen = got.clone();
        let config = ConsumerConfig {
            allocate: AllocateStrategy::consistent_hash(),
            ..config(&stack, "hashed", name)
        };
        let consumer = PushConsumer::start_concurrently(config, &[("Hashed", "*")], move |ms| {
            for m in ms {
                seen.lock().push((body(m), m.queue.queue_id));
            }
            ConsumeResult::Success
        })
        .await
        .expect("consumer");
        consumers.push(consumer);
    }
    wait_for("the queues are split", Duration::from_secs(15), || {
        consumers.iter().map(|c| owned(c).len()).sum::<usize>() == 8
            && consumers.iter().all(|c| !owned(c).is_empty())
    })
    .await;
    let all: Vec<MessageQueue> = (0..8)
        .map(|queue_id| MessageQueue {
            broker_name: "broker-a".into(),
            queue_id,
            topic: "Hashed".into(),
        })
        .collect();
    let mut members: Vec<String> = consumers.iter().map(|c| c.client_id().to_owned()).collect();
    members.sort();
    for c in &consumers {
        let hashed = AllocateStrategy::consistent_hash()
            .allocate(c.client_id(), &all, &members)
            .expect("allocates");
        let averaged = AllocateStrategy::Averagely
            .allocate(c.client_id(), &all, &members)
            .expect("allocates");
        assert_eq!(owned(c), hashed, "{} owns its ring share", c.client_id());
        assert_ne!(hashed, averaged, "the split tells the strategies apart");
    }
    if members == ["127.0.0.1@c1", "127.0.0.1@c2"] {
        // What RocketMQ's AllocateMessageQueueConsistentHash gives these client ids.
        assert_eq!(ids(&owned(&consumers[0])), [2, 3, 4, 6, 7]);
        assert_eq!(ids(&owned(&consumers[1])), [0, 1, 5]);
    }
    let p = producer(&stack, None).await;
    let mut sent = BTreeMap::new();
    for i in 0..40 {
        let r = p
            .send(Message::new("Hashed", format!("h-{i}")))
            .await
            .expect("send");
        sent.insert(format!("h-{i}"), r.queue.queue_id);
    }
    wait_for("every message consumed", Duration::from_secs(20), || {
        got.lock().len() >= 40
    })
    .await;
    let received: BTreeMap<String, i32> = got.lock().iter().cloned().collect();
    assert_eq!(
        received, sent,
        "each message once, from the queue it was sent to"
    );
    p.shutdown().await;
    for c in consumers {
        c.shutdown().await;
    }
    stack.stop().await;
}

/// Counts listener calls running at once and remembers the most.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl InFlight {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_listener_consumes_concurrently_and_retries() {
    let stack = stack().await;
    let seen: Arc<Mutex<Vec<(String, i32)>>> = Arc::default();
    let in_flight: Arc<InFlight> = Arc::default();
    let (s, f) = (seen.clone(), in_flight.clone());
    let consumer = PushConsumer::start_concurrently_async(
        config(&stack, "async-c", "a1"),
        &[("AsyncC", "*")],
        move |messages: Vec<ReceivedMessage>| {
            let (seen, in_flight) = (s.clone(), f.clone());
            async move {
                in_flight.enter();
                tokio::time::sleep(Duration::from_millis(200)).await;
                in_flight.leave();
                let mut result = ConsumeResult::Success;
                for m in &messages {
                    seen.lock().push((body(m), m.reconsume_times()));
                    if body(m) == "fail-once" && m.reconsume_times() == 0 {
                        result = ConsumeResult::ReconsumeLater;
                    }
                }
                result
            }
        },
    )
    .await
    .expect("consumer");
    let p = producer(&stack, None).await;
    for i in 0..30 {
        p.send(Message::new("AsyncC", format!("m-{i}")))
            .await
            .expect("send");
    }
    p.send(Message::new("AsyncC", "fail-once"))
        .await
        .expect("send");
    wait_for("everything and the retry", Duration::from_secs(30), || {
        seen.lock().len() >= 32
    })
    .await;
    let bodies: BTreeSet<String> = seen.lock().iter().map(|(b, _)| b.clone()).collect();
    assert_eq!(bodies.len(), 31);
    let attempts: Vec<i32> = seen
        .lock()
        .iter()
        .filter(|(b, _)| b == "fail-once")
        .map(|(_, n)| *n)
        .collect();
    assert_eq!(attempts, [0, 1], "the refused message came back once");
    assert!(
        in_flight.most.load(Ordering::SeqCst) >= 2,
        "async listener calls overlap"
    );
    consumer.shutdown().await;
    p.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_orderly_listener_keeps_queue_order() {
    let stack = stack().await;
    let p = producer(&stack, None).await;
    for i in 0..40 {
        let key = i % 4;
        p.send_with_selector(Message::new("AsyncO", format!("{key}:{i}")), |qs| {
            key % qs.len()
        })
        .await
        .expect("send");
    }
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let per_queue: Arc<Mutex<BTreeMap<i32, Arc<InFlight>>>> = Arc::default();
    let (s, q) = (seen.clone(), per_queue.clone());
    let consumer = PushConsumer::start_orderly_async(
        config(&stack, "async-o", "o1"),
        &[("AsyncO", "*")],
        move |messages: Vec<ReceivedMessage>| {
            let seen = s.clone();
            let queue = messages.first().map_or(-1, |m| m.queue.queue_id);
            let in_flight = q.lock().entry(queue).or_default().clone();
            async move {
                in_flight.enter();
                // Uneven times: messages consumed side by side would finish out of order.
                let pause = messages
                    .iter()
                    .map(|m| m.queue_offset() % 3 * 15)
                    .sum::<i64>();
                tokio::time::sleep(Duration::from_millis(pause.unsigned_abs())).await;
                seen.lock().extend(messages.iter().map(body));
                in_flight.leave();
                ConsumeResult::Success
            }
        },
    )
    .await
    .expect("consumer");
    wait_for("all ordered messages", Duration::from_secs(30), || {
        seen.lock().len() >= 40
    })
    .await;
    let mut per_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for b in seen.lock().iter() {
        let (key, seq) = b.split_once(':').expect("key:seq");
        per_key
            .entry(key.to_owned())
            .or_default()
            .push(seq.parse().expect("seq"));
    }
    assert_eq!(per_key.len(), 4);
    for (key, seqs) in per_key {
        assert_eq!(seqs.len(), 10, "key {key}");
        assert!(seqs.is_sorted(), "key {key} out of order: {seqs:?}");
    }
    for (queue, in_flight) in per_queue.lock().iter() {
        assert_eq!(
            in_flight.most.load(Ordering::SeqCst),
            1,
            "one call at a time on queue {queue}"
        );
    }
    consumer.shutdown().await;
    p.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_in_a_namespace_sees_topics_without_it() {
    let stack = stack().await;
    let seen: Arc<Mutex<Vec<(String, String, i32)>>> = Arc::default();
    let s = seen.clone();
    let config = ConsumerConfig {
        namespace: Some("ns1".into()),
        ..config(&stack, "ns-group", "n1")
    };
    let consumer = PushConsumer::start_concurrently(config, &[("NsTopic", "*")], move |ms| {
        let mut result = ConsumeResult::Success;
        for m in ms {
            s.lock().push((
                m.topic().to_owned(),
                m.record.topic.clone(),
                m.reconsume_times(),
            ));
            if m.reconsume_times() == 0 {
                result = ConsumeResult::ReconsumeLater;
            }
        }
        result
    })
    .await
    .expect("consumer");
    let p = producer(&stack, Some("ns1")).await;
    p.send(Message::new("NsTopic", "hello"))
        .await
        .expect("send");
    wait_for("the message and its retry", Duration::from_secs(30), || {
        seen.lock().len() >= 2
    })
    .await;
    let seen = seen.lock().clone();
    assert_eq!(seen[0], ("NsTopic".into(), "ns1%NsTopic".into(), 0));
    assert_eq!(
        seen[1],
        ("NsTopic".into(), "%RETRY%ns1%ns-group".into(), 1),
        "a retry shows the original topic, without the namespace"
    );
    consumer.shutdown().await;
    p.shutdown().await;
    stack.stop().await;
}
