//! The transactional producer against an in-process name server and broker: local answers
//! commit or roll back at once, and an unknown one is settled by the broker's check.

use std::collections::BTreeSet;
use std::time::Duration;

use stellmq_client::{AdminClient, Message, ProducerConfig, TransactionProducer, TransactionState};
use stellmq_remoting::protocol::body::TopicConfig;
use stellmq_testkit::{
    consumer_config, recording_consumer, wait_consumed_all, wait_for, Bodies, Stack,
};

fn local_answer(body: &str) -> TransactionState {
    match body.split('-').next() {
        Some("commit") => TransactionState::Commit,
        Some("rollback") => TransactionState::Rollback,
        _ => TransactionState::Unknown,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_commit_roll_back_and_are_settled_by_checks() {
    let stack = Stack::start_with(|c| {
        c.broker.broker_name = "broker-t".into();
        c.broker.transaction_time_out = 300;
        c.broker.transaction_check_interval = 200;
    })
    .await;
    let ns_addr = stack.ns_addr().to_owned();
    AdminClient::new(&ns_addr)
        .expect("admin")
        .create_topic(stack.addr(), &TopicConfig::with_queues("TxRust", 2, 2, 6))
        .await
        .expect("topic");
    stack.broker().register_now().await;

    let asked = Bodies::default();
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
    let (consumer, seen) =
        recording_consumer(consumer_config(&ns_addr, "tx-reader"), "TxRust", "*").await;

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
    let mut expected: BTreeSet<String> = ["commit", "unknown"]
        .iter()
        .flat_map(|k| (0..3).map(move |i| format!("{k}-{i}")))
        .collect();
    wait_for("committed messages", Duration::from_secs(30), || {
        *seen.lock() == expected
    })
    .await;
    let mut unknown: BTreeSet<String> = (0..3).map(|i| format!("unknown-{i}")).collect();
    assert_eq!(*asked.lock(), unknown, "only the unknown ones were checked");
    // One more unknown transaction: the broker checks it on a walk of the half queue that
    // has passed every earlier half, and commits it on the checker's answer. Once it arrived
    // and the group has consumed everything, a rolled back message checked (and committed)
    // by mistake would have been delivered.
    let later = producer
        .send_in_transaction(Message::new("TxRust", "unknown-later"), |msg, _| {
            local_answer(&String::from_utf8_lossy(&msg.body))
        })
        .await
        .expect("half sent");
    assert_eq!(later.local_state, TransactionState::Unknown);
    wait_for(
        "the later transaction is checked and committed",
        Duration::from_secs(30),
        || seen.lock().contains("unknown-later"),
    )
    .await;
    wait_consumed_all(stack.raw(), "tx-reader", "TxRust", Duration::from_secs(30)).await;
    unknown.insert("unknown-later".to_owned());
    assert_eq!(*asked.lock(), unknown, "only the unknown ones were checked");
    expected.insert("unknown-later".to_owned());
    assert_eq!(*seen.lock(), expected, "rolled back messages never appear");

    consumer.shutdown().await;
    producer.shutdown().await;
    stack.stop().await;
}
