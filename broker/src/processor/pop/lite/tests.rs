//! Lite topics as a lite consumer (through mqproxy) sees them, over an in-memory connection
//! to a real broker: subscribe, POP_LITE_MESSAGE, ack and redelivery with the lite topic.

use std::time::Duration;

use stellmq_remoting::protocol::body::lite::{LiteSubscriptionCtlRequestBody, LiteSubscriptionDto};
use stellmq_remoting::protocol::body::{fastjson, SubscriptionGroupConfig};
use stellmq_remoting::protocol::headers::{
    AckMessageRequestHeader, CommandHeader, CreateTopicRequestHeader, PopLiteMessageRequestHeader,
    PopLiteMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{property, MessageRecord, Properties};
use stellmq_remoting::protocol::pop::{ExtraInfo, TopicType, POP_ORDER_REVIVE_QUEUE};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, send_request, Fixture};

const TOPIC: &str = "Chat";
const GROUP: &str = "lite_group";
const CLIENT: &str = "client-1";

fn create_topic(topic: &str, kind: &str) -> RemotingCommand {
    let header = CreateTopicRequestHeader {
        topic: topic.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: 4,
        write_queue_nums: 4,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        attributes: Some(format!("+message.type={kind}")),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
}

fn create_group(group: &str, bind: Option<&str>) -> RemotingCommand {
    let mut config = SubscriptionGroupConfig::new(group);
    if let Some(topic) = bind {
        config
            .attributes
            .insert("+lite.bind.topic".into(), topic.into());
    }
    RemotingCommand::request(
        RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        ExtFields::default(),
    )
    .with_body(fastjson::encode(&config))
}

fn ctl(action: &str, client: &str, lites: &[&str]) -> RemotingCommand {
    let body = LiteSubscriptionCtlRequestBody {
        subscription_set: vec![LiteSubscriptionDto {
            action: action.into(),
            client_id: client.into(),
            group: GROUP.into(),
            topic: TOPIC.into(),
            lite_topic_set: lites.iter().map(|l| (*l).to_owned()).collect(),
            version: None,
        }],
    };
    RemotingCommand::request(RequestCode::LITE_SUBSCRIPTION_CTL, ExtFields::default())
        .with_body(fastjson::encode(&body))
}

async fn send_lite(broker: &Fixture, body: &str, lite: &str) {
    let mut props = Properties::new();
    props.insert(property::LITE_TOPIC, lite);
    assert_success(
        &broker
            .call(send_request(TOPIC, 1, body.as_bytes(), &props.encode()))
            .await,
    );
}

fn pop_request(topic: &str, group: &str) -> RemotingCommand {
    let header = PopLiteMessageRequestHeader {
        client_id: CLIENT.into(),
        consumer_group: group.into(),
        topic: topic.into(),
        max_msg_num: 32,
        invisible_time: 60_000,
        poll_time: 0,
        born_time: 0,
        attempt_id: None,
    };
    RemotingCommand::request(RequestCode::POP_LITE_MESSAGE, header.to_ext_fields())
}

/// A message as the lite consumer got it.
#[derive(Debug, Clone)]
struct Got {
    body: String,
    lite: String,
    lmq_offset: i64,
    count: i32,
    pop_time: i64,
}

async fn pop(broker: &Fixture) -> Vec<Got> {
    let response = broker.call(pop_request(TOPIC, GROUP)).await;
    if response.code != ResponseCode::SUCCESS.as_i32() {
        return Vec::new();
    }
    let h = PopLiteMessageResponseHeader::from_ext_fields(&response.ext_fields).expect("header");
    assert_eq!(h.revive_qid, POP_ORDER_REVIVE_QUEUE);
    let counts: Vec<i32> = h
        .order_count_info
        .unwrap_or_default()
        .split(';')
        .map(|c| c.parse().expect("a count"))
        .collect();
    MessageRecord::decode_all(response.body.clone(), true)
        .expect("records")
        .into_iter()
        .zip(counts)
        .map(|(r, count)| Got {
            body: String::from_utf8_lossy(&r.body).into_owned(),
            lite: r
                .properties
                .get(property::LITE_TOPIC)
                .unwrap_or_default()
                .to_owned(),
            lmq_offset: r
                .properties
                .get(property::INNER_MULTI_QUEUE_OFFSET)
                .and_then(|o| o.parse().ok())
                .expect("its lite topic's offset"),
            count,
            pop_time: h.pop_time,
        })
        .collect()
}

fn bodies(got: &[Got]) -> Vec<&str> {
    let mut b: Vec<&str> = got.iter().map(|g| g.body.as_str()).collect();
    b.sort_unstable();
    b
}

async fn ack(broker: &Fixture, m: &Got) -> RemotingCommand {
    let handle = ExtraInfo {
        ck_queue_offset: 0,
        pop_time: m.pop_time,
        invisible_time: 60_000,
        revive_qid: POP_ORDER_REVIVE_QUEUE,
        topic_type: TopicType::Normal,
        broker_name: "broker-fixture".into(),
        queue_id: 0,
        queue_offset: Some(m.lmq_offset),
    };
    let header = AckMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id: 0,
        extra_info: handle.to_string(),
        offset: m.lmq_offset,
        lite_topic: Some(m.lite.clone()),
    };
    broker
        .call(RemotingCommand::request(
            RequestCode::ACK_MESSAGE,
            header.to_ext_fields(),
        ))
        .await
}

