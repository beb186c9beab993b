//! The transactional producer against an in-process name server and broker: local answers
//! commit or roll back at once, and an unknown one is settled by the broker's check.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use stellmq_client::{AdminClient, Message, ProducerConfig, TransactionProducer, TransactionState};
use stellmq_remoting::protocol::body::TopicConfig;

fn local_answer(body: &str) -> TransactionState {
    match body.split('-').next() {
        Some("commit") => TransactionState::Commit,
        Some("rollback") => TransactionState::Rollback,
        _ => TransactionState::Unknown,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_commit_roll_back_and_are_settled_by_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ns, ns_addr) = common::start_namesrv(dir.path()).await;
    let mut config = common::broker_config(&dir.path().join("store"), &ns_addr, "broker-t");
    config.broker.transaction_time_out = 300;
    config.broker.transaction_check_interval = 200;
    let broker = stellmq_broker::start(config).await.expect("broker");
    AdminClient::new(&ns_addr)
        .expect("admin")
        .create_topic(
            broker.broker_addr(),
            &TopicConfig::with_queues("TxRust", 2, 2, 6),
        )
        .await
        .expect("topic");
    broker.register_now().await;

    let asked: common::Bodies = Arc::default();
    let checker_log = asked.clone();
    let producer = TransactionProducer::start(
        ProducerConfig {
            namesrv_addr: ns_addr.clone(),
            group: "tx-rust".into(),
            ..Default::default()
        },
        move |msg| {
            checker_log
                .lock()
                .insert(String::from_utf8_lossy(&msg.body).into_owned());
            TransactionState::Commit
        },
    )
    .await
    .expect("producer");
    let (consumer, seen) = common::recording_consumer(
        common::consumer_config(&ns_addr, "tx-reader"),
        "TxRust",
        "*",
    )
    .await;

    for kind in ["commit", "rollback", "unknown"] {
        for i in 0..3 {
            let body = format!("{kind}-{i}");
            let result = producer
                .send_in_transaction(Message::new("TxRust", body.clone()), |msg, _| {
                    local_answer(&String::from_utf8_lossy(&msg.body))
                })
                .await
                .expect("half sent");
            assert_eq!(result.local_state, local_answer(&body));
        }
    }
    let expected: BTreeSet<String> = ["commit", "unknown"]
        .iter()
        .flat_map(|k| (0..3).map(move |i| format!("{k}-{i}")))
        .collect();
    common::wait_for("committed messages", Duration::from_secs(30), || {
        *seen.lock() == expected
    })
    .await;
    let unknown: BTreeSet<String> = (0..3).map(|i| format!("unknown-{i}")).collect();
    assert_eq!(*asked.lock(), unknown, "only the unknown ones were checked");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(*seen.lock(), expected, "rolled back messages never appear");

    consumer.shutdown().await;
    producer.shutdown().await;
    broker.shutdown().await;
    ns.shutdown().await;
}
