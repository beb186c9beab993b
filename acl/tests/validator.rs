//! The validator against real files in a temporary RocketMQ home: signatures, white lists,
//! permissions, admin rights, reloads and edits.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use stellmq_acl::{AccessValidator, AccountEdit, AclSource};
use stellmq_protocol::signature::{sign, SessionCredentials, SIGNATURE};
use stellmq_protocol::{ExtFields, RemotingCommand, RequestCode};

const ACL: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
  - accessKey: rocketmq2
    secretKey: 87654321
    whiteRemoteAddress: 192.168.1.*
    admin: true
"#;

fn home_with(acl: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(home.path().join("conf")).expect("conf");
    std::fs::write(home.path().join("conf/plain_acl.yml"), acl).expect("write");
    home
}

fn open(home: &Path) -> AccessValidator {
    AccessValidator::open(AclSource::in_home(home)).expect("loads")
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("ip")
}

fn signed(code: RequestCode, fields: &[(&str, &str)], ak: &str, sk: &str) -> RemotingCommand {
    let mut request = RemotingCommand::request(code, fields.iter().copied().collect::<ExtFields>());
    sign(&mut request, &SessionCredentials::new(ak, sk));
    request
}

fn send(topic: &str, ak: &str, sk: &str) -> RemotingCommand {
    let mut request = RemotingCommand::request(
        RequestCode::SEND_MESSAGE_V2,
        [("a", "PG"), ("b", topic)]
            .into_iter()
            .collect::<ExtFields>(),
    );
    request.body = bytes::Bytes::from_static(b"body");
    sign(&mut request, &SessionCredentials::new(ak, sk));
    request
}

const CLIENT: &str = "127.0.0.1";

#[test]
fn right_keys_and_permissions_pass() {
    let home = home_with(ACL);
    let v = open(home.path());
    assert_eq!(
        v.check(ip(CLIENT), &send("topicB", "RocketMQ", "12345678")),
        Ok(())
    );
    let pull = signed(
        RequestCode::PULL_MESSAGE,
        &[("consumerGroup", "groupX"), ("topic", "topicC")],
        "RocketMQ",
        "12345678",
    );
    assert_eq!(v.check(ip(CLIENT), &pull), Ok(()));
}

#[test]
fn refusals_name_what_is_missing_and_never_the_secret() {
    let home = home_with(ACL);
    let v = open(home.path());
    let refusal = |r: RemotingCommand| v.check(ip(CLIENT), &r).expect_err("refused").0;

    let wrong_secret = refusal(send("topicB", "RocketMQ", "wrong-secret"));
    assert_eq!(
        wrong_secret,
        "Check signature failed for accessKey=RocketMQ"
    );
    assert!(refusal(send("topicB", "nobody-here", "12345678"))
        .contains("No acl config for nobody-here"));
    let unsigned = RemotingCommand::request(
        RequestCode::SEND_MESSAGE_V2,
        [("b", "topicB")].into_iter().collect::<ExtFields>(),
    );
    assert_eq!(refusal(unsigned), "No accessKey is configured");
    // The C++ SDK without credentials sends empty AccessKey and Signature.
    let empty = RemotingCommand::request(
        RequestCode::SEND_MESSAGE_V2,
        [("b", "topicB"), ("AccessKey", ""), ("Signature", "")]
            .into_iter()
            .collect::<ExtFields>(),
    );
    assert_eq!(refusal(empty), "No accessKey is configured");

    let denied = refusal(send("topicA", "RocketMQ", "12345678"));
    assert!(
        denied.starts_with("No permission for topic=topicA"),
        "{denied}"
    );
    let sub_only = refusal(send("topicC", "RocketMQ", "12345678"));
    assert!(sub_only.contains("PUB needed"), "{sub_only}");
    let by_default = refusal(send("topicZ", "RocketMQ", "12345678"));
    assert!(
        by_default.starts_with("No default permission for topic=topicZ"),
        "{by_default}"
    );
    let group = refusal(signed(
        RequestCode::PULL_MESSAGE,
        &[("consumerGroup", "groupA"), ("topic", "topicC")],
        "RocketMQ",
        "12345678",
    ));
    assert!(group.contains("group=groupA"), "{group}");
    let admin = refusal(signed(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[("topic", "topicB")],
        "RocketMQ",
        "12345678",
    ));
    assert!(admin.contains("Need admin permission"), "{admin}");
    for text in [wrong_secret, denied, admin] {
        assert!(
            !text.contains("12345678") && !text.contains("87654321"),
            "{text}"
        );
    }
}

#[test]
fn tampered_requests_fail_the_signature() {
    let home = home_with(ACL);
    let v = open(home.path());
    let mut request = send("topicB", "RocketMQ", "12345678");
    request.ext_fields.insert("b", "topicA");
    assert!(v.check(ip(CLIENT), &request).is_err());
    let mut request = send("topicB", "RocketMQ", "12345678");
    request.body = bytes::Bytes::from_static(b"other");
    assert!(v.check(ip(CLIENT), &request).is_err());
    let mut request = send("topicB", "RocketMQ", "12345678");
    request.ext_fields.remove(SIGNATURE);
    assert!(v.check(ip(CLIENT), &request).is_err());
}

