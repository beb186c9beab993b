//! A controller with ACL 2.0: every controller request must be signed by an enabled super
//! user (brokers sign with their inner credentials); unsigned, wrongly signed and normal
//! users' requests are refused and change nothing; the secrets are never shown.

use std::time::Duration;

use stellmq_controller::ControllerConfig;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::headers::{CommandHeader, GetNextBrokerIdRequestHeader};
use stellmq_remoting::protocol::signature::SessionCredentials;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

const INNER: (&str, &str) = ("inner", "inner-secret");
const T: Duration = Duration::from_secs(5);

fn client(credentials: Option<(&str, &str)>) -> RemotingClient {
    RemotingClient::new(ClientConfig {
        credentials: credentials.map(|(u, p)| SessionCredentials::new(u, p)),
        ..ClientConfig::default()
    })
}

fn next_id() -> RemotingCommand {
    RemotingCommand::request(
        RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
        GetNextBrokerIdRequestHeader {
            cluster_name: Some("c".into()),
            broker_name: "b".into(),
        }
        .to_ext_fields(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_requests_need_a_signed_super_user() {
    let dir = tempfile::tempdir().expect("dir");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let config = ControllerConfig {
        controller_dleger_group: "auth-group".into(),
        controller_dleger_peers: format!("n0-{addr}"),
        controller_dleger_self_id: "n0".into(),
        controller_store_path: dir.path().to_path_buf(),
        authentication_enabled: true,
        init_authentication_user: r#"{"username":"root","password":"r00t"}"#.into(),
        inner_client_authentication_credentials: format!(
            r#"{{"accessKey":"{}","secretKey":"{}"}}"#,
            INNER.0, INNER.1
        ),
        ..ControllerConfig::default()
    };
    let controller = stellmq_controller::start_on(config, listener)
        .await
        .expect("starts");

    let no_permission = ResponseCode::NO_PERMISSION.as_i32();
    let unsigned = client(None)
        .invoke(&addr, next_id(), T)
        .await
        .expect("answer");
    assert_eq!(unsigned.code, no_permission);
    assert_eq!(unsigned.remark_str(), "username cannot be null.");
    let wrong = client(Some(("root", "guess")))
        .invoke(&addr, next_id(), T)
        .await
        .expect("answer");
    assert_eq!(wrong.remark_str(), "check signature failed.");
    let stranger = client(Some(("nobody", "x")))
        .invoke(&addr, next_id(), T)
        .await
        .expect("answer");
    assert_eq!(stranger.remark_str(), "User:nobody is not found.");

    // The broker's inner credentials and the configured super user are let in (the
    // answer is the controller's own, once it leads).
    for who in [INNER, ("root", "r00t")] {
        let signed = client(Some(who));
        stellmq_testkit::eventually_within(
            "the signed super user is answered once the controller leads",
            stellmq_testkit::TIMEOUT,
            async || {
                let r = signed.invoke(&addr, next_id(), T).await.expect("answer");
                assert_ne!(r.code, no_permission, "{who:?}: {}", r.remark_str());
                r.code == ResponseCode::SUCCESS.as_i32()
            },
        )
        .await;
        signed.shutdown().await;
    }

    let config = RemotingCommand::request(RequestCode::GET_CONTROLLER_CONFIG, ExtFields::new());
    let root = client(Some(("root", "r00t")));
    let shown = root.invoke(&addr, config, T).await.expect("config");
    let text = String::from_utf8_lossy(&shown.body);
    assert!(
        !text.contains("inner-secret") && !text.contains("r00t"),
        "{text}"
    );
    root.shutdown().await;
    controller.shutdown().await;
}
