//! ACL 2.0 across a controller-mode fail-over: users and policies made on the master reach
//! its slave, and once the controller (played here through the [`RoleSwitcher`]) promotes
//! the slave, the new master enforces the same policies.

use stellmq_broker::ha::sync_state::SyncStateSet;
use stellmq_remoting::protocol::signature::{sign, SessionCredentials};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{eventually_within, request, NameServer, RawClient, TestBroker};

const TOPIC: &str = "AuthRoleTopic";
const INNER: &str = r#"{"accessKey":"inner","secretKey":"inner-secret"}"#;
const ROOT: (&str, &str) = ("root", "r00t");
const APP: (&str, &str) = ("app", "app-pass");

async fn broker(ns: &NameServer, id: i64) -> TestBroker {
    TestBroker::start(ns.addr(), |c| {
        c.broker.enable_controller_mode = true;
        c.broker.broker_id = id;
        c.store.sync_flush_timeout = 1_500;
        c.broker.authentication_enabled = true;
        c.broker.authorization_enabled = true;
        c.broker.init_authentication_user = r#"{"username":"root","password":"r00t"}"#.into();
        c.broker.inner_client_authentication_credentials = INNER.into();
    })
    .await
}

fn set(ids: &[i64], epoch: i32) -> SyncStateSet {
    SyncStateSet {
        members: ids.iter().copied().collect(),
        epoch,
    }
}

fn signed(mut r: RemotingCommand, (user, password): (&str, &str)) -> RemotingCommand {
    sign(&mut r, &SessionCredentials::new(user, password));
    r
}

fn with_body(mut r: RemotingCommand, body: &str) -> RemotingCommand {
    r.body = body.as_bytes().to_vec().into();
    r
}

fn send(topic: &str) -> RemotingCommand {
    stellmq_testkit::send_request(topic, 0, b"x", &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_slave_enforces_the_policies_made_on_the_old_master() {
    let ns = NameServer::start().await;
    let a = broker(&ns, 1).await;
    let b = broker(&ns, 2).await;
    let roles = |x: &TestBroker| x.roles().expect("a role switcher").clone();
    roles(&a)
        .change_to_master(1, set(&[1], 1))
        .await
        .expect("a master");
    roles(&b)
        .change_to_slave(a.addr(), a.ha_addr(), 1, 2)
        .await
        .expect("b slave");
    let on_a = RawClient::new(a.addr());
    let ok = |r: &RemotingCommand| r.code == ResponseCode::SUCCESS.as_i32();
    let topic = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", TOPIC),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "1"),
            ("writeQueueNums", "1"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
        ],
    );
    assert!(ok(&on_a.call(signed(topic, ROOT)).await));
    let user = with_body(
        request(RequestCode::AUTH_CREATE_USER, &[("username", APP.0)]),
        r#"{"username":"app","password":"app-pass"}"#,
    );
    assert!(ok(&on_a.call(signed(user, ROOT)).await));
    let acl = with_body(
        request(RequestCode::AUTH_CREATE_ACL, &[("subject", "User:app")]),
        &format!(
            r#"{{"subject":"User:app","policies":[{{"entries":[{{"resource":"Topic:{TOPIC}","actions":["Pub","Get"],"decision":"Allow"}}]}}]}}"#
        ),
    );
    assert!(ok(&on_a.call(signed(acl, ROOT)).await));
    let sent = on_a.call(signed(send(TOPIC), APP)).await;
    assert!(ok(&sent), "{}", sent.remark_str());

    let on_b = RawClient::new(b.addr());
    let get_user = || request(RequestCode::AUTH_GET_USER, &[("username", APP.0)]);
    eventually_within(
        "the slave has the user",
        stellmq_testkit::TIMEOUT,
        async || {
            let r = on_b.call(signed(get_user(), ROOT)).await;
            ok(&r) && !r.body.is_empty()
        },
    )
    .await;
    eventually_within(
        "the slave has the policy",
        stellmq_testkit::TIMEOUT,
        async || {
            let r = on_b
                .call(signed(
                    request(RequestCode::AUTH_GET_ACL, &[("subject", "User:app")]),
                    ROOT,
                ))
                .await;
            ok(&r) && String::from_utf8_lossy(&r.body).contains(TOPIC)
        },
    )
    .await;

    // b is elected (epoch 2); a follows it.
    roles(&b)
        .change_to_master(2, set(&[2], 1))
        .await
        .expect("b master");
    roles(&a)
        .change_to_slave(b.addr(), b.ha_addr(), 2, 1)
        .await
        .expect("a slave");
    let promoted = on_b.call(signed(send(TOPIC), APP)).await;
    assert!(ok(&promoted), "{}", promoted.remark_str());
    let elsewhere = on_b.call(signed(send("AuthElsewhere"), APP)).await;
    assert_eq!(elsewhere.code, ResponseCode::NO_PERMISSION.as_i32());
    assert!(
        elsewhere
            .remark_str()
            .contains("User:app has no permission"),
        "{}",
        elsewhere.remark_str()
    );
    let unsigned = on_b.call(send(TOPIC)).await;
    assert_eq!(unsigned.remark_str(), "username cannot be null.");

    on_a.shutdown().await;
    on_b.shutdown().await;
}
