//! A broker with aclEnable: signed requests of known accounts pass as their permissions
//! allow, everything else is refused with NO_PERMISSION and stores nothing, admin requests
//! need an admin account, and edits on disk apply (the ACL admin requests are tested next to
//! their processor: broker/src/processor/admin/acl/tests.rs).

use std::path::Path;
use std::time::Duration;

use stellmq_remoting::protocol::body::MessageModel;
use stellmq_remoting::protocol::signature::{sign, SessionCredentials};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use stellmq_testkit::{eventually, heartbeat, request, send_request, Pull, Stack};

const SUCCESS: i32 = 0;
const NO_PERMISSION: i32 = 16;

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
    whiteRemoteAddress: 10.99.*.*
    admin: true
"#;

const USER: (&str, &str) = ("RocketMQ", "12345678");
const ADMIN: (&str, &str) = ("rocketmq2", "87654321");

fn write_acl(home: &Path, text: &str) {
    std::fs::create_dir_all(home.join("conf")).expect("conf dir");
    std::fs::write(home.join("conf/plain_acl.yml"), text).expect("acl file");
}

async fn acl_stack(home: &Path) -> Stack {
    write_acl(home, ACL);
    let home = home.display().to_string();
    Stack::start_with(move |c| {
        c.broker.acl_enable = true;
        c.broker.rocketmq_home = home;
    })
    .await
}

fn signed(mut request: RemotingCommand, (ak, sk): (&str, &str)) -> RemotingCommand {
    sign(&mut request, &SessionCredentials::new(ak, sk));
    request
}

fn send(topic: &str, body: &str) -> RemotingCommand {
    send_request(topic, 0, body.as_bytes(), &[])
}

fn with_field(mut request: RemotingCommand, key: &str, value: &str) -> RemotingCommand {
    request.ext_fields.insert(key, value);
    request
}

async fn max_offset(stack: &Stack, topic: &str) -> i64 {
    let r = stack
        .call(signed(
            request(
                RequestCode::GET_MAX_OFFSET,
                &[("topic", topic), ("queueId", "0")],
            ),
            ADMIN,
        ))
        .await;
    r.ext_fields
        .get("offset")
        .and_then(|o| o.parse().ok())
        .unwrap_or(-1)
}

#[tokio::test]
async fn signed_account_sends_and_pulls_within_its_permissions() {
    let home = tempfile::tempdir().expect("home");
    let stack = acl_stack(home.path()).await;
    let sent = stack.call(signed(send("topicB", "hello"), USER)).await;
    assert_eq!(sent.code, SUCCESS, "{:?}", sent.remark);
    let hb = heartbeat("c1", "groupB", &[("topicB", "*")], MessageModel::Clustering);
    let registered = stack.call(signed(hb, USER)).await;
    assert_eq!(registered.code, SUCCESS, "{:?}", registered.remark);
    let hb_denied = heartbeat("c1", "groupA", &[("topicB", "*")], MessageModel::Clustering);
    assert_eq!(
        stack.call(signed(hb_denied, USER)).await.code,
        NO_PERMISSION,
        "groupA is DENY"
    );
    eventually("the signed pull finds the message", async || {
        let pull = signed(Pull::new("groupB", "topicB", 0, 0).to_request(), USER);
        let pulled = stack.call(pull).await;
        pulled.code == SUCCESS && !pulled.body.is_empty()
    })
    .await;
    stack.stop().await;
}

#[tokio::test]
async fn refused_requests_answer_no_permission_and_store_nothing() {
    let home = tempfile::tempdir().expect("home");
    let stack = acl_stack(home.path()).await;
    let before = stack.broker().handle().store().commit_log_max_offset();
    let cases = [
        (
            "wrong secret",
            signed(send("topicB", "x"), ("RocketMQ", "not-the-secret")),
            "Check signature failed for accessKey=RocketMQ",
        ),
        (
            "unknown key",
            signed(send("topicB", "x"), ("Stranger1", "12345678")),
            "No acl config for Stranger1",
        ),
        (
            "no credentials",
            send("topicB", "x"),
            "No accessKey is configured",
        ),
        (
            "DENY topic",
            signed(send("topicA", "x"), USER),
            "No permission for topic=topicA",
        ),
        (
            "SUB-only topic",
            signed(send("topicC", "x"), USER),
            "No permission for topic=topicC",
        ),
        (
            "default DENY",
            signed(send("topicZ", "x"), USER),
            "No default permission for topic=topicZ",
        ),
        (
            "white-list miss",
            with_field(send("topicB", "x"), "AccessKey", "rocketmq2"),
            "Check signature failed for accessKey=rocketmq2",
        ),
    ];
    for (case, request, remark) in cases {
        let r = stack.call(request).await;
        assert_eq!(r.code, NO_PERMISSION, "{case}: {:?}", r.remark);
        let text = r.remark.unwrap_or_default();
        assert!(text.contains(remark), "{case}: {text}");
        assert!(
            !text.contains("12345678") && !text.contains("87654321"),
            "{case}: {text}"
        );
    }
    let denied_group = stack
        .call(signed(
            Pull::new("groupA", "topicB", 0, 0).to_request(),
            USER,
        ))
        .await;
    assert_eq!(
        denied_group.code, NO_PERMISSION,
        "{:?}",
        denied_group.remark
    );
    assert_eq!(
        stack.broker().handle().store().commit_log_max_offset(),
        before,
        "nothing was stored"
    );
    assert!(max_offset(&stack, "topicA").await <= 0);
    stack.stop().await;
}

