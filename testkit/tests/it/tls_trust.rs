//! Who trusts whom over TLS: a client refuses a server its CA did not sign or whose
//! certificate names another host, a server requiring client certificates refuses clients
//! without one, RocketMQ's test mode trusts any server, and a certificate replaced on disk
//! is used by the next connections (a broken one is not).

use stellmq_remoting::net::tls::{ClientAuth, ClientTlsConfig, TlsConfig, TlsMode};
use stellmq_remoting::net::{RemotingClient, RemotingError};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::tls::client_config;
use stellmq_testkit::{eventually, NameServer, TestCa, TIMEOUT};

fn cluster_info() -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, ExtFields::new())
}

/// What a new client with `tls` gets from the name server at `addr`.
async fn ask(tls: &ClientTlsConfig, addr: &str) -> Result<(), RemotingError> {
    let client = RemotingClient::new(client_config(tls));
    let answer = client.invoke(addr, cluster_info(), TIMEOUT).await;
    client.shutdown().await;
    let response = answer?;
    assert_eq!(response.code, ResponseCode::SUCCESS.as_i32());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_refuses_a_server_of_another_ca_or_another_name() {
    let ca = TestCa::new("StellMQ test CA");
    let other = TestCa::new("Someone else's CA");
    let ns = NameServer::start_with_tls(ca.server_tls(TlsMode::Enforcing)).await;
    ask(&ca.client_tls(), ns.addr())
        .await
        .expect("the right CA is trusted");
    let refused = ask(&other.client_tls(), ns.addr()).await;
    assert!(
        matches!(refused, Err(RemotingError::TlsHandshake { .. })),
        "a server of another CA was trusted: {refused:?}"
    );

    let (cert, key) = ca.issue(&["broker-elsewhere.example"]);
    let misnamed = NameServer::start_with_tls(TlsConfig {
        server_cert_path: Some(cert),
        server_key_path: Some(key),
        ..ca.server_tls(TlsMode::Enforcing)
    })
    .await;
    let refused = ask(&ca.client_tls(), misnamed.addr()).await;
    assert!(
        matches!(refused, Err(RemotingError::TlsHandshake { .. })),
        "a certificate for another name was accepted: {refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_mode_trusts_any_server_when_asked_to() {
    let unknown = TestCa::new("Unknown CA");
    let ns = NameServer::start_with_tls(unknown.server_tls(TlsMode::Enforcing)).await;
    let test_mode = ClientTlsConfig {
        enable: true,
        trust_any_server: true,
        ..ClientTlsConfig::default()
    };
    ask(&test_mode, ns.addr())
        .await
        .expect("test mode trusts any server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_auth_require_refuses_clients_without_a_certificate() {
    let ca = TestCa::new("StellMQ test CA");
    let clients_ca = TestCa::new("Client CA");
    let require = |auth| TlsConfig {
        server_need_client_auth: auth,
        server_trust_cert_path: Some(clients_ca.ca_path()),
        ..ca.server_tls(TlsMode::Enforcing)
    };
    let ns = NameServer::start_with_tls(require(ClientAuth::Require)).await;
    assert!(
        ask(&ca.client_tls(), ns.addr()).await.is_err(),
        "a client without a certificate was served"
    );
    let (cert, key) = clients_ca.issue(&["client.example"]);
    let with_certificate = ClientTlsConfig {
        cert_path: Some(cert.clone()),
        key_path: Some(key.clone()),
        ..ca.client_tls()
    };
    ask(&with_certificate, ns.addr())
        .await
        .expect("a client with a certificate of the trusted CA is served");
    let (wrong_cert, wrong_key) = ca.issue(&["client.example"]);
    let wrong_certificate = ClientTlsConfig {
        cert_path: Some(wrong_cert),
        key_path: Some(wrong_key),
        ..ca.client_tls()
    };
    assert!(
        ask(&wrong_certificate, ns.addr()).await.is_err(),
        "a client certificate of an untrusted CA was accepted"
    );

    let optional = NameServer::start_with_tls(require(ClientAuth::Optional)).await;
    ask(&ca.client_tls(), optional.addr())
        .await
        .expect("optional: a client without a certificate is served");
    ask(&with_certificate, optional.addr())
        .await
        .expect("optional: a client with a certificate is served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_replaced_on_disk_serves_new_connections() {
    let first = TestCa::new("First CA");
    let second = TestCa::new("Second CA");
    let (cert, key) = first.issue(stellmq_testkit::tls::LOOPBACK_NAMES);
    let ns = NameServer::start_with_tls(TlsConfig {
        server_mode: TlsMode::Enforcing,
        server_cert_path: Some(cert.clone()),
        server_key_path: Some(key.clone()),
        server_reload_check_interval_millis: 20,
        ..TlsConfig::default()
    })
    .await;
    ask(&first.client_tls(), ns.addr()).await.expect("first CA");
    assert!(ask(&second.client_tls(), ns.addr()).await.is_err());

    // A broken certificate file keeps the last good certificate (each step of the reload on
    // its own: remoting's `tls::reload` tests).
    std::fs::write(&cert, "not a certificate\n").expect("break the file");
    ask(&first.client_tls(), ns.addr())
        .await
        .expect("the last good certificate is still served");

    second.issue_to(stellmq_testkit::tls::LOOPBACK_NAMES, &cert, &key);
    eventually("new connections get the replaced certificate", async || {
        ask(&second.client_tls(), ns.addr()).await.is_ok()
    })
    .await;
    assert!(ask(&first.client_tls(), ns.addr()).await.is_err());
}
