//! Pulls every queue of `DemoTopic` for 10 s in group `example_puller` with the classic pull
//! consumer, from the group's stored offsets on, and stores its progress:
//! `cargo run -p stellmq-client --example pull_consumer`
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use stellmq_client::{ClientError, ConsumerConfig, PullConsumer, PullStatus};

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let consumer = PullConsumer::start(ConsumerConfig {
        group: "example_puller".into(),
        ..Default::default()
    })
    .await?;
    let mut next = BTreeMap::new();
    for mq in consumer.fetch_subscribe_message_queues("DemoTopic").await? {
        let offset = consumer.fetch_consume_offset(&mq, true).await?.unwrap_or(0);
        next.insert(mq, offset);
    }
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let mut found = false;
        for (mq, offset) in next.iter_mut() {
            let pulled = consumer.pull(mq, "*", *offset, 32).await?;
            for m in &pulled.messages {
                let body = String::from_utf8_lossy(&m.body);
                println!("queue {} offset {}: {body}", mq.queue_id, m.queue_offset());
            }
            found |= pulled.status == PullStatus::Found;
            *offset = pulled.next_begin_offset;
            consumer.update_consume_offset(mq, *offset);
        }
        if !found {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    consumer.shutdown().await;
    Ok(())
}
