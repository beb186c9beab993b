//! ACL 2.0 in a master-slave group: users and policies made on the master reach the slave
//! (its sync signs with the inner credentials), so a slave serving reads, or promoted,
//! enforces the same; a user deleted on the master is gone from the slave too.

use std::time::Duration;

use stellmq_remoting::protocol::signature::{sign, SessionCredentials};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{request, Stack};

const INNER: &str = r#"{"accessKey":"inner","secretKey":"inner-secret"}"#;
const ROOT: (&str, &str) = ("root", "r00t-pass");
const APP: (&str, &str) = ("app", "app-pass");
const T: Duration = Duration::from_secs(30);

fn auth_on(c: &mut stellmq_broker::BrokerStartConfig) {
    c.broker.authentication_enabled = true;
    c.broker.authorization_enabled = true;
    c.broker.init_authentication_user = r#"{"username":"root","password":"r00t-pass"}"#.into();
    c.broker.inner_client_authentication_credentials = INNER.into();
}

fn signed(mut request: RemotingCommand, (user, password): (&str, &str)) -> RemotingCommand {
    sign(&mut request, &SessionCredentials::new(user, password));
    request
}

fn with_body(mut request: RemotingCommand, body: &str) -> RemotingCommand {
    request.body = body.as_bytes().to_vec().into();
    request
}

fn max_offset(topic: &str) -> RemotingCommand {
    request(
        RequestCode::GET_MAX_OFFSET,
        &[("topic", topic), ("queueId", "0")],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_and_policies_made_on_the_master_are_enforced_by_its_slave() {
    let stack = Stack::start_with(|c| {
        stellmq_testkit::Role::SyncMaster.apply(c);
        auth_on(c);
    })
    .await;
    let slave = stack.start_slave(1, auth_on).await;
    let create_topic = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", "AuthReplicated"),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "1"),
            ("writeQueueNums", "1"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
        ],
    );
    let ok = |r: &RemotingCommand| r.code == ResponseCode::SUCCESS.as_i32();
    let answer = stack.call(signed(create_topic, ROOT)).await;
    assert!(ok(&answer), "{:?}", answer.remark);
    let create_user = with_body(
        request(RequestCode::AUTH_CREATE_USER, &[("username", APP.0)]),
        r#"{"username":"app","password":"app-pass"}"#,
    );
    let answer = stack.call(signed(create_user, ROOT)).await;
    assert!(ok(&answer), "{:?}", answer.remark);
    let create_acl = with_body(
        request(RequestCode::AUTH_CREATE_ACL, &[("subject", "User:app")]),
        r#"{"subject":"User:app","policies":[{"entries":[{"resource":"Topic:AuthReplicated","actions":["Get"],"decision":"Allow"}]}]}"#,
    );
    let answer = stack.call(signed(create_acl, ROOT)).await;
    assert!(ok(&answer), "{:?}", answer.remark);
    assert!(ok(&stack
        .call(signed(max_offset("AuthReplicated"), APP))
        .await));

    let on_slave = stellmq_testkit::RawClient::new(slave.addr());
    stellmq_testkit::eventually_within("the slave knows the user and its policy", T, async || {
        ok(&on_slave
            .call(signed(max_offset("AuthReplicated"), APP))
            .await)
    })
    .await;
    let other = on_slave.call(signed(max_offset("TBW102"), APP)).await;
    assert_eq!(
        other.code,
        ResponseCode::NO_PERMISSION.as_i32(),
        "{:?}",
        other.remark
    );

    let delete = request(RequestCode::AUTH_DELETE_USER, &[("username", APP.0)]);
    assert!(ok(&stack.call(signed(delete, ROOT)).await));
    stellmq_testkit::eventually_within("the slave forgets the deleted user", T, async || {
        let r = on_slave
            .call(signed(max_offset("AuthReplicated"), APP))
            .await;
        r.remark.as_deref() == Some("User:app is not found.")
    })
    .await;
    on_slave.shutdown().await;
    slave.shutdown().await;
    stack.stop().await;
}
