//! The plain-ACL admin requests (RocketMQ 4.x, codes 50-54) as mqadmin's updateAclConfig,
//! deleteAclConfig, updateGlobalWhiteAddr, clusterAclConfigVersion and getAclConfig send them,
//! signed, over an in-memory connection to a real broker with aclEnable (the ACL check runs
//! in front of the processor exactly as on a TCP connection).

use std::path::Path;

use stellmq_remoting::protocol::signature::{sign, SessionCredentials};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{request, send_request, Fixture};

const ACL: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
  - accessKey: rocketmq2
    secretKey: 87654321
    whiteRemoteAddress: 10.99.*.*
    admin: true
"#;

const USER: (&str, &str) = ("RocketMQ", "12345678");
const ADMIN: (&str, &str) = ("rocketmq2", "87654321");
const NEWCOMER: (&str, &str) = ("newcomer1", "newSecret1");

const SUCCESS: i32 = 0;
const NO_PERMISSION: i32 = 16;

async fn acl_broker(home: &Path) -> Fixture {
    std::fs::create_dir_all(home.join("conf")).expect("conf dir");
    std::fs::write(home.join("conf/plain_acl.yml"), ACL).expect("acl file");
    let home = home.display().to_string();
    Fixture::start_with(move |c| {
        c.broker.acl_enable = true;
        c.broker.rocketmq_home = home;
    })
    .await
}

fn signed(mut request: RemotingCommand, (ak, sk): (&str, &str)) -> RemotingCommand {
    sign(&mut request, &SessionCredentials::new(ak, sk));
    request
}

fn send(topic: &str) -> RemotingCommand {
    send_request(topic, 0, b"x", "")
}

fn add_newcomer() -> RemotingCommand {
    request(
        RequestCode::UPDATE_AND_CREATE_ACL_CONFIG,
        &[
            ("accessKey", NEWCOMER.0),
            ("secretKey", NEWCOMER.1),
            ("defaultTopicPerm", "PUB"),
            ("topicPerms", "topicX=DENY,topicN=PUB"),
            ("admin", "false"),
        ],
    )
}

#[tokio::test]
async fn an_account_added_deleted_and_listed_applies_at_once_and_is_written() {
    let home = tempfile::tempdir().expect("home");
    let broker = acl_broker(home.path()).await;
    assert_eq!(
        broker.call(signed(send("topicN"), NEWCOMER)).await.code,
        NO_PERMISSION
    );

    let added = broker.call(signed(add_newcomer(), ADMIN)).await;
    assert_eq!(added.code, SUCCESS, "{:?}", added.remark);
    assert_eq!(
        broker.call(signed(send("topicN"), NEWCOMER)).await.code,
        SUCCESS
    );
    assert_eq!(
        broker.call(signed(send("topicX"), NEWCOMER)).await.code,
        NO_PERMISSION
    );
    let on_disk = std::fs::read_to_string(home.path().join("conf/plain_acl.yml")).expect("file");
    assert!(
        on_disk.contains("newcomer1") && on_disk.contains("topicX=DENY"),
        "{on_disk}"
    );

    let version = broker
        .call(signed(
            request(RequestCode::GET_BROKER_CLUSTER_ACL_INFO, &[]),
            ADMIN,
        ))
        .await;
    assert_eq!(version.code, SUCCESS);
    let v: serde_json::Value =
        serde_json::from_str(version.ext_fields.get("version").expect("version")).expect("json");
    assert_eq!(v["counter"], 1, "one edit so far: {v}");
    assert_eq!(version.ext_fields.get("brokerName"), Some("broker-fixture"));

    let config = broker
        .call(signed(
            request(RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG, &[]),
            ADMIN,
        ))
        .await;
    let body: serde_json::Value = serde_json::from_slice(&config.body).expect("json body");
    assert_eq!(body["globalWhiteAddrs"][0], "10.10.103.*");
    assert!(body["plainAccessConfigs"]
        .as_array()
        .expect("accounts")
        .iter()
        .any(|a| a["accessKey"] == "newcomer1"));

    let delete = request(RequestCode::DELETE_ACL_CONFIG, &[("accessKey", NEWCOMER.0)]);
    assert_eq!(
        broker.call(signed(delete.clone(), ADMIN)).await.code,
        SUCCESS
    );
    assert_eq!(
        broker.call(signed(send("topicN"), NEWCOMER)).await.code,
        NO_PERMISSION
    );
    let again = broker.call(signed(delete, ADMIN)).await;
    assert_eq!(again.code, ResponseCode::DELETE_ACL_CONFIG_FAILED.as_i32());
    assert!(again.remark.is_some_and(|r| r.contains("no such account")));
}

#[tokio::test]
async fn only_an_admin_edits_and_a_bad_edit_changes_nothing() {
    let home = tempfile::tempdir().expect("home");
    let broker = acl_broker(home.path()).await;
    let before = std::fs::read_to_string(home.path().join("conf/plain_acl.yml")).expect("file");
    assert_eq!(
        broker.call(signed(add_newcomer(), USER)).await.code,
        NO_PERMISSION
    );
    assert_eq!(
        broker.call(add_newcomer()).await.code,
        NO_PERMISSION,
        "unsigned"
    );
    let short = request(
        RequestCode::UPDATE_AND_CREATE_ACL_CONFIG,
        &[("accessKey", "short"), ("secretKey", "newSecret1")],
    );
    let refused = broker.call(signed(short, ADMIN)).await;
    assert_eq!(
        refused.code,
        ResponseCode::UPDATE_AND_CREATE_ACL_CONFIG_FAILED.as_i32(),
        "{:?}",
        refused.remark
    );
    let after = std::fs::read_to_string(home.path().join("conf/plain_acl.yml")).expect("file");
    assert_eq!(before, after);
}

#[tokio::test]
async fn the_global_white_list_is_replaced_only_in_the_acl_files() {
    let home = tempfile::tempdir().expect("home");
    let broker = acl_broker(home.path()).await;
    let outside = request(
        RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
        &[
            ("globalWhiteAddrs", "127.0.0.1"),
            ("aclFileFullPath", "/etc/passwd"),
        ],
    );
    let refused = broker.call(signed(outside, ADMIN)).await;
    assert_eq!(
        refused.code,
        ResponseCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED.as_i32(),
        "a path outside the ACL is refused: {:?}",
        refused.remark
    );
    assert_eq!(broker.call(send("topicA")).await.code, NO_PERMISSION);
    let white = request(
        RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
        &[("globalWhiteAddrs", "127.0.0.1")],
    );
    assert_eq!(broker.call(signed(white, ADMIN)).await.code, SUCCESS);
    assert_eq!(
        broker.call(send("topicA")).await.code,
        SUCCESS,
        "unsigned from a white address"
    );
}

#[tokio::test]
async fn without_acl_the_requests_are_refused_clearly() {
    let broker = Fixture::start().await;
    for code in [
        RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG,
        RequestCode::GET_BROKER_CLUSTER_ACL_INFO,
    ] {
        let refused = broker.call(request(code, &[])).await;
        assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
        assert!(refused
            .remark
            .is_some_and(|r| r.contains("aclEnable=false")));
    }
    let refused = broker.call(add_newcomer()).await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
}
