//! Sends ten messages to `DemoTopic` (name server from NAMESRV_ADDR, default 127.0.0.1:9876):
//! `cargo run -p stellmq-client --example producer`
#![allow(clippy::print_stdout)]

use stellmq_client::{ClientError, Message, Producer, ProducerConfig};

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let producer = Producer::start(ProducerConfig {
        group: "example_producer".into(),
        ..Default::default()
    })
    .await?;
    for i in 0..10 {
        let message = Message::new("DemoTopic", format!("hello {i}"))
            .with_tags("TagA")
            .with_keys([format!("order-{i}")]);
        let result = producer.send(message).await?;
        println!(
            "{:?} msgId={} queue={} offset={}",
            result.status, result.msg_id, result.queue.queue_id, result.queue_offset
        );
    }
    // Ordered: every message of one key goes to one queue.
    let key = 42usize;
    let result = producer
        .send_with_selector(Message::new("DemoTopic", "ordered"), |queues| {
            key % queues.len()
        })
        .await?;
    println!("ordered message on queue {}", result.queue.queue_id);
    producer.shutdown().await;
    Ok(())
}
