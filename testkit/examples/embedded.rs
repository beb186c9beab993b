//! An application's test with StellMQ embedded: one line starts a name server and a broker
//! on ephemeral ports, the application's producer and consumer talk to them through the name
//! server, and dropping the stack stops both and removes their files.
//! `cargo run -p stellmq-testkit --example embedded` (`testkit/tests/it/testkit_embedded.rs`
//! runs it).
#![allow(clippy::print_stdout)]

use std::time::Duration;

use stellmq_client::{
    ConsumeResult, ConsumerConfig, Message, Producer, ProducerConfig, PushConsumer,
};
use stellmq_remoting::protocol::body::ConsumeFromWhere;
use stellmq_testkit::EmbeddedStack;
use tokio::sync::mpsc;

#[tokio::main]
async fn main() {
    // The one line: a name server and a broker, ready.
    let mq = EmbeddedStack::start();

    // The application under test, configured with the embedded name server.
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: mq.namesrv_addr().to_owned(),
        group: "orders_producer".into(),
        ..Default::default()
    })
    .await
    .expect("the producer starts");
    let sent = producer
        .send(Message::new("Orders", "order-1 created").with_keys(["order-1"]))
        .await
        .expect("the order is sent");
    println!("sent {} to {}", sent.msg_id, sent.queue.broker_name);

    let (received_tx, mut received) = mpsc::unbounded_channel();
    let consumer = PushConsumer::start_concurrently(
        ConsumerConfig {
            namesrv_addr: mq.namesrv_addr().to_owned(),
            group: "orders_consumer".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..Default::default()
        },
        &[("Orders", "*")],
        move |messages| {
            for message in messages {
                let _ = received_tx.send(String::from_utf8_lossy(&message.body).into_owned());
            }
            ConsumeResult::Success
        },
    )
    .await
    .expect("the consumer starts");
    let body = tokio::time::timeout(Duration::from_secs(30), received.recv())
        .await
        .expect("a message within 30 s")
        .expect("the listener is alive");
    assert_eq!(body, "order-1 created");
    println!("received {body:?}");

    consumer.shutdown().await;
    producer.shutdown().await;
    let dir = mq.dir().to_owned();
    drop(mq); // stops the broker and the name server, removes their files
    assert!(!dir.exists());
    println!("stopped; {} removed", dir.display());
}
