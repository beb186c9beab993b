//! A client configured with plain-ACL credentials signs every request it sends: route
//! lookups, sends (sync and oneway), pulls, heartbeats, unregistrations and admin calls. One
//! in-process server plays name server and broker and checks each request it records with
//! `signature::verify`.

mod fake_cluster;

use fake_cluster::{assert_all_signed, credentials, start};
use stellmq_client::admin::AdminClient;
use stellmq_client::{ConsumerConfig, LitePullConsumer, Message, Producer, ProducerConfig};
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::RequestCode;

#[tokio::test]
async fn producer_requests_are_signed() {
    let (server, fake) = start().await;
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: fake.addr(),
        group: "signing_producer".into(),
        instance_name: "signing-producer".into(),
        credentials: credentials(),
        ..ProducerConfig::default()
    })
    .await
    .expect("producer starts");
    producer
        .send(Message::new("SignedTopic", "sync").with_keys(["k1"]))
        .await
        .expect("sync send");
    producer
        .send_oneway(Message::new("SignedTopic", "oneway"))
        .await
        .expect("oneway send");
    producer.shutdown().await;
    fake.wait_for_code(RequestCode::UNREGISTER_CLIENT).await;
    let codes = fake.codes();
    for code in [
        RequestCode::GET_ROUTEINFO_BY_TOPIC,
        RequestCode::SEND_MESSAGE_V2,
    ] {
        assert!(codes.contains(&code.as_i32()), "{code:?} in {codes:?}");
    }
    assert!(
        fake.seen.lock().iter().any(|r| r.is_oneway()),
        "a oneway send"
    );
    assert_all_signed(&fake);
    server.shutdown().await;
}

#[tokio::test]
async fn consumer_requests_are_signed() {
    let (server, fake) = start().await;
    let offsets = tempfile::tempdir().expect("temp dir");
    let consumer = LitePullConsumer::assign(
        ConsumerConfig {
            namesrv_addr: fake.addr(),
            group: "signing_consumer".into(),
            instance_name: "signing-consumer".into(),
            offset_store_dir: offsets.path().to_owned(),
            credentials: credentials(),
            ..ConsumerConfig::default()
        },
        &[MessageQueue {
            broker_name: "b".into(),
            queue_id: 0,
            topic: "SignedTopic".into(),
        }],
        true,
    )
    .await
    .expect("consumer starts");
    fake.wait_for_code(RequestCode::PULL_MESSAGE).await;
    consumer.shutdown().await;
    assert_all_signed(&fake);
    server.shutdown().await;
}

#[tokio::test]
async fn admin_requests_are_signed() {
    let (server, fake) = start().await;
    let admin = AdminClient::with_credentials(&fake.addr(), credentials()).expect("admin client");
    let route = admin.topic_route("SignedTopic").await.expect("route");
    assert_eq!(route.broker_datas.len(), 1);
    admin
        .update_broker_config(&fake.addr(), "k", "v")
        .await
        .expect("config update");
    admin.shutdown().await;
    assert_eq!(fake.seen.lock().len(), 2);
    assert_all_signed(&fake);
    server.shutdown().await;
}
