//! Request/reply through an in-process broker: a requester's `request` gets the reply a
//! consumer sends with `reply`, pushed by the broker to the requester's connection.

use std::time::Duration;

use stellmq_client::{
    AdminClient, ConsumeResult, ConsumerConfig, Message, Producer, ProducerConfig, PushConsumer,
};
use stellmq_remoting::protocol::body::{ConsumeFromWhere, TopicConfig};
use stellmq_testkit::Stack;
use tokio::sync::mpsc;

async fn producer(ns_addr: &str, group: &str, instance: &str) -> Producer {
    Producer::start(ProducerConfig {
        namesrv_addr: ns_addr.to_owned(),
        group: group.into(),
        instance_name: instance.into(),
        ..Default::default()
    })
    .await
    .expect("producer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_gets_the_consumers_reply() {
    let stack = Stack::start_with(|c| c.broker.broker_name = "broker-r".into()).await;
    let (ns_addr, broker) = (stack.ns_addr().to_owned(), stack.broker());
    AdminClient::new(&ns_addr)
        .expect("admin")
        .create_topic(
            broker.broker_addr(),
            &TopicConfig::with_queues("Rpc", 2, 2, 6),
        )
        .await
        .expect("topic");
    broker.register_now().await;

    // The responder: a consumer hands requests to a task that replies "pong: <body>".
    let (tx, mut requests) = mpsc::unbounded_channel();
    let consumer = PushConsumer::start_concurrently(
        ConsumerConfig {
            namesrv_addr: ns_addr.clone(),
            group: "rpc-server".into(),
            instance_name: "rpc-server".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..Default::default()
        },
        &[("Rpc", "*")],
        move |msgs| {
            for m in msgs {
                let _ = tx.send(m.clone());
            }
            ConsumeResult::Success
        },
    )
    .await
    .expect("consumer");
    let responder = producer(&ns_addr, "rpc-server-replies", "rpc-server").await;
    let replying = tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            let body = format!("pong: {}", String::from_utf8_lossy(&request.body));
            if let Err(e) = responder.reply(&request, body).await {
                panic!("reply failed: {e}");
            }
        }
    });

    let requester = producer(&ns_addr, "rpc-client", "rpc-client").await;
    for i in 0..3 {
        let reply = requester
            .request(
                Message::new("Rpc", format!("ping-{i}")),
                Duration::from_secs(15),
            )
            .await
            .expect("reply");
        assert_eq!(
            String::from_utf8_lossy(&reply.body),
            format!("pong: ping-{i}")
        );
        assert_eq!(reply.topic(), "DefaultCluster_REPLY_TOPIC");
    }

    // A reply is not a request (it names no cluster to answer through): refused.
    let reply = requester
        .request(Message::new("Rpc", "last"), Duration::from_secs(15))
        .await
        .expect("reply");
    let refused = requester.reply(&reply, "x").await;
    assert!(
        refused.is_err_and(|e| e.to_string().contains("not a request")),
        "replying to a non-request is refused"
    );

    consumer.shutdown().await;
    replying.abort();
    requester.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_request_times_out_clearly() {
    let stack = Stack::start_with(|c| c.broker.broker_name = "broker-r".into()).await;
    let ns_addr = stack.ns_addr().to_owned();
    let requester = producer(&ns_addr, "rpc-lonely", "rpc-lonely").await;
    let err = requester
        .request(
            Message::new("Lonely", "anyone?"),
            Duration::from_millis(500),
        )
        .await
        .expect_err("nobody answers");
    assert!(err.to_string().contains("no reply"), "{err}");
    requester.shutdown().await;
    stack.stop().await;
}
