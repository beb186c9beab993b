//! The classic pull consumer against an in-process name server and broker on loopback:
//! queues, pulls from offsets (filtered, blocking, out of range), stored progress and
//! namespaces.

use std::collections::BTreeMap;
use std::time::Instant;

use stellmq_client::body::ConsumeType;
use stellmq_client::{
    AdminClient, ClientError, ConsumerConfig, Message, MessageQueue, Producer, ProducerConfig,
    PullConsumer, PullStatus, TopicConfig,
};
use stellmq_testkit::{eventually, group_consumed_all, Stack};

async fn stack() -> Stack {
    let stack = Stack::start().await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    for topic in ["Pulled", "Blocking", "ns2%Spaced"] {
        admin
            .create_topic(stack.addr(), &TopicConfig::with_queues(topic, 4, 4, 6))
            .await
            .expect("topic");
    }
    stack.broker().register_now().await;
    admin.shutdown().await;
    stack
}

fn config(stack: &Stack, group: &str, namespace: Option<&str>) -> ConsumerConfig {
    ConsumerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: group.into(),
        instance_name: group.into(),
        namespace: namespace.map(str::to_owned),
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

/// Sends `n` messages tagged `a` and `b` in turn; returns the bodies sent to each queue id.
async fn send_tagged(p: &Producer, topic: &str, n: usize) -> BTreeMap<i32, Vec<String>> {
    let mut per_queue: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for i in 0..n {
        let tag = if i % 2 == 0 { "a" } else { "b" };
        let body = format!("{tag}-{i}");
        let sent = p
            .send(Message::new(topic, body.clone()).with_tags(tag))
            .await
            .expect("send");
        per_queue.entry(sent.queue.queue_id).or_default().push(body);
    }
    per_queue
}

/// Waits until the broker has indexed the `n` messages sent to `mq` (consume queues are
/// built just after the CommitLog write that answers the send).
async fn indexed(consumer: &PullConsumer, mq: &MessageQueue, n: usize) {
    let what = format!("{n} messages indexed in queue {}", mq.queue_id);
    eventually(&what, async || {
        consumer.max_offset(mq).await.ok() == Some(n as i64)
    })
    .await;
}

fn bodies(messages: &[stellmq_client::ReceivedMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_from_offsets_and_stores_the_progress() {
    let stack = stack().await;
    let p = producer(&stack, None).await;
    let sent = send_tagged(&p, "Pulled", 24).await;
    let consumer = PullConsumer::start(config(&stack, "puller", None))
        .await
        .expect("pull consumer");
    let queues = consumer
        .fetch_subscribe_message_queues("Pulled")
        .await
        .expect("queues");
    assert_eq!(
        queues.iter().map(|q| q.queue_id).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert!(queues
        .iter()
        .all(|q| q.topic == "Pulled" && q.broker_name == "broker-a"));
    for mq in &queues {
        let expected = sent.get(&mq.queue_id).cloned().unwrap_or_default();
        let n = expected.len() as i64;
        assert_eq!(
            consumer
                .fetch_consume_offset(mq, true)
                .await
                .expect("offset"),
            None
        );
        indexed(&consumer, mq, expected.len()).await;
        assert_eq!(consumer.min_offset(mq).await.expect("min"), 0);

        let all = consumer.pull(mq, "*", 0, 32).await.expect("pull");
        assert_eq!(all.status, PullStatus::Found, "queue {}", mq.queue_id);
        assert_eq!(bodies(&all.messages), expected);
        assert_eq!((all.next_begin_offset, all.max_offset), (n, n));
        assert!(all
            .messages
            .iter()
            .all(|m| m.queue == *mq && m.topic() == "Pulled"));

        let tagged = consumer.pull(mq, "a", 0, 32).await.expect("pull");
        let only_a: Vec<String> = expected
            .iter()
            .filter(|b| b.starts_with("a-"))
            .cloned()
            .collect();
        assert_eq!(bodies(&tagged.messages), only_a, "filtered by tag");

        let some = consumer.pull(mq, "*", 1, 2).await.expect("pull");
        assert_eq!(bodies(&some.messages), expected[1..3]);
        assert_eq!(some.next_begin_offset, 3);

        let none = consumer.pull(mq, "*", n, 32).await.expect("pull");
        assert_eq!(none.status, PullStatus::NoNewMsg);
        let beyond = consumer.pull(mq, "*", n + 100, 32).await.expect("pull");
        assert_eq!(beyond.status, PullStatus::OffsetIllegal);
        // As RocketMQ's store corrects an offset far past the end: to the min offset while
        // that is 0, else to the max.
        assert_eq!(beyond.next_begin_offset, 0);

        consumer.update_consume_offset(mq, all.next_begin_offset);
        assert_eq!(
            consumer
                .fetch_consume_offset(mq, false)
                .await
                .expect("offset"),
            Some(n)
        );
    }
    let mq = &queues[0];
    assert!(matches!(
        consumer.pull(mq, "*", -1, 32).await,
        Err(ClientError::Invalid(_))
    ));
    assert!(matches!(
        consumer.pull(mq, "*", 0, 0).await,
        Err(ClientError::Invalid(_))
    ));
    // The brokers know the group as one that pulls.
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    let connection = admin
        .consumer_connection(stack.addr(), "puller")
        .await
        .expect("connections");
    assert_eq!(connection.consume_type, ConsumeType::ConsumeActively);
    assert!(connection.subscription_table.contains_key("Pulled"));

    // Shutting down stores the offsets: the group has consumed everything.
    consumer.shutdown().await;
    assert!(group_consumed_all(stack.raw(), "puller", "Pulled").await);
    let again = PullConsumer::start(config(&stack, "puller", None))
        .await
        .expect("pull consumer");
    for mq in &queues {
        let n = sent.get(&mq.queue_id).map_or(0, Vec::len) as i64;
        assert_eq!(
            again.fetch_consume_offset(mq, true).await.expect("offset"),
            Some(n)
        );
    }
    again.shutdown().await;
    admin.shutdown().await;
    p.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_pull_waits_for_the_next_message() {
    let stack = stack().await;
    let consumer = PullConsumer::start(config(&stack, "blocker", None))
        .await
        .expect("pull consumer");
    let mq = MessageQueue {
        broker_name: "broker-a".into(),
        queue_id: 2,
        topic: "Blocking".into(),
    };
    let quick = consumer.pull(&mq, "*", 0, 32).await.expect("pull");
    assert_eq!(
        quick.status,
        PullStatus::NoNewMsg,
        "a plain pull answers at once"
    );
    let p = producer(&stack, None).await;
    let send_later = async {
        // Sent once the broker holds the pull: the answer can only come from the arrival.
        stellmq_testkit::eventually("the pull is held", async || {
            stack.broker().parked_pulls() == 1
        })
        .await;
        // The broker may answer the held pull before the producer reads its SEND_OK:
        // what matters is that the answer did not come before the message was sent.
        let sending_at = Instant::now();
        p.send_with_selector(Message::new("Blocking", "awaited"), |_| 2)
            .await
            .expect("send");
        sending_at
    };
    let (got, sent_at) = tokio::join!(
        async {
            let got = consumer.pull_block_if_not_found(&mq, "*", 0, 32).await;
            (got, Instant::now())
        },
        send_later
    );
    let (got, answered_at) = got;
    let got = got.expect("pull");
    assert!(
        answered_at >= sent_at,
        "the broker held the pull until the message came"
    );
    assert_eq!(got.status, PullStatus::Found);
    assert_eq!(bodies(&got.messages), ["awaited"]);
    p.shutdown().await;
    consumer.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_consumer_in_a_namespace_sees_its_own_names() {
    let stack = stack().await;
    let p = producer(&stack, Some("ns2")).await;
    let sent = send_tagged(&p, "Spaced", 8).await;
    let consumer = PullConsumer::start(config(&stack, "spaced", Some("ns2")))
        .await
        .expect("pull consumer");
    let queues = consumer
        .fetch_subscribe_message_queues("Spaced")
        .await
        .expect("queues");
    assert_eq!(queues.len(), 4);
    let mut got = 0;
    for mq in &queues {
        assert_eq!(mq.topic, "Spaced");
        indexed(&consumer, mq, sent.get(&mq.queue_id).map_or(0, Vec::len)).await;
        let pulled = consumer.pull(mq, "*", 0, 32).await.expect("pull");
        for m in &pulled.messages {
            assert_eq!(m.topic(), "Spaced");
            assert_eq!(m.record.topic, "ns2%Spaced");
            assert_eq!(m.queue, *mq);
        }
        got += pulled.messages.len();
        consumer.update_consume_offset(mq, pulled.next_begin_offset);
    }
    assert_eq!(got, 8);
    consumer.shutdown().await;
    // The progress is the namespaced group's, on the namespaced topic.
    assert!(group_consumed_all(stack.raw(), "ns2%spaced", "ns2%Spaced").await);
    p.shutdown().await;
    stack.stop().await;
}