#[test]
fn white_lists_pass_without_signature_and_admins_pass_everything() {
    let home = home_with(ACL);
    let v = open(home.path());
    let unsigned = RemotingCommand::request(
        RequestCode::DELETE_TOPIC_IN_BROKER,
        [("topic", "topicA")].into_iter().collect::<ExtFields>(),
    );
    assert_eq!(
        v.check(ip("10.10.103.7"), &unsigned),
        Ok(()),
        "global white list"
    );
    assert!(v.check(ip("10.10.104.7"), &unsigned).is_err());
    let mut own_white = unsigned.clone();
    own_white.ext_fields.insert("AccessKey", "rocketmq2");
    assert_eq!(
        v.check(ip("192.168.1.20"), &own_white),
        Ok(()),
        "the account's white list"
    );
    assert!(
        v.check(ip(CLIENT), &own_white).is_err(),
        "elsewhere it must sign"
    );
    let admin = signed(
        RequestCode::DELETE_TOPIC_IN_BROKER,
        &[("topic", "topicA")],
        "rocketmq2",
        "87654321",
    );
    assert_eq!(v.check(ip(CLIENT), &admin), Ok(()));
}

#[test]
fn changed_file_reloads_and_broken_file_keeps_the_last_good() {
    let home = home_with(ACL);
    let v = open(home.path());
    let file = home.path().join("conf/plain_acl.yml");
    assert!(v
        .check(ip(CLIENT), &send("topicA", "RocketMQ", "12345678"))
        .is_err());
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&file, ACL.replace("topicA=DENY", "topicA=PUB")).expect("write");
    assert!(v.reload_if_changed());
    assert_eq!(
        v.check(ip(CLIENT), &send("topicA", "RocketMQ", "12345678")),
        Ok(())
    );
    std::fs::write(&file, "accounts: [ {accessKey: broken").expect("write");
    assert!(!v.reload_if_changed(), "not taken");
    assert_eq!(
        v.check(ip(CLIENT), &send("topicA", "RocketMQ", "12345678")),
        Ok(()),
        "last good rules stay"
    );
    assert!(!v.reload_if_changed(), "unchanged since");
}

#[test]
fn files_under_conf_acl_are_loaded_too() {
    let home = home_with(ACL);
    std::fs::create_dir_all(home.path().join("conf/acl/team")).expect("dir");
    std::fs::write(home.path().join("conf/acl/team/extra.yaml"), "accounts:\n  - accessKey: teamKey01\n    secretKey: teamSecret\n    defaultTopicPerm: PUB\n").expect("write");
    let v = open(home.path());
    assert_eq!(
        v.check(ip(CLIENT), &send("anyTopic", "teamKey01", "teamSecret")),
        Ok(())
    );
}

#[test]
fn missing_file_is_created_empty_and_refuses_all() {
    let home = tempfile::tempdir().expect("tempdir");
    let v = open(home.path());
    assert!(home.path().join("conf/plain_acl.yml").exists());
    assert!(v
        .check(ip(CLIENT), &send("t", "RocketMQ", "12345678"))
        .is_err());
}

#[test]
fn broken_file_at_start_is_an_error() {
    let home = home_with("accounts:\n  - accessKey: short\n    secretKey: 12345678\n");
    let e = AccessValidator::open(AclSource::in_home(home.path()))
        .err()
        .expect("refused");
    assert!(e.to_string().contains("accessKey=short"), "{e}");
    assert!(!e.to_string().contains("12345678"), "{e}");
}

#[test]
fn edits_write_the_file_bump_its_version_and_apply() {
    let home = home_with(ACL);
    let v = open(home.path());
    let before = v.default_version().counter;
    let edit = AccountEdit {
        access_key: "newAccount1".into(),
        secret_key: "newSecret1".into(),
        default_topic_perm: Some("PUB".into()),
        ..AccountEdit::default()
    };
    v.update_account(&edit, 1_000).expect("created");
    assert_eq!(
        v.check(ip(CLIENT), &send("x", "newAccount1", "newSecret1")),
        Ok(())
    );
    assert_eq!(v.default_version().counter, before + 1);
    let reopened = open(home.path());
    assert_eq!(
        reopened.check(ip(CLIENT), &send("x", "newAccount1", "newSecret1")),
        Ok(()),
        "persisted"
    );

    let change = AccountEdit {
        topic_perms: Some(vec!["x=DENY".into()]),
        ..edit.clone()
    };
    v.update_account(&change, 2_000).expect("changed");
    assert!(v
        .check(ip(CLIENT), &send("x", "newAccount1", "newSecret1"))
        .is_err());

    let bad = AccountEdit {
        topic_perms: Some(vec!["x=WRITE".into()]),
        ..edit.clone()
    };
    assert!(v.update_account(&bad, 3_000).is_err());
    let short = AccountEdit {
        secret_key: "short".into(),
        ..edit.clone()
    };
    assert!(v.update_account(&short, 3_000).is_err());

    assert!(v.delete_account("newAccount1", 4_000).expect("deleted"));
    assert!(!v.delete_account("newAccount1", 5_000).expect("gone"));
    assert!(v
        .check(ip(CLIENT), &send("x", "newAccount1", "newSecret1"))
        .is_err());

    v.update_global_white(vec!["127.0.0.*".into()], None, 6_000)
        .expect("white list");
    let unsigned = RemotingCommand::request(
        RequestCode::SEND_MESSAGE_V2,
        [("b", "topicA")].into_iter().collect::<ExtFields>(),
    );
    assert_eq!(v.check(ip(CLIENT), &unsigned), Ok(()));
    assert!(v
        .update_global_white(vec!["1.2.3.999".into()], None, 7_000)
        .is_err());
    let elsewhere = home.path().join("elsewhere.yml");
    std::fs::write(&elsewhere, "").expect("write");
    let e = v
        .update_global_white(
            vec!["*".into()],
            Some(elsewhere.to_str().expect("utf8")),
            8_000,
        )
        .expect_err("not an ACL file");
    assert!(e.to_string().contains("not an ACL file"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&elsewhere).expect("read"),
        "",
        "untouched"
    );
}
