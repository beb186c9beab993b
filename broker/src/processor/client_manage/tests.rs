//! Client heartbeats and group membership, over in-memory connections to a real broker.

use std::time::Duration;

use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{eventually, heartbeat, Client, Fixture};

const GROUP: &str = "members";

async fn beat(client: &Client, client_id: &str) {
    let response = client
        .channel
        .invoke(heartbeat(client_id, GROUP, "Feed"), Duration::from_secs(10))
        .await
        .expect("answered");
    assert_eq!(response.code, ResponseCode::SUCCESS.as_i32());
}

/// The next NOTIFY_CONSUMER_IDS_CHANGED the broker sent `client`, naming `group`.
async fn notified(client: &mut Client, group: &str) {
    let asked = tokio::time::timeout(Duration::from_secs(10), client.asked.recv())
        .await
        .expect("a notification within 10 s")
        .expect("the connection is open");
    assert_eq!(
        asked.code,
        RequestCode::NOTIFY_CONSUMER_IDS_CHANGED.as_i32()
    );
    assert_eq!(asked.ext_fields.get("consumerGroup"), Some(group));
}

#[tokio::test]
async fn members_are_told_when_a_consumer_joins_and_when_its_connection_closes() {
    let broker = Fixture::start().await;
    let mut first = broker.connect(2);
    beat(&first, "first@1").await;
    notified(&mut first, GROUP).await;
    let second = broker.connect(3);
    beat(&second, "second@1").await;
    notified(&mut first, GROUP).await;
    assert_eq!(broker.state.consumers.client_ids(GROUP).len(), 2);

    second.channel.close();
    notified(&mut first, GROUP).await;
    eventually("the closed consumer is forgotten", || {
        broker.state.consumers.client_ids(GROUP) == vec!["first@1".to_owned()]
    })
    .await;
}

#[tokio::test]
async fn a_repeated_heartbeat_changes_nothing_and_tells_no_one() {
    let broker = Fixture::start().await;
    let mut client = broker.connect(2);
    beat(&client, "steady@1").await;
    notified(&mut client, GROUP).await;
    beat(&client, "steady@1").await;
    assert!(
        client.asked.try_recv().is_err(),
        "an unchanged group is not announced"
    );
}

#[tokio::test]
async fn a_heartbeat_with_a_broken_body_is_refused_and_registers_nothing() {
    let broker = Fixture::start().await;
    let response = broker
        .call(
            RemotingCommand::request(RequestCode::HEART_BEAT, ExtFields::default())
                .with_body(&b"{\"clientID\": [not json"[..]),
        )
        .await;
    assert_ne!(response.code, ResponseCode::SUCCESS.as_i32());
    assert!(response.remark.is_some_and(|r| !r.is_empty()));
    assert!(broker.state.consumers.client_ids(GROUP).is_empty());
}

fn group_request(code: RequestCode) -> RemotingCommand {
    crate::testing::request(code, &[("consumerGroup", GROUP)])
}

#[tokio::test]
async fn members_are_listed_with_their_connections_and_the_group_gets_its_retry_topic() {
    use stellmq_remoting::protocol::body::{fastjson, ConsumerConnection, ConsumerIdList};
    let broker = Fixture::start().await;
    let first = broker.connect(2);
    beat(&first, "first@1").await;
    let second = broker.connect(3);
    beat(&second, "second@1").await;
    let list = broker
        .call(group_request(RequestCode::GET_CONSUMER_LIST_BY_GROUP))
        .await;
    let ids: ConsumerIdList = fastjson::decode(&list.body).expect("ids");
    assert_eq!(ids.consumer_id_list, ["first@1", "second@1"]);
    let connections = broker
        .call(group_request(RequestCode::GET_CONSUMER_CONNECTION_LIST))
        .await;
    let connections: ConsumerConnection = fastjson::decode(&connections.body).expect("connections");
    assert_eq!(connections.connection_set.len(), 2);
    assert!(connections.subscription_table.contains_key("Feed"));
    assert!(broker.state.topics.contains(&format!("%RETRY%{GROUP}")));
}

#[tokio::test]
async fn an_unregistered_consumer_leaves_and_an_empty_group_is_offline() {
    let broker = Fixture::start().await;
    let mut first = broker.connect(2);
    beat(&first, "first@1").await;
    notified(&mut first, GROUP).await;
    let second = broker.connect(3);
    beat(&second, "second@1").await;
    notified(&mut first, GROUP).await;
    let leave = |client_id: &str| {
        crate::testing::request(
            RequestCode::UNREGISTER_CLIENT,
            &[
                ("clientID", client_id),
                ("consumerGroup", GROUP),
                ("producerGroup", ""),
            ],
        )
    };
    let left = second
        .channel
        .invoke(leave("second@1"), Duration::from_secs(10))
        .await
        .expect("answered");
    assert_eq!(left.code, ResponseCode::SUCCESS.as_i32());
    notified(&mut first, GROUP).await;
    assert_eq!(broker.state.consumers.client_ids(GROUP), ["first@1"]);
    let left = first
        .channel
        .invoke(leave("first@1"), Duration::from_secs(10))
        .await
        .expect("answered");
    assert_eq!(left.code, ResponseCode::SUCCESS.as_i32());
    let none = broker
        .call(group_request(RequestCode::GET_CONSUMER_LIST_BY_GROUP))
        .await;
    assert_eq!(none.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(none
        .remark
        .is_some_and(|r| r.contains("no consumer for this group")));
    let offline = broker
        .call(group_request(RequestCode::GET_CONSUMER_CONNECTION_LIST))
        .await;
    assert_eq!(offline.code, ResponseCode::CONSUMER_NOT_ONLINE.as_i32());
}
