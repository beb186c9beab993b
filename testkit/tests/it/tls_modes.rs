//! TLS modes on the remoting ports: a TLS client sends and consumes through permissive and
//! enforcing name servers and brokers (the broker registering over TLS), plaintext works on
//! permissive ports only, and a bad or stalled handshake closes that connection alone.

use std::time::Duration;

use stellmq_client::{Message, Producer, ProducerConfig, SendStatus};
use stellmq_remoting::net::tls::{TlsConfig, TlsMode};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{
    consumer_config, eventually, recording_consumer, NameServer, TestBroker, TestCa, TIMEOUT,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A name server and a broker in `mode`, the broker registering over TLS.
async fn tls_stack(ca: &TestCa, mode: TlsMode) -> (NameServer, TestBroker) {
    let ns = NameServer::start_with_tls(ca.server_tls(mode)).await;
    let broker_tls = TlsConfig {
        client_enable: true,
        client_trust_cert_path: Some(ca.ca_path()),
        ..ca.server_tls(mode)
    };
    let broker = TestBroker::start(ns.addr(), |c| c.tls = broker_tls).await;
    (ns, broker)
}

fn cluster_info() -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, ExtFields::new())
}

/// Whether `client` gets a successful answer from the name server at `addr`.
async fn answered(client: &RemotingClient, addr: &str) -> bool {
    matches!(
        client.invoke(addr, cluster_info(), TIMEOUT).await,
        Ok(r) if r.code == ResponseCode::SUCCESS.as_i32()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_client_sends_and_consumes_on_permissive_and_enforcing_ports() {
    for mode in [TlsMode::Permissive, TlsMode::Enforcing] {
        let ca = TestCa::new("StellMQ test CA");
        let (ns, broker) = tls_stack(&ca, mode).await;
        let topic = "TlsTopic";
        let producer = Producer::start(ProducerConfig {
            namesrv_addr: ns.addr().to_owned(),
            group: "tls_producer".into(),
            tls: ca.client_tls(),
            ..Default::default()
        })
        .await
        .expect("a TLS producer starts");
        let body = format!("over TLS, {mode:?}");
        let sent = producer
            .send(Message::new(topic, body.clone()))
            .await
            .expect("a send over TLS");
        assert_eq!(sent.status, SendStatus::SendOk);

        let mut config = consumer_config(ns.addr(), "tls_consumer");
        config.tls = ca.client_tls();
        let (consumer, seen) = recording_consumer(config, topic, "*").await;
        eventually("the TLS consumer receives the message", async || {
            seen.lock().contains(&body)
        })
        .await;

        consumer.shutdown().await;
        producer.shutdown().await;
        broker.shutdown().await;
        ns.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_is_served_on_permissive_ports_and_refused_on_enforcing_ones() {
    let ca = TestCa::new("StellMQ test CA");
    let plaintext = RemotingClient::new(ClientConfig::default());

    let permissive = NameServer::start_with_tls(ca.server_tls(TlsMode::Permissive)).await;
    assert!(answered(&plaintext, permissive.addr()).await);
    assert!(answered(&RemotingClient::new(ca.client_config()), permissive.addr()).await);

    let enforcing = NameServer::start_with_tls(ca.server_tls(TlsMode::Enforcing)).await;
    assert!(
        !answered(&plaintext, enforcing.addr()).await,
        "an enforcing port answered plaintext"
    );
    assert!(answered(&RemotingClient::new(ca.client_config()), enforcing.addr()).await);

    // A TLS client cannot talk to a plaintext-only port either.
    let disabled = NameServer::start().await;
    assert!(!answered(&RemotingClient::new(ca.client_config()), disabled.addr()).await);
    assert!(answered(&plaintext, disabled.addr()).await);
}

/// Reads until the server closes the connection; false if it stays open for `limit`.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(limit, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_or_broken_handshake_closes_that_connection_only() {
    let ca = TestCa::new("StellMQ test CA");
    let ns = NameServer::start_with_tls(TlsConfig {
        server_handshake_timeout_millis: 300,
        ..ca.server_tls(TlsMode::Permissive)
    })
    .await;

    // Starts a handshake and says no more.
    let mut stalled = TcpStream::connect(ns.addr()).await.expect("connect");
    stalled.write_all(&[0x16]).await.expect("write");
    // A handshake record that is no handshake.
    let mut broken = TcpStream::connect(ns.addr()).await.expect("connect");
    broken
        .write_all(b"\x16\x03\x01\x00\x08not-tls!")
        .await
        .expect("write");

    // Meanwhile both kinds of client are served.
    assert!(answered(&RemotingClient::new(ca.client_config()), ns.addr()).await);
    assert!(answered(&RemotingClient::new(ClientConfig::default()), ns.addr()).await);

    assert!(
        closed_within(&mut broken, TIMEOUT).await,
        "a broken handshake was kept"
    );
    assert!(
        closed_within(&mut stalled, TIMEOUT).await,
        "a stalled handshake was kept"
    );
    assert!(answered(&RemotingClient::new(ca.client_config()), ns.addr()).await);
}
