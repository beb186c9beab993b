//! UPDATE_BROKER_CONFIG and GET_BROKER_CONFIG as mqadmin's updateBrokerConfig and
//! getBrokerConfig see them, over an in-memory connection to a real broker.

use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, request, send_request, Fixture};

fn update(properties: &'static str) -> RemotingCommand {
    request(RequestCode::UPDATE_BROKER_CONFIG, &[]).with_body(properties.as_bytes())
}

#[tokio::test]
async fn a_changed_key_is_served_back_with_a_new_version() {
    let broker = Fixture::start().await;
    assert_success(&broker.call(update("autoCreateTopicEnable=false\n")).await);
    let config = broker
        .call(request(RequestCode::GET_BROKER_CONFIG, &[]))
        .await;
    assert_success(&config);
    let text = String::from_utf8_lossy(&config.body).to_string();
    assert!(text.contains("autoCreateTopicEnable=false\n"), "{text}");
    assert!(text.contains("flushDiskType=ASYNC_FLUSH\n"), "{text}");
    assert!(config
        .ext_fields
        .get("version")
        .is_some_and(|v| v.contains("counter")));
    // And in force: an unknown topic is no longer created by a send.
    let send = broker.call(send_request("Unknown", 0, b"x", "")).await;
    assert_eq!(send.code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
}

#[tokio::test]
async fn identity_keys_and_bad_values_are_refused() {
    let broker = Fixture::start().await;
    let blocked = broker.call(update("brokerName=other\n")).await;
    assert_eq!(blocked.code, ResponseCode::NO_PERMISSION.as_i32());
    let bad = broker.call(update("defaultTopicQueueNums=many\n")).await;
    assert_eq!(bad.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(bad
        .remark
        .is_some_and(|r| r.contains("defaultTopicQueueNums")));
}

#[tokio::test]
async fn a_broker_without_write_permission_refuses_sends() {
    let broker = Fixture::start().await;
    assert_success(&broker.call(send_request("Rt", 0, b"m", "")).await);
    assert_success(&broker.call(update("brokerPermission=4\n")).await);
    let refused = broker.call(send_request("Rt", 0, b"m", "")).await;
    assert_eq!(refused.code, ResponseCode::NO_PERMISSION.as_i32());
}

#[tokio::test]
async fn group_auto_creation_follows_a_runtime_change() {
    let broker = Fixture::start().await;
    assert_success(
        &broker
            .call(update("autoCreateSubscriptionGroup=false\n"))
            .await,
    );
    let pull = crate::testing::pull_request("never_seen", "Rt", 0, 0, 0);
    assert_success(&broker.call(send_request("Rt", 0, b"m", "")).await);
    let refused = broker.call(pull).await;
    assert_eq!(
        refused.code,
        ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST.as_i32(),
        "{:?}",
        refused.remark
    );
    assert!(broker.state.groups.get("never_seen").is_none());
}
