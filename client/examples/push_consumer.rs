//! Consumes `DemoTopic` (tags TagA or TagB) for 30 s in group `example_consumer`:
//! `cargo run -p stellmq-client --example push_consumer`
#![allow(clippy::print_stdout)]

use std::time::Duration;

use stellmq_client::{ClientError, ConsumeFromWhere, ConsumeResult, ConsumerConfig, PushConsumer};

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let config = ConsumerConfig {
        group: "example_consumer".into(),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    };
    let consumer =
        PushConsumer::start_concurrently(config, &[("DemoTopic", "TagA || TagB")], |messages| {
            for m in messages {
                println!(
                    "{} {:?} {}",
                    m.msg_id(),
                    m.tags(),
                    String::from_utf8_lossy(&m.body)
                );
            }
            ConsumeResult::Success
        })
        .await?;
    tokio::time::sleep(Duration::from_secs(30)).await;
    consumer.shutdown().await;
    Ok(())
}
