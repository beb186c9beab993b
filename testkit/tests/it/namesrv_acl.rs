//! A name server with aclEnable: its changes need a signed admin account; route queries and
//! broker registration stay open.

use stellmq_remoting::protocol::signature::{sign, SessionCredentials};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use stellmq_testkit::{request, NameServer, RawClient};

const SUCCESS: i32 = 0;
const NO_PERMISSION: i32 = 16;

const ACL: &str = "accounts:\n  - accessKey: rocketmq2\n    secretKey: 87654321\n    admin: true\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    defaultTopicPerm: PUB\n";

fn signed(mut r: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
    sign(&mut r, &SessionCredentials::new(ak, sk));
    r
}

#[tokio::test]
async fn name_server_changes_need_a_signed_admin() {
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir_all(home.path().join("conf")).expect("conf");
    std::fs::write(home.path().join("conf/plain_acl.yml"), ACL).expect("acl");
    let home_dir = home.path().display().to_string();
    let ns = NameServer::start_with(move |c| {
        c.acl_enable = true;
        c.rocketmq_home = home_dir;
    })
    .await;
    let raw = RawClient::new(ns.addr());
    let put = || {
        request(
            RequestCode::PUT_KV_CONFIG,
            &[("namespace", "ns1"), ("key", "k"), ("value", "v")],
        )
    };

    let unsigned = raw.call(put()).await;
    assert_eq!(unsigned.code, NO_PERMISSION, "{:?}", unsigned.remark);
    let user = raw.call(signed(put(), "RocketMQ", "12345678")).await;
    assert_eq!(user.code, NO_PERMISSION);
    assert!(user
        .remark
        .unwrap_or_default()
        .contains("Need admin permission"));
    let wrong = raw.call(signed(put(), "rocketmq2", "wrong-secret")).await;
    assert_eq!(wrong.code, NO_PERMISSION);
    let admin = raw.call(signed(put(), "rocketmq2", "87654321")).await;
    assert_eq!(admin.code, SUCCESS, "{:?}", admin.remark);

    let get = raw
        .call(request(
            RequestCode::GET_KV_CONFIG,
            &[("namespace", "ns1"), ("key", "k")],
        ))
        .await;
    assert_eq!(get.code, SUCCESS, "reads stay open");
    assert_eq!(get.ext_fields.get("value"), Some("v"));
    let route = raw
        .call(request(
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            &[("topic", "NoSuchTopic")],
        ))
        .await;
    assert_ne!(route.code, NO_PERMISSION, "route queries stay open");
    raw.shutdown().await;
    ns.shutdown().await;
}
