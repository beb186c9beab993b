//! Sends three transactional messages to `DemoTopic`: one committed, one rolled back and one
//! left unknown, which the broker's check settles through the checker (after
//! `transactionTimeOut`, 6 s by default, at the next check pass, every 60 s by default):
//! `cargo run -p stellmq-client --example transaction_producer`
#![allow(clippy::print_stdout)]

use std::time::Duration;

use stellmq_client::{ClientError, Message, ProducerConfig, TransactionProducer, TransactionState};

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let producer = TransactionProducer::start(
        ProducerConfig {
            group: "example_tx_producer".into(),
            ..Default::default()
        },
        |msg| {
            println!("broker asks about {}: commit", msg.msg_id());
            TransactionState::Commit
        },
    )
    .await?;
    for (body, answer) in [
        ("tx committed", TransactionState::Commit),
        ("tx rolled back", TransactionState::Rollback),
        ("tx settled by the check", TransactionState::Unknown),
    ] {
        let result = producer
            .send_in_transaction(Message::new("DemoTopic", body), |_, _| answer)
            .await?;
        println!(
            "{body}: msgId={} local={:?}",
            result.send.msg_id, result.local_state
        );
    }
    println!("waiting 70 s for the broker's check of the unknown one...");
    tokio::time::sleep(Duration::from_secs(70)).await;
    producer.shutdown().await;
    Ok(())
}
