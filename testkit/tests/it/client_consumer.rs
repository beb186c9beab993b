//! Push and lite pull consumers against in-process name server and broker on loopback.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_client::{
    AdminClient, ConsumeResult, ConsumerConfig, LitePullConsumer, Message, Producer,
    ProducerConfig, PushConsumer,
};
use stellmq_remoting::protocol::body::{ConsumeFromWhere, MessageModel, TopicConfig};
use stellmq_testkit::{eventually_some, wait_consumed_all, wait_for, Stack};

/// A name server and broker-a with the consumers' topics, and a directory for the offsets
/// of broadcasting consumers.
struct Env {
    stack: Stack,
    offsets: tempfile::TempDir,
}

impl Env {
    fn ns_addr(&self) -> String {
        self.stack.ns_addr().to_owned()
    }

    async fn stop(self) {
        self.stack.stop().await;
    }
}

async fn env() -> Env {
    let stack = Stack::start_with(|c| {
        c.store.message_delay_level = "1s 1s 1s 1s 1s 1s 1s 1s".into();
    })
    .await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    for topic in [
        "Split", "Bcast", "Ordered", "Fail", "Resume", "Lite", "Shared", "Reset",
    ] {
        admin
            .create_topic(stack.addr(), &TopicConfig::with_queues(topic, 8, 8, 6))
            .await
            .expect("topic");
    }
    stack.broker().register_now().await;
    Env {
        stack,
        offsets: tempfile::tempdir().expect("tempdir"),
    }
}

fn consumer_config(env: &Env, group: &str, instance: &str) -> ConsumerConfig {
    ConsumerConfig {
        namesrv_addr: env.ns_addr(),
        group: group.into(),
        instance_name: instance.into(),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        offset_store_dir: env.offsets.path().to_owned(),
        ..Default::default()
    }
}

async fn producer(env: &Env) -> Producer {
    Producer::start(ProducerConfig {
        namesrv_addr: env.ns_addr(),
        group: "p".into(),
        ..Default::default()
    })
    .await
    .expect("producer")
}

type Seen = Arc<Mutex<Vec<(String, String)>>>;

fn recorder(
    seen: &Seen,
    who: &str,
) -> impl Fn(&[stellmq_client::ReceivedMessage]) -> ConsumeResult + Send + Sync + 'static {
    let (seen, who) = (seen.clone(), who.to_owned());
    move |msgs| {
        for m in msgs {
            seen.lock()
                .push((who.clone(), String::from_utf8_lossy(&m.body).into_owned()));
        }
        ConsumeResult::Success
    }
}

