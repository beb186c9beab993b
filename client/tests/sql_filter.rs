//! SQL92 subscriptions from the Rust client: only messages whose properties match reach
//! the listener, and a broker without `enablePropertyFilter` refuses the start clearly.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use stellmq_client::{
    AdminClient, ConsumeResult, ConsumerConfig, ExpressionType, Message, Producer, ProducerConfig,
    PushConsumer,
};
use stellmq_remoting::protocol::body::TopicConfig;

fn sql_consumer(ns_addr: &str, group: &str) -> ConsumerConfig {
    ConsumerConfig {
        expression_type: ExpressionType::Sql92,
        ..common::consumer_config(ns_addr, group)
    }
}

async fn stack(
    dir: &std::path::Path,
    property_filter: bool,
) -> (
    stellmq_namesrv::NamesrvHandle,
    String,
    stellmq_broker::BrokerHandle,
) {
    let (ns, ns_addr) = common::start_namesrv(dir).await;
    let mut config = common::broker_config(&dir.join("store"), &ns_addr, "broker-s");
    config.broker.enable_property_filter = property_filter;
    let broker = stellmq_broker::start(config).await.expect("broker");
    AdminClient::new(&ns_addr)
        .expect("admin")
        .create_topic(
            broker.broker_addr(),
            &TopicConfig::with_queues("Sql", 2, 2, 6),
        )
        .await
        .expect("topic");
    broker.register_now().await;
    (ns, ns_addr, broker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql92_subscriptions_receive_only_matching_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ns, ns_addr, broker) = stack(dir.path(), true).await;
    let (consumer, seen) = common::recording_consumer(
        sql_consumer(&ns_addr, "sql-reader"),
        "Sql",
        "price > 50 AND region IN ('eu', 'us')",
    )
    .await;
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: ns_addr.clone(),
        group: "sql-writer".into(),
        ..Default::default()
    })
    .await
    .expect("producer");
    for (i, region) in (0..20).zip(["eu", "us", "apac", "eu"].iter().cycle()) {
        let msg = Message::new("Sql", format!("m{i}"))
            .with_property("price", (i * 5).to_string())
            .with_property("region", *region);
        producer.send(msg).await.expect("send");
    }
    // price > 50: i >= 11; region eu or us: i % 4 != 2.
    let expected: BTreeSet<String> = (11..20)
        .filter(|i| i % 4 != 2)
        .map(|i| format!("m{i}"))
        .collect();
    common::wait_for("matching messages", Duration::from_secs(20), || {
        *seen.lock() == expected
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(*seen.lock(), expected, "nothing else arrives");

    let refused = PushConsumer::start_concurrently(
        sql_consumer(&ns_addr, "sql-bad"),
        &[("Sql", "price >")],
        |_| ConsumeResult::Success,
    )
    .await;
    assert!(refused.is_err(), "a malformed selector fails the start");

    consumer.shutdown().await;
    producer.shutdown().await;
    broker.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_property_filtering_refuses_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ns, ns_addr, broker) = stack(dir.path(), false).await;
    let err = match PushConsumer::start_concurrently(
        sql_consumer(&ns_addr, "sql-off"),
        &[("Sql", "price > 1")],
        |_| ConsumeResult::Success,
    )
    .await
    {
        Ok(_) => panic!("started against a broker without enablePropertyFilter"),
        Err(e) => e,
    };
    assert!(
        err.to_string()
            .contains("does not support consumer to filter message by SQL92"),
        "{err}"
    );
    broker.shutdown().await;
    ns.shutdown().await;
}