async fn lite_stack() -> Fixture {
    let broker = Fixture::start().await;
    assert_success(&broker.call(create_topic(TOPIC, "LITE")).await);
    assert_success(&broker.call(create_group(GROUP, Some(TOPIC))).await);
    broker
}

#[tokio::test]
async fn a_lite_consumer_gets_its_lite_topics_in_order_and_acks_them() {
    let broker = lite_stack().await;
    assert_success(&broker.call(ctl("PARTIAL_ADD", CLIENT, &["s1", "s2"])).await);
    send_lite(&broker, "a", "s1").await;
    send_lite(&broker, "b", "s2").await;
    send_lite(&broker, "c", "s1").await;
    send_lite(&broker, "x", "s3").await;
    broker.dispatched().await;

    let first = pop(&broker).await;
    assert_eq!(bodies(&first), ["a", "b", "c"], "not s3: not subscribed");
    assert!(first.iter().all(|m| m.count == 0));
    assert!(pop(&broker).await.is_empty(), "in flight");

    let a = first.iter().find(|m| m.body == "a").expect("a");
    assert_success(&ack(&broker, a).await);
    let b = first.iter().find(|m| m.body == "b").expect("b");
    assert_success(&ack(&broker, b).await);
    assert!(pop(&broker).await.is_empty(), "c is still invisible");

    // c was not acked: after its invisible time it comes again, counted.
    broker.advance(Duration::from_secs(61));
    let again = pop(&broker).await;
    assert_eq!(bodies(&again), ["c"]);
    assert_eq!(again[0].count, 1);
    assert_success(&ack(&broker, &again[0]).await);
    broker.advance(Duration::from_secs(61));
    assert!(pop(&broker).await.is_empty(), "everything acked");

    // Unsubscribed: new messages of s1 no longer come.
    assert_success(&broker.call(ctl("PARTIAL_REMOVE", CLIENT, &["s1"])).await);
    send_lite(&broker, "d", "s1").await;
    send_lite(&broker, "e", "s2").await;
    broker.dispatched().await;
    assert_eq!(bodies(&pop(&broker).await), ["e"]);
}

#[tokio::test]
async fn lite_requests_are_checked_as_rocketmq_checks_them() {
    let broker = lite_stack().await;
    assert_success(&broker.call(create_topic("Plain", "NORMAL")).await);
    assert_success(&broker.call(create_group("unbound", None)).await);
    let code = |r: RemotingCommand| r.code;
    assert_eq!(
        code(broker.call(pop_request("Plain", GROUP)).await),
        ResponseCode::INVALID_PARAMETER.as_i32(),
        "not a LITE topic"
    );
    assert_eq!(
        code(broker.call(pop_request(TOPIC, "unbound")).await),
        ResponseCode::INVALID_PARAMETER.as_i32(),
        "a group not bound to the topic"
    );
    assert_eq!(
        code(broker.call(pop_request(TOPIC, "nobody")).await),
        ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST.as_i32()
    );
    assert_eq!(
        code(broker.call(ctl("PARTIAL_ADD", CLIENT, &["../etc"])).await),
        ResponseCode::ILLEGAL_OPERATION.as_i32()
    );
    let empty = RemotingCommand::request(RequestCode::LITE_SUBSCRIPTION_CTL, ExtFields::default());
    assert_eq!(
        code(broker.call(empty).await),
        ResponseCode::ILLEGAL_OPERATION.as_i32()
    );
    assert_eq!(
        code(broker.call(pop_request(TOPIC, GROUP)).await),
        ResponseCode::POLLING_TIMEOUT.as_i32(),
        "a client with no subscription finds nothing"
    );
}