fn bodies(seen: &Seen) -> BTreeSet<String> {
    seen.lock().iter().map(|(_, b)| b.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clustering_consumers_split_queues_and_take_over() {
    let env = env().await;
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let mut consumers = Vec::new();
    for name in ["c1", "c2", "c3"] {
        consumers.push(
            PushConsumer::start_concurrently(
                consumer_config(&env, "split", name),
                &[("Split", "*")],
                recorder(&seen, name),
            )
            .await
            .expect("consumer"),
        );
    }
    wait_for("queues split three ways", Duration::from_secs(15), || {
        let counts: Vec<usize> = consumers
            .iter()
            .map(|c| {
                c.assigned_queues()
                    .iter()
                    .filter(|q| q.topic == "Split")
                    .count()
            })
            .collect();
        counts.iter().sum::<usize>() == 8 && counts.iter().all(|n| *n >= 2)
    })
    .await;
    let mut owned = BTreeSet::new();
    for c in &consumers {
        for q in c
            .assigned_queues()
            .into_iter()
            .filter(|q| q.topic == "Split")
        {
            assert!(owned.insert(q.queue_id), "queue {} owned twice", q.queue_id);
        }
    }
    let p = producer(&env).await;
    for i in 0..120 {
        p.send(Message::new("Split", format!("a-{i}")))
            .await
            .expect("send");
    }
    wait_for("first batch", Duration::from_secs(20), || {
        bodies(&seen).len() >= 120
    })
    .await;
    let per_consumer: BTreeMap<String, usize> =
        seen.lock().iter().fold(BTreeMap::new(), |mut m, (who, _)| {
            *m.entry(who.clone()).or_default() += 1;
            m
        });
    assert_eq!(
        per_consumer.len(),
        3,
        "every consumer got a share: {per_consumer:?}"
    );
    assert_eq!(seen.lock().len(), 120, "exactly once while nothing changes");

    // One leaves; the others take its queues and nothing is lost.
    consumers.pop().expect("c3").shutdown().await;
    wait_for("queues taken over", Duration::from_secs(15), || {
        consumers
            .iter()
            .map(|c| {
                c.assigned_queues()
                    .iter()
                    .filter(|q| q.topic == "Split")
                    .count()
            })
            .sum::<usize>()
            == 8
    })
    .await;
    for i in 0..120 {
        p.send(Message::new("Split", format!("b-{i}")))
            .await
            .expect("send");
    }
    wait_for("second batch", Duration::from_secs(20), || {
        bodies(&seen).len() >= 240
    })
    .await;
    let all = bodies(&seen);
    for i in 0..120 {
        assert!(all.contains(&format!("a-{i}")) && all.contains(&format!("b-{i}")));
    }
    p.shutdown().await;
    for c in consumers {
        c.shutdown().await;
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcasting_delivers_everything_to_each_instance() {
    let env = env().await;
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let mut consumers = Vec::new();
    for name in ["b1", "b2"] {
        let config = ConsumerConfig {
            message_model: MessageModel::Broadcasting,
            ..consumer_config(&env, "bcast", name)
        };
        consumers.push(
            PushConsumer::start_concurrently(config, &[("Bcast", "*")], recorder(&seen, name))
                .await
                .expect("consumer"),
        );
    }
    wait_for("both own every queue", Duration::from_secs(10), || {
        consumers.iter().all(|c| c.assigned_queues().len() == 8)
    })
    .await;
    let p = producer(&env).await;
    for i in 0..40 {
        p.send(Message::new("Bcast", format!("m-{i}")))
            .await
            .expect("send");
    }
    wait_for("each got everything", Duration::from_secs(20), || {
        seen.lock().len() >= 80
    })
    .await;
    for who in ["b1", "b2"] {
        let got: BTreeSet<String> = seen
            .lock()
            .iter()
            .filter(|(w, _)| w == who)
            .map(|(_, b)| b.clone())
            .collect();
        assert_eq!(got.len(), 40, "{who}");
    }
    p.shutdown().await;
    for c in consumers {
        c.shutdown().await;
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orderly_consumption_keeps_queue_order() {
    let env = env().await;
    let p = producer(&env).await;
    for i in 0..60 {
        let key = i % 4;
        p.send_with_selector(Message::new("Ordered", format!("{key}:{i}")), |qs| {
            key % qs.len()
        })
        .await
        .expect("send");
    }
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let c = PushConsumer::start_orderly(
        consumer_config(&env, "ordered", "o1"),
        &[("Ordered", "*")],
        recorder(&seen, "o1"),
    )
    .await
    .expect("consumer");
    wait_for("all ordered messages", Duration::from_secs(20), || {
        seen.lock().len() >= 60
    })
    .await;
    let mut per_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (_, body) in seen.lock().iter() {
        let (key, seq) = body.split_once(':').expect("key:seq");
        per_key
            .entry(key.to_owned())
            .or_default()
            .push(seq.parse().expect("seq"));
    }
    for (key, seqs) in per_key {
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        assert_eq!(seqs, sorted, "key {key} out of order");
    }
    p.shutdown().await;
    c.shutdown().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_messages_are_retried_then_dead_lettered() {
    let env = env().await;
    let attempts: Arc<Mutex<Vec<i32>>> = Arc::new(Mutex::new(Vec::new()));
    let seen = attempts.clone();
    let config = ConsumerConfig {
        max_reconsume_times: 2,
        ..consumer_config(&env, "failing", "f1")
    };
    let c = PushConsumer::start_concurrently(config, &[("Fail", "*")], move |msgs| {
        for m in msgs {
            seen.lock().push(m.reconsume_times());
            assert_eq!(m.topic(), "Fail", "retries show the original topic");
        }
        ConsumeResult::ReconsumeLater
    })
    .await
    .expect("consumer");
    let p = producer(&env).await;
    p.send(Message::new("Fail", "doomed")).await.expect("send");
    wait_for(
        "the original and two retries",
        Duration::from_secs(30),
        || attempts.lock().len() >= 3,
    )
    .await;
    assert_eq!(&attempts.lock()[..3], &[0, 1, 2]);
    // After the last retry fails the message is in the group's dead letter queue.
    let admin = AdminClient::new(env.stack.ns_addr()).expect("admin");
    let dead = eventually_some(
        "the message reaches the DLQ",
        Duration::from_secs(20),
        async || {
            let dead = admin
                .pull(env.stack.addr(), "x", "%DLQ%failing", 0, 0, 0)
                .await
                .map(|r| r.2)
                .unwrap_or_default();
            (!dead.is_empty()).then_some(dead)
        },
    )
    .await;
    assert_eq!(&dead[0].body[..], b"doomed");
    p.shutdown().await;
    c.shutdown().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_resume_after_a_consumer_restart() {
    let env = env().await;
    let p = producer(&env).await;
    for i in 0..30 {
        p.send(Message::new("Resume", format!("first-{i}")))
            .await
            .expect("send");
    }
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let c = PushConsumer::start_concurrently(
        consumer_config(&env, "resume", "r1"),
        &[("Resume", "*")],
        recorder(&seen, "r1"),
    )
    .await
    .expect("consumer");
    let twin = PushConsumer::start_concurrently(
        consumer_config(&env, "resume", "r1"),
        &[("Resume", "*")],
        recorder(&seen, "twin"),
    )
    .await;
    assert!(
        matches!(&twin, Err(e) if e.to_string().contains("instanceName")),
        "a second consumer of the group with the same client id is refused"
    );
    wait_for("first batch", Duration::from_secs(20), || {
        seen.lock().len() >= 30
    })
    .await;
    c.shutdown().await;
    for i in 0..30 {
        p.send(Message::new("Resume", format!("second-{i}")))
            .await
            .expect("send");
    }
    let again: Seen = Arc::new(Mutex::new(Vec::new()));
    let c = PushConsumer::start_concurrently(
        consumer_config(&env, "resume", "r2"),
        &[("Resume", "*")],
        recorder(&again, "r2"),
    )
    .await
    .expect("consumer");
    wait_for("second batch", Duration::from_secs(20), || {
        again.lock().len() >= 30
    })
    .await;
    // Everything the group will ever get is consumed once its committed offsets reach the
    // end of every queue: a message resumed too early would have been delivered by then.
    wait_consumed_all(env.stack.raw(), "resume", "Resume", Duration::from_secs(30)).await;
    assert!(
        bodies(&again).iter().all(|b| b.starts_with("second-")),
        "resumed where the group stopped: {:?}",
        bodies(&again)
    );
    p.shutdown().await;
    c.shutdown().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lite_pull_polls_commits_and_resumes() {
    let env = env().await;
    let p = producer(&env).await;
    for i in 0..20 {
        p.send(
            Message::new("Lite", format!("l-{i}")).with_tags(if i % 2 == 0 {
                "even"
            } else {
                "odd"
            }),
        )
        .await
        .expect("send");
    }
    let lite = LitePullConsumer::subscribe(
        consumer_config(&env, "lite", "l1"),
        &[("Lite", "even")],
        true,
    )
    .await
    .expect("consumer");
    let mut got = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < 10 && Instant::now() < deadline {
        for m in lite.poll(32, Duration::from_millis(500)).await {
            assert_eq!(m.tags(), Some("even"));
            got.insert(String::from_utf8_lossy(&m.body).into_owned());
        }
    }
    assert_eq!(got.len(), 10);
    lite.shutdown().await;
    for i in 20..24 {
        p.send(Message::new("Lite", format!("l-{i}")).with_tags("even"))
            .await
            .expect("send");
    }
    let lite = LitePullConsumer::subscribe(
        consumer_config(&env, "lite", "l2"),
        &[("Lite", "even")],
        true,
    )
    .await
    .expect("consumer");
    let mut later = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while later.len() < 4 && Instant::now() < deadline {
        for m in lite.poll(32, Duration::from_millis(500)).await {
            later.insert(String::from_utf8_lossy(&m.body).into_owned());
        }
    }
    assert_eq!(
        later,
        (20..24).map(|i| format!("l-{i}")).collect::<BTreeSet<_>>(),
        "resumed after the committed offsets"
    );
    lite.shutdown().await;
    p.shutdown().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lite_pull_assign_reads_chosen_queues() {
    let env = env().await;
    let p = producer(&env).await;
    let mut expected = BTreeSet::new();
    for i in 0..16 {
        let r = p
            .send(Message::new("Lite", format!("a-{i}")))
            .await
            .expect("send");
        if r.queue.queue_id == 3 {
            expected.insert(format!("a-{i}"));
        }
    }
    let mq = stellmq_remoting::protocol::body::MessageQueue {
        broker_name: "broker-a".into(),
        queue_id: 3,
        topic: "Lite".into(),
    };
    let lite = LitePullConsumer::assign(
        consumer_config(&env, "assigned", "a1"),
        std::slice::from_ref(&mq),
        false,
    )
    .await
    .expect("consumer");
    assert_eq!(lite.assigned_queues(), vec![mq.clone()]);
    let mut got = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < expected.len() && Instant::now() < deadline {
        for m in lite.poll(32, Duration::from_millis(300)).await {
            assert_eq!(m.queue.queue_id, 3);
            got.insert(String::from_utf8_lossy(&m.body).into_owned());
        }
    }
    assert_eq!(got, expected);
    // Seeking back replays the queue.
    lite.commit().await;
    lite.seek(&mq, 0).expect("seek");
    let replay = lite.poll(32, Duration::from_secs(5)).await;
    assert!(!replay.is_empty(), "seek replays from offset 0");
    lite.shutdown().await;
    p.shutdown().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_and_consumer_of_one_instance_share_a_connection() {
    let env = env().await;
    let shared = Producer::start(ProducerConfig {
        namesrv_addr: env.ns_addr(),
        group: "sharedP".into(),
        instance_name: "shared".into(),
        ..Default::default()
    })
    .await
    .expect("producer");
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let c = PushConsumer::start_concurrently(
        consumer_config(&env, "sharedC", "shared"),
        &[("Shared", "*")],
        recorder(&seen, "c"),
    )
    .await
    .expect("consumer");
    assert_eq!(shared.client_id(), c.client_id());
    shared
        .send(Message::new("Shared", "before"))
        .await
        .expect("send");
    let admin = AdminClient::new(env.stack.ns_addr()).expect("admin");
    let broker = env.stack.addr().to_owned();
    // The producer's first heartbeat goes out about 2 s after it starts.
    let producers = eventually_some(
        "the producer registers",
        Duration::from_secs(10),
        async || {
            let producers = admin
                .producer_connection(&broker, "sharedP")
                .await
                .map(|c| c.connection_set)
                .unwrap_or_default();
            (!producers.is_empty()).then_some(producers)
        },
    )
    .await;
    let consumers = admin
        .consumer_connection(&broker, "sharedC")
        .await
        .expect("consumer connections")
        .connection_set;
    assert_eq!(producers.len(), 1, "producer registered: {producers:?}");
    assert_eq!(consumers.len(), 1, "consumer registered: {consumers:?}");
    assert_eq!(
        producers[0].client_addr, consumers[0].client_addr,
        "one connection carries both groups"
    );
    // The producer leaving must not close the connection the consumer still uses.
    shared.shutdown().await;
    let other = producer(&env).await;
    other
        .send(Message::new("Shared", "after"))
        .await
        .expect("send");
    wait_for("both messages", Duration::from_secs(20), || {
        bodies(&seen).contains("after")
    })
    .await;
    assert!(bodies(&seen).contains("before"));
    other.shutdown().await;
    c.shutdown().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_consumer_obeys_an_offset_reset() {
    let env = env().await;
    let p = producer(&env).await;
    let before = stellmq_remoting::protocol::message::now_ms() - 1_000;
    for i in 0..20 {
        p.send(Message::new("Reset", format!("m-{i}")))
            .await
            .expect("send");
    }
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let c = PushConsumer::start_concurrently(
        consumer_config(&env, "resetter", "x1"),
        &[("Reset", "*")],
        recorder(&seen, "x1"),
    )
    .await
    .expect("consumer");
    wait_for("everything consumed once", Duration::from_secs(20), || {
        seen.lock().len() >= 20
    })
    .await;
    wait_consumed_all(
        env.stack.raw(),
        "resetter",
        "Reset",
        Duration::from_secs(30),
    )
    .await;
    // mqadmin resetOffsetByTime: the broker moves the offsets and tells the running consumer.
    let admin = AdminClient::new(&env.ns_addr()).expect("admin");
    admin
        .reset_offset_by_time(env.stack.addr(), "resetter", "Reset", before, true)
        .await
        .expect("reset");
    // The consumer starts over from the reset offsets instead of overwriting them with its
    // own (it would commit them within 5 s).
    wait_for("everything consumed twice", Duration::from_secs(30), || {
        seen.lock().len() >= 40
    })
    .await;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (_, body) in seen.lock().iter() {
        *counts.entry(body.clone()).or_default() += 1;
    }
    assert_eq!(counts.len(), 20);
    assert!(counts.values().all(|n| *n >= 2), "{counts:?}");
    wait_consumed_all(
        env.stack.raw(),
        "resetter",
        "Reset",
        Duration::from_secs(30),
    )
    .await;
    admin.shutdown().await;
    p.shutdown().await;
    c.shutdown().await;
    env.stop().await;
}
