//! Polls `DemoTopic` for 10 s in group `example_lite`, committing automatically:
//! `cargo run -p stellmq-client --example lite_pull_consumer`
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use stellmq_client::{ClientError, ConsumeFromWhere, ConsumerConfig, LitePullConsumer};

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let config = ConsumerConfig {
        group: "example_lite".into(),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    };
    let consumer = LitePullConsumer::subscribe(config, &[("DemoTopic", "*")], true).await?;
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        for m in consumer.poll(32, Duration::from_secs(1)).await {
            println!(
                "queue {} offset {}: {}",
                m.queue.queue_id,
                m.queue_offset(),
                String::from_utf8_lossy(&m.body)
            );
        }
    }
    consumer.shutdown().await;
    Ok(())
}