#[tokio::test]
async fn the_broker_bounds_lite_subscriptions() {
    let broker = Fixture::start_with(|c| c.broker.max_lite_subscription_count = 2).await;
    assert_success(&broker.call(create_topic(TOPIC, "LITE")).await);
    assert_success(&broker.call(create_group(GROUP, Some(TOPIC))).await);
    assert_success(&broker.call(ctl("PARTIAL_ADD", "c1", &["s1", "s2"])).await);
    let refused = broker.call(ctl("PARTIAL_ADD", "c2", &["s1"])).await;
    assert_eq!(
        refused.code,
        ResponseCode::LITE_SUBSCRIPTION_QUOTA_EXCEEDED.as_i32()
    );
    assert_success(&broker.call(ctl("COMPLETE_REMOVE", "c1", &[])).await);
    assert_success(&broker.call(ctl("PARTIAL_ADD", "c2", &["s1"])).await);
}

#[tokio::test]
async fn a_held_lite_pop_is_answered_when_its_lite_topic_gets_a_message() {
    let broker = std::sync::Arc::new(lite_stack().await);
    assert_success(&broker.call(ctl("PARTIAL_ADD", CLIENT, &["s1"])).await);
    let mut request = pop_request(TOPIC, GROUP);
    request.ext_fields.insert("pollTime", "10000");
    let held = {
        let broker = broker.clone();
        tokio::spawn(async move { broker.call(request).await })
    };
    crate::testing::eventually("the lite POP is held", || {
        broker.state.consumption.pop_hold.parked_count() == 1
    })
    .await;
    assert!(!held.is_finished(), "nothing yet: held");
    send_lite(&broker, "news", "s1").await;
    let answer = tokio::time::timeout(Duration::from_secs(3), held)
        .await
        .expect("answered on arrival")
        .expect("joined");
    assert_success(&answer);
    let records = MessageRecord::decode_all(answer.body.clone(), true).expect("records");
    assert_eq!(records.len(), 1);
}

#[tokio::test]
async fn an_idle_lite_topic_goes_after_its_parents_expiration() {
    use super::lifecycle::{expire_idle, MIN_LITE_TTL_MS};
    let broker = Fixture::start().await;
    let header = CreateTopicRequestHeader {
        topic: TOPIC.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: 4,
        write_queue_nums: 4,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        attributes: Some("+message.type=LITE,+lite.topic.expiration=20".into()),
        ..Default::default()
    };
    assert_success(
        &broker
            .call(RemotingCommand::request(
                RequestCode::UPDATE_AND_CREATE_TOPIC,
                header.to_ext_fields(),
            ))
            .await,
    );
    assert_success(&broker.call(create_group(GROUP, Some(TOPIC))).await);
    assert_success(
        &broker
            .call(ctl("PARTIAL_ADD", CLIENT, &["idle", "busy"]))
            .await,
    );
    send_lite(&broker, "a", "idle").await;
    send_lite(&broker, "b", "busy").await;
    broker.dispatched().await;
    assert_eq!(pop(&broker).await.len(), 2);
    let core = broker.state.consumption.pop.clone();
    let idle = "%LMQ%$Chat$idle";
    assert_eq!(
        expire_idle(&core, MIN_LITE_TTL_MS - 1),
        0,
        "too early after start"
    );
    broker.advance(Duration::from_secs(16 * 60));
    assert_eq!(
        expire_idle(&core, MIN_LITE_TTL_MS),
        0,
        "within its 20 minutes"
    );
    broker.advance(Duration::from_secs(5 * 60));
    // Both lite topics of Chat are 21 minutes idle; Keep's parent has no expiration.
    assert_success(&broker.call(create_topic("Keep", "LITE")).await);
    let mut props = Properties::new();
    props.insert(property::LITE_TOPIC, "forever");
    assert_success(
        &broker
            .call(send_request("Keep", 0, b"k", &props.encode()))
            .await,
    );
    broker.dispatched().await;
    broker.advance(Duration::from_secs(24 * 3600));
    assert_eq!(expire_idle(&core, MIN_LITE_TTL_MS), 2);
    assert_eq!(broker.state.store.max_offset_in_queue(idle, 0), 0);
    assert!(!broker.state.store.topics().iter().any(|t| t == idle));
    assert_eq!(
        broker
            .state
            .store
            .max_offset_in_queue("%LMQ%$Keep$forever", 0),
        1,
        "a parent without expiration keeps its lite topics"
    );
    assert!(!core
        .lite
        .subscription(CLIENT)
        .expect("the client stays")
        .lmqs
        .contains(idle));
}

fn admin(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
    RemotingCommand::request(code, fields.iter().copied().collect::<ExtFields>())
}