#[tokio::test]
async fn only_admins_change_topics_groups_and_offsets() {
    let home = tempfile::tempdir().expect("home");
    let stack = acl_stack(home.path()).await;
    let create = || {
        request(
            RequestCode::UPDATE_AND_CREATE_TOPIC,
            &[
                ("topic", "topicB"),
                ("defaultTopic", "TBW102"),
                ("readQueueNums", "4"),
                ("writeQueueNums", "4"),
                ("perm", "6"),
                ("topicFilterType", "SINGLE_TAG"),
                ("topicSysFlag", "0"),
                ("order", "false"),
            ],
        )
    };
    let admin_only = [
        create(),
        request(RequestCode::DELETE_TOPIC_IN_BROKER, &[("topic", "topicB")]),
        request(
            RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
            &[
                ("topic", "topicB"),
                ("group", "groupB"),
                ("timestamp", "0"),
                ("isForce", "true"),
            ],
        ),
        request(RequestCode::UPDATE_BROKER_CONFIG, &[]),
        request(RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG, &[]),
    ];
    for r in admin_only {
        let code = r.code;
        let answer = stack.call(signed(r, USER)).await;
        assert_eq!(
            answer.code, NO_PERMISSION,
            "code {code}: {:?}",
            answer.remark
        );
        assert!(
            answer
                .remark
                .unwrap_or_default()
                .contains("Need admin permission"),
            "code {code}"
        );
    }
    let created = stack.call(signed(create(), ADMIN)).await;
    assert_eq!(created.code, SUCCESS, "{:?}", created.remark);
    stack.stop().await;
}

#[tokio::test]
async fn a_changed_acl_file_applies_while_the_broker_runs() {
    let home = tempfile::tempdir().expect("home");
    let stack = acl_stack(home.path()).await;
    assert_eq!(
        stack.call(signed(send("topicA", "x"), USER)).await.code,
        NO_PERMISSION
    );
    write_acl(home.path(), &ACL.replace("topicA=DENY", "topicA=PUB"));
    eventually("the changed ACL file applies", async || {
        stack.call(signed(send("topicA", "x"), USER)).await.code == SUCCESS
    })
    .await;
    // A broken file keeps the last good ACL in force: acl/tests/validator.rs
    // `changed_file_reloads_and_broken_file_keeps_the_last_good` (the watcher only calls it).
    stack.stop().await;
}

#[tokio::test]
async fn a_broken_acl_file_stops_the_start_with_its_reason() {
    let home = tempfile::tempdir().expect("home");
    write_acl(home.path(), "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    topicPerms: [topicA=WRITE]\n");
    let ns = stellmq_testkit::NameServer::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let mut config =
        stellmq_testkit::broker_config(&dir.path().join("store"), ns.addr(), "broker-a");
    config.broker.acl_enable = true;
    config.broker.rocketmq_home = home.path().display().to_string();
    let error = stellmq_broker::start(config).await.err().expect("refused");
    assert!(error.to_string().contains("topicA=WRITE"), "{error}");
    ns.shutdown().await;
}

/// A group running the ACL: slaves authenticate on the HA port with the secret of the
/// brokers' inner credentials, and sign their metadata sync from the master with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slaves_authenticate_replication_and_sync_with_inner_credentials() {
    const INNER: &str = r#"{"accessKey":"rocketmq2","secretKey":"87654321"}"#;
    const T: Duration = Duration::from_secs(20);
    let home = tempfile::tempdir().expect("home");
    write_acl(home.path(), ACL);
    let home_dir = home.path().display().to_string();
    let acl_on = move |c: &mut stellmq_broker::BrokerStartConfig| {
        c.broker.acl_enable = true;
        c.broker.rocketmq_home = home_dir.clone();
    };
    let master_acl = acl_on.clone();
    let stack = Stack::start_with(move |c| {
        stellmq_testkit::Role::SyncMaster.apply(c);
        master_acl(c);
        c.broker.inner_client_authentication_credentials = INNER.into();
    })
    .await;
    let ha = stack.broker().ha_master().expect("a master").clone();

    let stranger_acl = acl_on.clone();
    let stranger = stack.start_slave(1, move |c| stranger_acl(c)).await;
    stellmq_testkit::wait_for("the slave without credentials is refused", T, || {
        ha.refused_peers() > 0
    })
    .await;
    let unreplicated = stack.call(signed(send("topicB", "x"), USER)).await;
    assert_eq!(
        unreplicated.code,
        stellmq_remoting::protocol::ResponseCode::SLAVE_NOT_AVAILABLE.as_i32(),
        "SLAVE_NOT_AVAILABLE: {:?}",
        unreplicated.remark
    );
    stranger.shutdown().await;

    let slave = stack
        .start_slave(1, move |c| {
            acl_on(c);
            c.broker.inner_client_authentication_credentials = INNER.into();
        })
        .await;
    stellmq_testkit::wait_for("the slave with credentials is admitted", T, || {
        ha.has_slaves()
    })
    .await;
    let sent = stack.call(signed(send("topicB", "replicated"), USER)).await;
    assert_eq!(sent.code, SUCCESS, "{:?}", sent.remark);

    let update = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "groupB"),
            ("topic", "topicB"),
            ("queueId", "0"),
            ("commitOffset", "1"),
        ],
    );
    assert_eq!(stack.call(signed(update, USER)).await.code, SUCCESS);
    let on_slave = stellmq_testkit::RawClient::new(slave.addr());
    let query = request(
        RequestCode::QUERY_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "groupB"),
            ("topic", "topicB"),
            ("queueId", "0"),
        ],
    );
    stellmq_testkit::eventually_within(
        "the slave's signed sync copies the offset",
        T,
        async || {
            let r = on_slave.call(signed(query.clone(), USER)).await;
            r.code == SUCCESS && r.ext_fields.get("offset") == Some("1")
        },
    )
    .await;
    on_slave.shutdown().await;
    slave.shutdown().await;
    stack.stop().await;
}
