//! The producer against in-process name server and brokers on loopback.

use std::time::Duration;

use stellmq_client::{AdminClient, Message, Producer, ProducerConfig, SendStatus};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_testkit::{eventually_within, NameServer, TestBroker};

async fn broker(ns: &str, name: &str) -> TestBroker {
    TestBroker::start(ns, |c| {
        c.broker.broker_name = name.to_owned();
        c.store.message_delay_level = "1s 1s".into();
    })
    .await
}

fn config(ns: &str) -> ProducerConfig {
    ProducerConfig {
        namesrv_addr: ns.to_owned(),
        group: "test_producer".into(),
        ..Default::default()
    }
}

/// Every message of a topic on one broker, read back through pulls.
async fn read_all(admin: &AdminClient, addr: &str, topic: &str) -> Vec<MessageRecord> {
    let mut out = Vec::new();
    for queue_id in 0..8 {
        let mut offset = 0;
        loop {
            let Ok((code, next, records)) =
                admin.pull(addr, "reader", topic, queue_id, offset, 0).await
            else {
                break;
            };
            if code != 0 {
                break;
            }
            out.extend(records);
            offset = next;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_send_mode_stores_messages() {
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let b = broker(&ns_addr, "broker-a").await;
    let producer = Producer::start(config(&ns_addr)).await.expect("producer");

    let r = producer
        .send(
            Message::new("ProdTopic", "sync")
                .with_keys(["k1"])
                .with_tags("TagA"),
        )
        .await
        .expect("sync send");
    assert_eq!(r.status, SendStatus::SendOk);
    assert_eq!(r.msg_id.len(), 32, "UNIQ_KEY");
    assert_eq!(r.offset_msg_id.len(), 32);

    let pending: Vec<_> = (0..10)
        .map(|i| producer.send_async(Message::new("ProdTopic", format!("async-{i}"))))
        .collect();
    for p in pending {
        assert_eq!(p.await.expect("async send").status, SendStatus::SendOk);
    }
    producer
        .send_oneway(Message::new("ProdTopic", "oneway"))
        .await
        .expect("oneway");
    let batch: Vec<_> = (0..5)
        .map(|i| Message::new("ProdTopic", format!("batch-{i}")).with_keys([format!("bk{i}")]))
        .collect();
    let r = producer.send_batch(batch).await.expect("batch");
    assert_eq!(r.msg_id.split(',').count(), 5);
    // Ordered: one key always lands on one queue.
    let mut queues = std::collections::BTreeSet::new();
    for i in 0..6 {
        let r = producer
            .send_with_selector(Message::new("ProdTopic", format!("ordered-{i}")), |qs| {
                "order-7".len() % qs.len()
            })
            .await
            .expect("ordered send");
        queues.insert(r.queue.queue_id);
    }
    assert_eq!(queues.len(), 1);
    // Big bodies are compressed by the producer and read back whole.
    let big = "x".repeat(10_000);
    producer
        .send(Message::new("ProdTopic", big.clone()))
        .await
        .expect("big send");
    let r = producer
        .send(Message::new("ProdTopic", "later").with_delay_level(1))
        .await
        .expect("delayed send");
    assert_eq!(r.status, SendStatus::SendOk);
    let r = producer
        .send(Message::new("ProdTopic", "timed").with_delay_time_ms(300))
        .await
        .expect("timer send");
    assert_eq!(r.status, SendStatus::SendOk);

    // Bad input is refused before it reaches the network.
    assert!(producer
        .send(Message::new("bad topic!", "x"))
        .await
        .is_err());
    assert!(producer.send(Message::new("ProdTopic", "")).await.is_err());

    let admin = AdminClient::new(&ns_addr).expect("admin");
    // The delayed message (level 1, 1 s) and the timer (300 ms) arrive after their delays.
    eventually_within(
        "the delayed messages arrive",
        Duration::from_secs(10),
        async || {
            let records = read_all(&admin, b.broker_addr(), "ProdTopic").await;
            ["later", "timed"]
                .iter()
                .all(|want| records.iter().any(|m| &m.body[..] == want.as_bytes()))
        },
    )
    .await;
    b.store().wait_dispatched(Duration::from_secs(10));
    let records = read_all(&admin, b.broker_addr(), "ProdTopic").await;
    let bodies: Vec<String> = records
        .iter()
        .map(|m| String::from_utf8_lossy(&m.uncompressed_body(1 << 20).expect("body")).into_owned())
        .collect();
    for want in [
        "sync",
        "oneway",
        "async-9",
        "batch-4",
        "ordered-5",
        "later",
        "timed",
    ] {
        assert!(
            bodies.iter().any(|b| b == want),
            "{want} missing from {bodies:?}"
        );
    }
    assert!(bodies.contains(&big), "compressed body comes back whole");
    let sync = records
        .iter()
        .find(|m| &m.body[..] == b"sync")
        .expect("sync message");
    assert_eq!(sync.properties.get("TAGS"), Some("TagA"));
    assert_eq!(sync.properties.get("KEYS"), Some("k1"));
    producer.shutdown().await;
    b.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_fail_over_to_another_broker() {
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let a = broker(&ns_addr, "broker-a").await;
    let b = broker(&ns_addr, "broker-b").await;
    let admin = AdminClient::new(&ns_addr).expect("admin");
    for addr in [a.broker_addr(), b.broker_addr()] {
        admin
            .create_topic(
                addr,
                &stellmq_remoting::protocol::body::TopicConfig::with_queues("Failover", 2, 2, 6),
            )
            .await
            .expect("topic");
    }
    a.register_now().await;
    b.register_now().await;
    let producer = Producer::start(config(&ns_addr)).await.expect("producer");
    for i in 0..4 {
        producer
            .send(Message::new("Failover", format!("before-{i}")))
            .await
            .expect("send");
    }
    b.shutdown().await;
    // The route still lists broker-b until the name server notices; sends must fail over.
    for i in 0..10 {
        let r = producer
            .send(Message::new("Failover", format!("after-{i}")))
            .await
            .expect("fails over");
        assert_eq!(r.queue.broker_name, "broker-a");
    }
    producer.shutdown().await;
    a.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test]
async fn no_name_server_is_a_clear_error() {
    let err = Producer::start(ProducerConfig {
        namesrv_addr: "127.0.0.1:1".into(),
        ..Default::default()
    })
    .await
    .err()
    .expect("fails");
    assert!(err.to_string().contains("name server"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_prefix_topics() {
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let b = broker(&ns_addr, "broker-a").await;
    let producer = Producer::start(ProducerConfig {
        namespace: Some("team1".into()),
        ..config(&ns_addr)
    })
    .await
    .expect("producer");
    producer
        .send(Message::new("Orders", "namespaced"))
        .await
        .expect("send");
    b.store().wait_dispatched(Duration::from_secs(10));
    let admin = AdminClient::new(&ns_addr).expect("admin");
    let records = read_all(&admin, b.broker_addr(), "team1%Orders").await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].topic, "team1%Orders");
    producer.shutdown().await;
    b.shutdown().await;
    ns.shutdown().await;
}

/// The producer's sends in either header encoding (ROCKETMQ's binary one, the default, and
/// JSON, which RocketMQ's Java and C++ clients send): the same message is stored either way,
/// and a refusal reads the same, the broker answering in the request's encoding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_header_encodings_store_the_same_message() {
    use stellmq_remoting::protocol::SerializeType;
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let b = TestBroker::start(&ns_addr, |c| {
        c.broker.broker_name = "broker-codec".into();
        c.store.max_message_size = 2048;
    })
    .await;
    let admin = AdminClient::new(&ns_addr).expect("admin");
    for (encoding, topic) in [
        (SerializeType::RocketMq, "CodecBinary"),
        (SerializeType::Json, "CodecJson"),
    ] {
        let producer = Producer::start(ProducerConfig {
            serialize_type: encoding,
            compress_msg_body_over_howmuch: usize::MAX,
            ..config(&ns_addr)
        })
        .await
        .expect("producer");
        let msg = Message::new(topic, "körper \"quoted\" \\ \n")
            .with_keys(["k1", "ключ"])
            .with_tags("Tag\"A")
            .with_property("note", "a=b;c d");
        let sent = producer.send(msg).await.expect("send");
        assert_eq!(sent.status, SendStatus::SendOk, "{encoding:?}");
        assert_eq!(sent.queue.topic, topic);
        let refused = producer
            .send(Message::new(topic, "x".repeat(4096)))
            .await
            .expect_err("a body over the broker's maxMessageSize");
        assert_eq!(refused.remote_code(), Some(13), "{encoding:?}: {refused}");
        assert!(
            refused
                .to_string()
                .contains("body size over max value, MAX: 2048"),
            "{refused}"
        );
        b.store().wait_dispatched(Duration::from_secs(10));
        let records = read_all(&admin, b.broker_addr(), topic).await;
        assert_eq!(records.len(), 1, "{encoding:?}");
        let stored = &records[0];
        assert_eq!(&stored.body[..], "körper \"quoted\" \\ \n".as_bytes());
        assert_eq!(stored.properties.get("TAGS"), Some("Tag\"A"));
        assert_eq!(stored.properties.get("KEYS"), Some("k1 ключ"));
        assert_eq!(stored.properties.get("note"), Some("a=b;c d"));
        assert_eq!(
            stored.properties.get("UNIQ_KEY"),
            Some(sent.msg_id.as_str())
        );
        assert_eq!(stored.head.queue_id, sent.queue.queue_id);
        assert_eq!(stored.head.queue_offset, sent.queue_offset);
        producer.shutdown().await;
    }
    b.shutdown().await;
    ns.shutdown().await;
}
