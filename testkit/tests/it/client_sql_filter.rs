//! SQL92 subscriptions from the Rust client: only messages whose properties match reach
//! the listener, and a broker without `enablePropertyFilter` refuses the start clearly.

use std::collections::BTreeSet;
use std::time::Duration;

use stellmq_client::{
    AdminClient, ConsumeResult, ConsumerConfig, ExpressionType, Message, Producer, ProducerConfig,
    PushConsumer,
};
use stellmq_remoting::protocol::body::TopicConfig;
use stellmq_testkit::{consumer_config, recording_consumer, wait_consumed_all, wait_for, Stack};

fn sql_consumer(ns_addr: &str, group: &str) -> ConsumerConfig {
    ConsumerConfig {
        expression_type: ExpressionType::Sql92,
        ..consumer_config(ns_addr, group)
    }
}

/// A name server and broker-s (with or without `enablePropertyFilter`) serving topic `Sql`.
async fn stack(property_filter: bool) -> Stack {
    let stack = Stack::start_with(|c| {
        c.broker.broker_name = "broker-s".into();
        c.broker.enable_property_filter = property_filter;
    })
    .await;
    AdminClient::new(stack.ns_addr())
        .expect("admin")
        .create_topic(stack.addr(), &TopicConfig::with_queues("Sql", 2, 2, 6))
        .await
        .expect("topic");
    stack.broker().register_now().await;
    stack
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql92_subscriptions_receive_only_matching_messages() {
    let stack = stack(true).await;
    let ns_addr = stack.ns_addr().to_owned();
    let (consumer, seen) = recording_consumer(
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
    wait_for("matching messages", Duration::from_secs(20), || {
        *seen.lock() == expected
    })
    .await;
    // Everything the broker lets through has been consumed once the group's committed
    // offsets reach the end of both queues.
    wait_consumed_all(stack.raw(), "sql-reader", "Sql", Duration::from_secs(30)).await;
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
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_property_filtering_refuses_the_start() {
    let stack = stack(false).await;
    let ns_addr = stack.ns_addr().to_owned();
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
    stack.stop().await;
}
