//! RocketMQ 5.4's priority messages over an in-memory connection to a real broker: a send
//! goes to the queue of its priority, and POP serves the highest priority first.

use stellmq_remoting::protocol::body::{fastjson, SubscriptionGroupConfig};
use stellmq_remoting::protocol::headers::{
    CommandHeader, CreateTopicRequestHeader, PopMessageRequestHeader, SendMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{property, MessageRecord, Properties};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, pull_request, send_request, Fixture};

const TOPIC: &str = "Prio";
const GROUP: &str = "prio_group";

fn create_topic(topic: &str, queues: i32, attributes: &str) -> RemotingCommand {
    let header = CreateTopicRequestHeader {
        topic: topic.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        attributes: Some(attributes.into()),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
}

fn update_group(config: &SubscriptionGroupConfig) -> RemotingCommand {
    RemotingCommand::request(
        RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        ExtFields::default(),
    )
    .with_body(fastjson::encode(config))
}

fn props(entries: &[(&str, &str)]) -> String {
    let mut p = Properties::new();
    for (k, v) in entries {
        p.insert(*k, *v);
    }
    p.encode()
}

/// Sends `body` to queue 0 with `entries`; the queue the broker put it in.
async fn send(broker: &Fixture, body: &str, entries: &[(&str, &str)]) -> i32 {
    let response = broker
        .call(send_request(TOPIC, 0, body.as_bytes(), &props(entries)))
        .await;
    assert_success(&response);
    SendMessageResponseHeader::from_ext_fields(&response.ext_fields)
        .expect("a send header")
        .queue_id
}

/// One POP of at most `max` messages of every queue: (queue, body) of each.
async fn pop(broker: &Fixture, max: i32) -> Vec<(i32, String)> {
    let header = PopMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id: -1,
        max_msg_nums: max,
        invisible_time: 60_000,
        poll_time: 0,
        init_mode: Some(0),
        ..Default::default()
    };
    let response = broker
        .call(RemotingCommand::request(
            RequestCode::POP_MESSAGE,
            header.to_ext_fields(),
        ))
        .await;
    if response.code != ResponseCode::SUCCESS.as_i32() {
        return Vec::new();
    }
    MessageRecord::decode_all(response.body.clone(), true)
        .expect("records")
        .into_iter()
        .map(|r| {
            (
                r.head.queue_id,
                String::from_utf8_lossy(&r.body).into_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_priority_message_goes_to_the_queue_of_its_priority() {
    let broker = Fixture::start().await;
    assert_success(
        &broker
            .call(create_topic(TOPIC, 8, "+message.type=PRIORITY"))
            .await,
    );
    for (priority, queue) in [("0", 0), ("3", 3), ("7", 7), ("42", 7)] {
        let placed = send(&broker, priority, &[(property::PRIORITY, priority)]).await;
        assert_eq!(placed, queue, "priority {priority}");
    }
    // Not a priority: a negative or unreadable value, or none at all.
    assert_eq!(send(&broker, "neg", &[(property::PRIORITY, "-2")]).await, 0);
    assert_eq!(send(&broker, "plain", &[]).await, 0);
    // A FIFO message keeps its queue and loses the priority, as in RocketMQ.
    let fifo = [
        (property::PRIORITY, "5"),
        (property::SHARDING_KEY, "order-1"),
    ];
    assert_eq!(send(&broker, "fifo", &fifo).await, 0);
    broker.dispatched().await;
    let pulled = broker.call(pull_request("reader", TOPIC, 0, 0, 0)).await;
    assert_success(&pulled);
    let records = MessageRecord::decode_all(pulled.body.clone(), true).expect("records");
    let fifo = records
        .iter()
        .find(|r| r.body.as_ref() == b"fifo")
        .expect("the FIFO message");
    assert_eq!(fifo.properties.get(property::PRIORITY), None);
    assert_eq!(fifo.properties.get(property::SHARDING_KEY), Some("order-1"));
}

#[tokio::test]
async fn pop_serves_the_highest_priority_first() {
    let broker = Fixture::start().await;
    assert_success(
        &broker
            .call(create_topic(TOPIC, 8, "+message.type=PRIORITY"))
            .await,
    );
    for priority in [2, 0, 7, 5, 1, 6, 3, 4] {
        let p = priority.to_string();
        send(&broker, &format!("p{p}"), &[(property::PRIORITY, &p)]).await;
    }
    broker.dispatched().await;
    let mut order = Vec::new();
    for _ in 0..8 {
        let got = pop(&broker, 1).await;
        assert_eq!(got.len(), 1, "one message a POP: {got:?}");
        order.push(got[0].1.clone());
    }
    assert_eq!(order, ["p7", "p6", "p5", "p4", "p3", "p2", "p1", "p0"]);
    assert!(pop(&broker, 1).await.is_empty());
}

#[tokio::test]
async fn a_batch_pop_fills_from_the_highest_priority_down() {
    let broker = Fixture::start().await;
    assert_success(
        &broker
            .call(create_topic(TOPIC, 4, "+message.type=PRIORITY"))
            .await,
    );
    for (body, priority) in [("low-a", "0"), ("low-b", "0"), ("high", "3"), ("mid", "2")] {
        send(&broker, body, &[(property::PRIORITY, priority)]).await;
    }
    broker.dispatched().await;
    let bodies: Vec<String> = pop(&broker, 3).await.into_iter().map(|(_, b)| b).collect();
    assert_eq!(bodies, ["high", "mid", "low-a"]);
}

#[tokio::test]
async fn the_priority_factor_is_a_checked_group_attribute() {
    let broker = Fixture::start().await;
    let mut config = SubscriptionGroupConfig::new(GROUP);
    config
        .attributes
        .insert("+priority.factor".into(), "30".into());
    assert_success(&broker.call(update_group(&config)).await);
    let stored = broker.state.groups.get(GROUP).expect("the group");
    assert_eq!(stored.priority_factor(), 30);
    assert_eq!(
        stored.attributes.get("priority.factor").map(String::as_str),
        Some("30")
    );

    config.attributes.clear();
    config
        .attributes
        .insert("+priority.factor".into(), "101".into());
    let refused = broker.call(update_group(&config)).await;
    assert_eq!(refused.code, ResponseCode::INVALID_PARAMETER.as_i32());
    assert!(
        refused.remark_str().contains("priority.factor"),
        "{}",
        refused.remark_str()
    );
    config.attributes.clear();
    config.attributes.insert("+no.such".into(), "1".into());
    let unknown = broker.call(update_group(&config)).await;
    assert_eq!(unknown.code, ResponseCode::INVALID_PARAMETER.as_i32());

    // Changes without attributes keep the group's; `-key` removes one.
    config.attributes.clear();
    config.retry_max_times = 3;
    assert_success(&broker.call(update_group(&config)).await);
    assert_eq!(
        broker
            .state
            .groups
            .get(GROUP)
            .expect("group")
            .priority_factor(),
        30
    );
    config
        .attributes
        .insert("-priority.factor".into(), String::new());
    assert_success(&broker.call(update_group(&config)).await);
    assert_eq!(
        broker
            .state
            .groups
            .get(GROUP)
            .expect("group")
            .priority_factor(),
        100
    );
}