#[tokio::test]
async fn the_lite_admin_requests_describe_topics_clients_and_lag() {
    use stellmq_remoting::protocol::body::lite::{
        GetBrokerLiteInfoResponseBody, GetLiteClientInfoResponseBody, GetLiteGroupInfoResponseBody,
        GetLiteTopicInfoResponseBody, GetParentTopicInfoResponseBody,
    };
    let broker = lite_stack().await;
    assert_success(&broker.call(ctl("PARTIAL_ADD", CLIENT, &["s1", "s2"])).await);
    for body in ["a", "b", "c"] {
        send_lite(&broker, body, "s1").await;
    }
    send_lite(&broker, "d", "s2").await;
    broker.dispatched().await;
    let got = pop(&broker).await;
    let d = got.iter().find(|m| m.body == "d").expect("d");
    assert_success(&ack(&broker, d).await);

    let r = broker
        .call(admin(
            RequestCode::GET_PARENT_TOPIC_INFO,
            &[("topic", TOPIC)],
        ))
        .await;
    assert_success(&r);
    let parent: GetParentTopicInfoResponseBody = fastjson::decode(&r.body).expect("body");
    assert_eq!((parent.lite_topic_count, parent.ttl), (2, -1));
    assert!(parent.groups.expect("groups").contains(GROUP));

    let fields = [("parentTopic", TOPIC), ("liteTopic", "s1")];
    let r = broker
        .call(admin(RequestCode::GET_LITE_TOPIC_INFO, &fields))
        .await;
    let info: GetLiteTopicInfoResponseBody = fastjson::decode(&r.body).expect("body");
    assert_eq!(info.topic_offset.max_offset, 3);
    assert_eq!(info.subscriber.len(), 1);
    assert_eq!(info.subscriber[0].client_id, CLIENT);

    let fields = [
        ("parentTopic", TOPIC),
        ("group", GROUP),
        ("clientId", CLIENT),
    ];
    let r = broker
        .call(admin(RequestCode::GET_LITE_CLIENT_INFO, &fields))
        .await;
    let client: GetLiteClientInfoResponseBody = fastjson::decode(&r.body).expect("body");
    assert_eq!(client.lite_topic_count, 2);
    assert!(client.last_access_time > 0);

    // s1's batch is in flight (not acked): its whole backlog counts; s2 is consumed.
    let fields = [("group", GROUP), ("topK", "10")];
    let r = broker
        .call(admin(RequestCode::GET_LITE_GROUP_INFO, &fields))
        .await;
    assert_success(&r);
    let lag: GetLiteGroupInfoResponseBody = fastjson::decode(&r.body).expect("body");
    assert_eq!(lag.total_lag_count, 3);
    assert_eq!(lag.lag_count_top_k.len(), 1);
    assert_eq!(lag.lag_count_top_k[0].lite_topic, "s1");
    let fields = [("group", GROUP), ("liteTopic", "s2")];
    let r = broker
        .call(admin(RequestCode::GET_LITE_GROUP_INFO, &fields))
        .await;
    let one: GetLiteGroupInfoResponseBody = fastjson::decode(&r.body).expect("body");
    assert_eq!(one.total_lag_count, 0);

    let r = broker
        .call(admin(RequestCode::GET_BROKER_LITE_INFO, &[]))
        .await;
    let info: GetBrokerLiteInfoResponseBody = fastjson::decode(&r.body).expect("body");
    assert_eq!((info.current_lmq_num, info.lite_subscription_count), (2, 2));
    assert_eq!(info.topic_meta.get(TOPIC), Some(&-1));

    assert_success(
        &broker
            .call(admin(
                RequestCode::TRIGGER_LITE_DISPATCH,
                &[("group", GROUP)],
            ))
            .await,
    );
    // Refusals as RocketMQ's.
    assert_success(&broker.call(create_topic("Plain", "NORMAL")).await);
    assert_success(&broker.call(create_group("unbound", None)).await);
    let code = |r: RemotingCommand| r.code;
    assert_eq!(
        code(
            broker
                .call(admin(
                    RequestCode::GET_PARENT_TOPIC_INFO,
                    &[("topic", "Plain")]
                ))
                .await
        ),
        ResponseCode::INVALID_PARAMETER.as_i32()
    );
    assert_eq!(
        code(
            broker
                .call(admin(
                    RequestCode::GET_PARENT_TOPIC_INFO,
                    &[("topic", "Nope")]
                ))
                .await
        ),
        ResponseCode::TOPIC_NOT_EXIST.as_i32()
    );
    assert_eq!(
        code(
            broker
                .call(admin(
                    RequestCode::GET_LITE_GROUP_INFO,
                    &[("group", "unbound")]
                ))
                .await
        ),
        ResponseCode::INVALID_PARAMETER.as_i32()
    );
    assert_eq!(
        code(
            broker
                .call(admin(
                    RequestCode::TRIGGER_LITE_DISPATCH,
                    &[("group", "nobody")]
                ))
                .await
        ),
        ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST.as_i32()
    );
}
