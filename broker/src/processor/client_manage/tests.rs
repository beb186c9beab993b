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
