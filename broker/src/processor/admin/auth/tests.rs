//! ACL 2.0's admin requests and checks, as mqadmin and RocketMQ 5 clients send them,
//! signed, over an in-memory connection to a real broker (the checks run in front of the
//! processors exactly as on a TCP connection).

use std::path::Path;

use serde_json::Value;
use stellmq_remoting::protocol::signature::{sign, SessionCredentials};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{request, send_request, Fixture};

const ROOT: (&str, &str) = ("root", "r00t-secret");
const SUCCESS: i32 = 0;
const NO_PERMISSION: i32 = ResponseCode::NO_PERMISSION.as_i32();

async fn auth_broker(checks: bool, home: Option<&Path>) -> Fixture {
    let home = home.map(|h| h.display().to_string());
    Fixture::start_with(move |c| {
        c.broker.authentication_enabled = checks;
        c.broker.authorization_enabled = checks;
        c.broker.init_authentication_user =
            format!(r#"{{"username":"{}","password":"{}"}}"#, ROOT.0, ROOT.1);
        if let Some(home) = home {
            c.broker.rocketmq_home = home;
            c.broker.migrate_auth_from_v1_enabled = true;
        }
    })
    .await
}

fn signed(mut request: RemotingCommand, (user, password): (&str, &str)) -> RemotingCommand {
    sign(&mut request, &SessionCredentials::new(user, password));
    request
}

fn with_body(mut request: RemotingCommand, body: &str) -> RemotingCommand {
    request.body = body.as_bytes().to_vec().into();
    request
}

fn create_user(name: &str, password: &str, user_type: &str) -> RemotingCommand {
    with_body(
        request(RequestCode::AUTH_CREATE_USER, &[("username", name)]),
        &format!(r#"{{"username":"{name}","password":"{password}","userType":"{user_type}"}}"#),
    )
}

fn create_acl(subject: &str, resource: &str, actions: &str, decision: &str) -> RemotingCommand {
    with_body(
        request(RequestCode::AUTH_CREATE_ACL, &[("subject", subject)]),
        &format!(
            r#"{{"subject":"{subject}","policies":[{{"entries":[{{"resource":"{resource}","actions":[{actions}],"decision":"{decision}"}}]}}]}}"#
        ),
    )
}

fn create_topic(topic: &str) -> RemotingCommand {
    request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", topic),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "1"),
            ("writeQueueNums", "1"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
        ],
    )
}

fn json(answer: &RemotingCommand) -> Value {
    serde_json::from_slice(&answer.body).expect("a JSON body")
}

async fn ok(broker: &Fixture, request: RemotingCommand) -> RemotingCommand {
    let answer = broker.call(request).await;
    assert_eq!(answer.code, SUCCESS, "{:?}", answer.remark);
    answer
}

#[tokio::test]
async fn users_and_policies_are_managed_and_read_back_as_rocketmq_writes_them() {
    let broker = auth_broker(false, None).await;
    ok(
        &broker,
        signed(create_user("alice", "a-pass", "Normal"), ROOT),
    )
    .await;
    let got = ok(
        &broker,
        request(RequestCode::AUTH_GET_USER, &[("username", "alice")]),
    )
    .await;
    assert_eq!(
        json(&got),
        serde_json::json!({"username":"alice","password":"a-pass","userType":"Normal","userStatus":"enable"})
    );
    let again = broker
        .call(signed(create_user("alice", "x", "Normal"), ROOT))
        .await;
    assert_eq!(
        (again.code, again.remark.as_deref()),
        (NO_PERMISSION, Some("The user is existed"))
    );
    let blank = broker.call(request(RequestCode::AUTH_GET_USER, &[])).await;
    assert_eq!(blank.code, ResponseCode::INVALID_PARAMETER.as_i32());

    ok(
        &broker,
        create_acl("User:alice", "Topic:orders", r#""Pub","Sub""#, "Allow"),
    )
    .await;
    ok(
        &broker,
        create_acl("User:alice", "Group:g*", r#""Sub""#, "Allow"),
    )
    .await;
    let acl = ok(
        &broker,
        request(RequestCode::AUTH_GET_ACL, &[("subject", "User:alice")]),
    )
    .await;
    let acl = json(&acl);
    assert_eq!(acl["subject"], "User:alice");
    let entries = &acl["policies"][0]["entries"];
    assert_eq!(acl["policies"][0]["policyType"], "Custom");
    assert_eq!(entries[0]["resource"], "Topic:orders");
    assert_eq!(entries[0]["actions"], serde_json::json!(["Pub", "Sub"]));
    assert_eq!(entries[1]["resource"], "Group:g*");

    let listed = ok(
        &broker,
        request(RequestCode::AUTH_LIST_ACL, &[("resourceFilter", "Group")]),
    )
    .await;
    assert_eq!(
        json(&listed)[0]["policies"][0]["entries"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let users = ok(
        &broker,
        request(RequestCode::AUTH_LIST_USER, &[("filter", "ali")]),
    )
    .await;
    assert_eq!(json(&users).as_array().map(Vec::len), Some(1));

    let bad = broker
        .call(create_acl("User:alice", "Topic:x", r#""Fly""#, "Allow"))
        .await;
    assert_eq!(
        (bad.code, bad.remark.as_deref()),
        (NO_PERMISSION, Some("The action \"Fly\" is illegal."))
    );
    let ghost = broker
        .call(create_acl("User:ghost", "Topic:x", r#""Pub""#, "Allow"))
        .await;
    assert_eq!(
        ghost.remark.as_deref(),
        Some("The subject of User:ghost is not exist.")
    );

    ok(
        &broker,
        request(
            RequestCode::AUTH_DELETE_ACL,
            &[("subject", "User:alice"), ("resource", "Group:g*")],
        ),
    )
    .await;
    let acl = ok(
        &broker,
        request(RequestCode::AUTH_GET_ACL, &[("subject", "User:alice")]),
    )
    .await;
    assert_eq!(
        json(&acl)["policies"][0]["entries"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    ok(
        &broker,
        request(RequestCode::AUTH_DELETE_USER, &[("username", "alice")]),
    )
    .await;
    let gone = ok(
        &broker,
        request(RequestCode::AUTH_GET_USER, &[("username", "alice")]),
    )
    .await;
    assert!(gone.body.is_empty());
    let acl_gone = broker
        .call(request(
            RequestCode::AUTH_GET_ACL,
            &[("subject", "User:alice")],
        ))
        .await;
    assert_eq!(acl_gone.code, NO_PERMISSION);
}

#[tokio::test]
async fn only_a_super_user_makes_or_changes_super_users() {
    let broker = auth_broker(false, None).await;
    ok(
        &broker,
        signed(create_user("bob", "b-pass", "Normal"), ROOT),
    )
    .await;
    let refused = broker
        .call(signed(
            create_user("mallory", "m", "Super"),
            ("bob", "b-pass"),
        ))
        .await;
    assert_eq!(
        refused.remark.as_deref(),
        Some("The super user can only be create by super user")
    );
    assert_ne!(refused.code, SUCCESS);
    let demote = with_body(
        request(RequestCode::AUTH_UPDATE_USER, &[("username", ROOT.0)]),
        r#"{"password":"taken"}"#,
    );
    let refused = broker.call(signed(demote, ("bob", "b-pass"))).await;
    assert_eq!(refused.code, NO_PERMISSION);
    let delete_root = request(RequestCode::AUTH_DELETE_USER, &[("username", ROOT.0)]);
    assert_eq!(
        broker
            .call(signed(delete_root, ("bob", "b-pass")))
            .await
            .code,
        NO_PERMISSION
    );
    ok(&broker, signed(create_user("ops", "o", "Super"), ROOT)).await;
}

#[tokio::test]
async fn with_the_checks_on_requests_pass_only_signed_and_allowed() {
    let broker = auth_broker(true, None).await;
    let topic = ok(&broker, signed(create_topic("orders"), ROOT)).await;
    assert_eq!(topic.code, SUCCESS);
    ok(
        &broker,
        signed(create_user("app", "app-pass", "Normal"), ROOT),
    )
    .await;
    ok(
        &broker,
        signed(
            create_acl("User:app", "Topic:orders", r#""Pub""#, "Allow"),
            ROOT,
        ),
    )
    .await;
    ok(
        &broker,
        signed(create_acl("User:app", "Topic:*", r#""All""#, "Deny"), ROOT),
    )
    .await;

    let send = || send_request("orders", 0, b"hello", "");
    let unsigned = broker.call(send()).await;
    assert_eq!(
        (unsigned.code, unsigned.remark.as_deref()),
        (NO_PERMISSION, Some("username cannot be null."))
    );
    let wrong = broker.call(signed(send(), ("app", "nope"))).await;
    assert_eq!(wrong.remark.as_deref(), Some("check signature failed."));
    ok(&broker, signed(send(), ("app", "app-pass"))).await;
    let elsewhere = broker
        .call(signed(
            send_request("payments", 0, b"x", ""),
            ("app", "app-pass"),
        ))
        .await;
    assert_eq!(elsewhere.code, NO_PERMISSION);
    let remark = elsewhere.remark.unwrap_or_default();
    assert!(
        remark.starts_with("User:app has no permission to access Topic:payments from "),
        "{remark}"
    );
    assert!(remark.ends_with("the decision is deny."), "{remark}");
    assert!(!remark.contains("app-pass"));

    // A normal user cannot manage users: that needs Update on the cluster.
    let sneaky = broker
        .call(signed(
            create_user("eve", "e", "Normal"),
            ("app", "app-pass"),
        ))
        .await;
    assert_eq!(sneaky.code, NO_PERMISSION);
    assert!(sneaky
        .remark
        .unwrap_or_default()
        .contains("Cluster:DefaultCluster"));
    let none = broker
        .call(signed(
            request(RequestCode::AUTH_GET_USER, &[("username", "eve")]),
            ROOT,
        ))
        .await;
    assert!(none.body.is_empty(), "a refused request changed nothing");

    // A disabled user is refused at once.
    let disable = with_body(
        request(RequestCode::AUTH_UPDATE_USER, &[("username", "app")]),
        r#"{"userStatus":"disable"}"#,
    );
    ok(&broker, signed(disable, ROOT)).await;
    let disabled = broker.call(signed(send(), ("app", "app-pass"))).await;
    assert_eq!(disabled.remark.as_deref(), Some("User:app is disabled."));
}

#[tokio::test]
async fn plain_acl_accounts_are_migrated_on_request() {
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir_all(home.path().join("conf")).expect("conf");
    std::fs::write(
        home.path().join("conf/plain_acl.yml"),
        "accounts:\n  - accessKey: legacy\n    secretKey: legacy-secret\n    defaultTopicPerm: DENY\n    topicPerms:\n      - orders=PUB\n",
    )
    .expect("acl file");
    let broker = auth_broker(true, Some(home.path())).await;
    ok(&broker, signed(create_topic("orders"), ROOT)).await;
    ok(
        &broker,
        signed(
            send_request("orders", 0, b"x", ""),
            ("legacy", "legacy-secret"),
        ),
    )
    .await;
    let denied = broker
        .call(signed(
            send_request("other", 0, b"x", ""),
            ("legacy", "legacy-secret"),
        ))
        .await;
    assert_eq!(denied.code, NO_PERMISSION);
}
