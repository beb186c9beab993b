//! A name server with ACL 2.0: its changes need a signed, enabled super user, known from its
//! own configuration or read from the registered brokers; route queries and broker
//! registration stay open; GET_NAMESRV_CONFIG never shows the secrets.

use stellmq_remoting::protocol::signature::{sign, SessionCredentials};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{request, NameServer, RawClient, TestBroker};

const INNER: &str = r#"{"accessKey":"inner","secretKey":"inner-secret"}"#;

fn signed(mut r: RemotingCommand, user: &str, password: &str) -> RemotingCommand {
    sign(&mut r, &SessionCredentials::new(user, password));
    r
}

fn with_body(mut r: RemotingCommand, body: &str) -> RemotingCommand {
    r.body = body.as_bytes().to_vec().into();
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_server_changes_need_a_signed_super_user() {
    let ns = NameServer::start_with(|c| {
        c.authentication_enabled = true;
        c.inner_client_authentication_credentials = INNER.into();
    })
    .await;
    let broker = TestBroker::start(ns.addr(), |c| {
        c.broker.authentication_enabled = true;
        c.broker.authorization_enabled = true;
        c.broker.inner_client_authentication_credentials = INNER.into();
    })
    .await;
    broker.register_now().await;
    let on_broker = RawClient::new(broker.addr());
    for (name, kind) in [("ops", "Super"), ("app", "Normal")] {
        let create = with_body(
            request(RequestCode::AUTH_CREATE_USER, &[("username", name)]),
            &format!(r#"{{"username":"{name}","password":"{name}-pass","userType":"{kind}"}}"#),
        );
        let created = on_broker
            .call(signed(create, "inner", "inner-secret"))
            .await;
        assert_eq!(created.code, 0, "{:?}", created.remark);
    }

    let raw = RawClient::new(ns.addr());
    let put = || {
        request(
            RequestCode::PUT_KV_CONFIG,
            &[("namespace", "ns1"), ("key", "k"), ("value", "v")],
        )
    };
    let no_permission = ResponseCode::NO_PERMISSION.as_i32();
    let unsigned = raw.call(put()).await;
    assert_eq!(
        (unsigned.code, unsigned.remark.as_deref()),
        (no_permission, Some("username cannot be null."))
    );
    let normal = raw.call(signed(put(), "app", "app-pass")).await;
    assert_eq!(normal.code, no_permission);
    assert!(normal
        .remark
        .unwrap_or_default()
        .contains("only super users"));
    let wrong = raw.call(signed(put(), "ops", "wrong")).await;
    assert_eq!(wrong.remark.as_deref(), Some("check signature failed."));
    let stranger = raw.call(signed(put(), "nobody", "x")).await;
    assert_eq!(
        stranger.remark.as_deref(),
        Some("User:nobody is not found.")
    );
    // A super user of the brokers, read from them; and the name server's own.
    assert_eq!(raw.call(signed(put(), "ops", "ops-pass")).await.code, 0);
    assert_eq!(
        raw.call(signed(put(), "inner", "inner-secret")).await.code,
        0
    );

    let route = raw
        .call(request(RequestCode::GET_BROKER_CLUSTER_INFO, &[]))
        .await;
    assert_eq!(route.code, 0, "reads stay open");
    let config = raw
        .call(request(RequestCode::GET_NAMESRV_CONFIG, &[]))
        .await;
    let text = String::from_utf8_lossy(&config.body).into_owned();
    assert!(
        text.contains("innerClientAuthenticationCredentials=******"),
        "{text}"
    );
    assert!(!text.contains("inner-secret"), "{text}");

    on_broker.shutdown().await;
    raw.shutdown().await;
    broker.shutdown().await;
    ns.shutdown().await;
}
