//! What a remoting request needs under ACL 2.0, as RocketMQ's authorization context
//! builder decides it: sends need Pub on their topic, consumption needs Sub on its group
//! and topic, queries Get, changes Create, Update or Delete, and cluster-wide requests
//! an action on `Cluster:<brokerClusterName>`. Retry topics (`%RETRY%<group>`) are their
//! group's.
//!
//! StellMQ is stricter than RocketMQ where RocketMQ leaves a change unchecked (topic and
//! group lists, group creation, broker config, store clean-ups, ACL 1.0 edits): those need
//! Update on the cluster. Reads RocketMQ does not check are not checked.

use serde::Deserialize;
use stellmq_protocol::body::lite::LiteSubscriptionCtlRequestBody;
use stellmq_protocol::body::{fastjson, HeartbeatData};
use stellmq_protocol::RemotingCommand;

use super::decide::Need;
use super::model::{Action, Resource, ResourceType};

const RETRY: &str = "%RETRY%";

use Action::{Create, Delete, Get, Pub, Sub, Update};
use ResourceType::{Cluster, Group, Topic};

/// A header field that names a resource; `Some(sep)` splits a list.
type Field = (&'static str, ResourceType, Option<char>);

/// Requests whose needs follow from their header alone (RocketMQ's annotated headers): the
/// code, the actions, whether the cluster is the resource when no field names one, and the
/// fields.
const BY_HEADER: &[(i32, &[Action], bool, &[Field])] = &[
    (17, &[Create], false, &[("topic", Topic, None)]),
    (29, &[Get], false, &[("topic", Topic, None)]),
    (30, &[Get], false, &[("topic", Topic, None)]),
    (31, &[Get], false, &[("topic", Topic, None)]),
    (32, &[Get], false, &[("topic", Topic, None)]),
    (33, &[Get], false, &[("topic", Topic, None)]),
    (39, &[Pub], false, &[("topic", Topic, None)]),
    (40, &[Sub], false, &[("consumerGroup", Group, None)]),
    (100, &[Update], true, &[]),
    (101, &[Get], true, &[]),
    (102, &[Update], true, &[]),
    (103, &[Update], true, &[("clusterName", Cluster, None)]),
    (104, &[Update], true, &[("clusterName", Cluster, None)]),
    (202, &[Get], false, &[("topic", Topic, None)]),
    (203, &[Get], false, &[("consumerGroup", Group, None)]),
    (204, &[Get], true, &[]),
    (205, &[Update], true, &[]),
    (207, &[Delete], false, &[("groupName", Group, None)]),
    (
        208,
        &[Get],
        false,
        &[
            ("consumerGroup", Group, None),
            ("topic", Topic, None),
            ("topicList", Topic, Some(';')),
        ],
    ),
    (215, &[Delete], false, &[("topic", Topic, None)]),
    (216, &[Update], true, &[("clusterName", Cluster, None)]),
    (217, &[Update], true, &[]),
    (219, &[Get], true, &[]),
    (
        222,
        &[Update],
        false,
        &[("group", Group, None), ("topic", Topic, None)],
    ),
    (
        223,
        &[Get],
        false,
        &[("topic", Topic, None), ("group", Group, None)],
    ),
    (300, &[Get], false, &[("topic", Topic, None)]),
    (
        303,
        &[Get],
        false,
        &[("topic", Topic, None), ("group", Group, None)],
    ),
    (307, &[Get], false, &[("consumerGroup", Group, None)]),
    (
        308,
        &[Get],
        false,
        &[
            ("filterGroups", Group, Some(',')),
            ("compareGroup", Group, None),
            ("topic", Topic, None),
        ],
    ),
    (
        309,
        &[Sub],
        false,
        &[("consumerGroup", Group, None), ("topic", Topic, None)],
    ),
    (
        314,
        &[Update],
        false,
        &[("destGroup", Group, None), ("topic", Topic, None)],
    ),
    (315, &[Get], true, &[]),
    (317, &[Get], true, &[]),
    (
        321,
        &[Get],
        false,
        &[("topic", Topic, None), ("consumerGroup", Group, None)],
    ),
    (322, &[Get], true, &[("clusterName", Cluster, None)]),
    (323, &[Update], false, &[("topic", Topic, None)]),
    (
        326,
        &[Sub],
        false,
        &[("producerGroup", Group, None), ("topic", Topic, None)],
    ),
    (327, &[Update], true, &[]),
    (328, &[Get], true, &[]),
    (343, &[Get], false, &[("group", Group, None)]),
    (
        345,
        &[Get],
        false,
        &[("group", Group, None), ("topic", Topic, None)],
    ),
    (351, &[Get], false, &[("topic", Topic, None)]),
    (352, &[Get], false, &[("group", Group, None)]),
    (
        353,
        &[Update],
        false,
        &[("group", Group, None), ("topic", Topic, None)],
    ),
    (354, &[Get], false, &[("topic", Topic, None)]),
    (355, &[Get], true, &[]),
    (901, &[Get], false, &[("clusterName", Cluster, None)]),
    (902, &[Update], true, &[]),
    (
        903,
        &[Update],
        true,
        &[("brokerClusterName", Cluster, None)],
    ),
    (904, &[Update], true, &[("clusterName", Cluster, None)]),
    (905, &[Update], true, &[]),
    (906, &[Update], true, &[]),
    (908, &[Update], true, &[]),
    (1001, &[Update], true, &[]),
    (1002, &[Update], true, &[("clusterName", Cluster, None)]),
    (1003, &[Update], true, &[("clusterName", Cluster, None)]),
    (1004, &[Get], true, &[]),
    (1008, &[Update], true, &[]),
    (1011, &[Update], true, &[("clusterName", Cluster, None)]),
    (1012, &[Get], true, &[("clusterName", Cluster, None)]),
    (1013, &[Update], true, &[("clusterName", Cluster, None)]),
    // ACL 2.0's own administration.
    (3001, &[Update], true, &[]),
    (3002, &[Update], true, &[]),
    (3003, &[Update], true, &[]),
    (3004, &[Get], true, &[]),
    (3005, &[Get], true, &[]),
    (3006, &[Update], true, &[]),
    (3007, &[Update], true, &[]),
    (3008, &[Update], true, &[]),
    (3009, &[Get], true, &[]),
    (3010, &[Get], true, &[]),
    (
        200050,
        &[Sub],
        false,
        &[("consumerGroup", Group, None), ("topic", Topic, None)],
    ),
    // The lite topic admin requests (RocketMQ 5.5's annotations).
    (200074, &[Get], true, &[]),
    (200075, &[Get], false, &[("topic", Topic, None)]),
    (200076, &[Get], false, &[("parentTopic", Topic, None)]),
    (
        200077,
        &[Get],
        false,
        &[("parentTopic", Topic, None), ("group", Group, None)],
    ),
    (200078, &[Get], false, &[("group", Group, None)]),
    (200079, &[Update], false, &[("group", Group, None)]),
    // POP_LITE_MESSAGE.
    (
        200070,
        &[Sub],
        false,
        &[("consumerGroup", Group, None), ("topic", Topic, None)],
    ),
    (
        200051,
        &[Sub],
        false,
        &[("consumerGroup", Group, None), ("topic", Topic, None)],
    ),
    (
        200052,
        &[Sub],
        false,
        &[("topic", Topic, None), ("consumerGroup", Group, None)],
    ),
    (
        200053,
        &[Sub],
        false,
        &[("consumerGroup", Group, None), ("topic", Topic, None)],
    ),
    (
        200054,
        &[Sub],
        false,
        &[("consumerGroup", Group, None), ("topic", Topic, None)],
    ),
    (
        200055,
        &[Get],
        false,
        &[("consumerGroup", Group, None), ("topic", Topic, None)],
    ),
];

/// Changes RocketMQ leaves unchecked and StellMQ does not: Update on the cluster.
/// UPDATE_AND_CREATE_TOPIC_LIST, UPDATE_BROKER_CONFIG, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
/// its list, DELETE_EXPIRED_COMMITLOG, CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC,
/// UPDATE_AND_CREATE_STATIC_TOPIC, and ACL 1.0's edits and reads.
const CLUSTER_CHANGES: &[i32] = &[18, 25, 200, 225, 50, 51, 52, 53, 54, 306, 316, 329, 513];

/// The needs of `request` on a broker of `cluster`; an error when a body it must read
/// does not decode (the request is then refused).
pub fn needs(request: &RemotingCommand, cluster: &str) -> Result<Vec<Need>, String> {
    let field = |name: &str| {
        request
            .ext_fields
            .get(name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let mut needs = Vec::new();
    match request.code {
        105 => {
            if let Some(topic) = field("topic") {
                needs.push(topic_or_retry(topic, &[Pub, Sub, Get], &[Sub, Get]));
            }
        }
        10 | 324 => send(&mut needs, field("topic"), field("group")),
        310 | 320 | 325 => send(&mut needs, field("b"), field("a")),
        370 => push_topic(&mut needs, field("topic"), &[Pub]),
        37 => push_topic(&mut needs, field("topic"), &[Pub]),
        36 => push_group(&mut needs, field("group"), &[Sub]),
        11 | 361 => {
            push_plain_topic(&mut needs, field("topic"), &[Sub]);
            push_group(&mut needs, field("consumerGroup"), &[Sub]);
        }
        12 => push_topic(&mut needs, field("topic"), &[Sub, Get]),
        34 => heartbeat(&mut needs, request)?,
        35 => push_group(&mut needs, field("consumerGroup"), &[Sub]),
        38 => push_group(&mut needs, field("consumerGroup"), &[Sub, Get]),
        14 => {
            push_plain_topic(&mut needs, field("topic"), &[Sub, Get]);
            push_group(&mut needs, field("consumerGroup"), &[Sub, Get]);
        }
        15 => {
            push_plain_topic(&mut needs, field("topic"), &[Sub, Update]);
            push_group(&mut needs, field("consumerGroup"), &[Sub, Update]);
        }
        41 | 42 => lock_batch(&mut needs, request)?,
        200151 => batch_ack(&mut needs, request)?,
        200071 => lite_subscriptions(&mut needs, request)?,
        code => {
            if let Some((_, actions, cluster_wide, fields)) =
                BY_HEADER.iter().find(|(c, ..)| *c == code)
            {
                by_header(&mut needs, request, actions, fields);
                if needs.is_empty() && *cluster_wide {
                    needs.push(Need::new(Resource::cluster(cluster), actions));
                }
            } else if CLUSTER_CHANGES.contains(&code) {
                needs.push(Need::new(Resource::cluster(cluster), &[Update]));
            }
        }
    }
    Ok(needs)
}

fn by_header(
    needs: &mut Vec<Need>,
    request: &RemotingCommand,
    actions: &[Action],
    fields: &[Field],
) {
    for (name, kind, splitter) in fields {
        let Some(value) = request.ext_fields.get(name) else {
            continue;
        };
        let values: Vec<&str> = match splitter {
            Some(sep) => value.split(*sep).collect(),
            None => vec![value],
        };
        for value in values.into_iter().map(str::trim).filter(|v| !v.is_empty()) {
            let resource = match kind {
                Topic if value.starts_with(RETRY) => Resource::group(value),
                Group => Resource::group(value),
                kind => Resource::literal(*kind, value),
            };
            needs.push(Need::new(resource, actions));
        }
    }
}

/// A topic, or for a retry topic its group with `retry_actions`.
fn topic_or_retry(topic: &str, actions: &[Action], retry_actions: &[Action]) -> Need {
    if topic.starts_with(RETRY) {
        Need::new(Resource::group(topic), retry_actions)
    } else {
        Need::new(Resource::topic(topic), actions)
    }
}

/// A send: Pub on the topic; a send to a retry topic is its group's Sub (the group field
/// when given, else the topic's group).
fn send(needs: &mut Vec<Need>, topic: Option<&str>, group: Option<&str>) {
    let Some(topic) = topic else { return };
    if topic.starts_with(RETRY) {
        needs.push(Need::new(Resource::group(group.unwrap_or(topic)), &[Sub]));
    } else {
        needs.push(Need::new(Resource::topic(topic), &[Pub]));
    }
}

fn push_topic(needs: &mut Vec<Need>, topic: Option<&str>, actions: &[Action]) {
    if let Some(topic) = topic {
        needs.push(topic_or_retry(topic, actions, actions));
    }
}

/// A topic unless it is a retry topic (whose group is checked anyway).
fn push_plain_topic(needs: &mut Vec<Need>, topic: Option<&str>, actions: &[Action]) {
    if let Some(topic) = topic.filter(|t| !t.starts_with(RETRY)) {
        needs.push(Need::new(Resource::topic(topic), actions));
    }
}

fn push_group(needs: &mut Vec<Need>, group: Option<&str>, actions: &[Action]) {
    if let Some(group) = group {
        needs.push(Need::new(Resource::group(group), actions));
    }
}

fn heartbeat(needs: &mut Vec<Need>, request: &RemotingCommand) -> Result<(), String> {
    let data: HeartbeatData = fastjson::decode(&request.body)
        .map_err(|e| format!("parse authorization context error: heartbeat body: {e}"))?;
    for consumer in &data.consumer_data_set {
        push_group(
            needs,
            Some(consumer.group_name.as_str()).filter(|g| !g.is_empty()),
            &[Sub],
        );
        for subscription in &consumer.subscription_data_set {
            push_plain_topic(needs, Some(subscription.topic.as_str()), &[Sub]);
        }
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LockedQueues {
    #[serde(default)]
    consumer_group: String,
    #[serde(default)]
    mq_set: Vec<NamedTopic>,
}

#[derive(Deserialize)]
struct NamedTopic {
    #[serde(default)]
    topic: String,
}

fn lock_batch(needs: &mut Vec<Need>, request: &RemotingCommand) -> Result<(), String> {
    let body: LockedQueues = fastjson::decode(&request.body)
        .map_err(|e| format!("parse authorization context error: lock body: {e}"))?;
    push_group(
        needs,
        Some(body.consumer_group.as_str()).filter(|g| !g.is_empty()),
        &[Sub],
    );
    for queue in &body.mq_set {
        push_plain_topic(
            needs,
            Some(queue.topic.as_str()).filter(|t| !t.is_empty()),
            &[Sub],
        );
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchAck {
    #[serde(default)]
    acks: Vec<AckedQueue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AckedQueue {
    #[serde(default)]
    consumer_group: String,
    #[serde(default)]
    topic: String,
}

/// LITE_SUBSCRIPTION_CTL names its groups and parent topics in its body: Sub on each, as
/// RocketMQ's `LiteSubscriptionCtlRequestBody` is checked.
fn lite_subscriptions(needs: &mut Vec<Need>, request: &RemotingCommand) -> Result<(), String> {
    let body: LiteSubscriptionCtlRequestBody = fastjson::decode(&request.body)
        .map_err(|e| format!("parse authorization context error: lite subscription body: {e}"))?;
    for entry in &body.subscription_set {
        push_group(
            needs,
            Some(entry.group.as_str()).filter(|g| !g.is_empty()),
            &[Sub],
        );
        push_plain_topic(
            needs,
            Some(entry.topic.as_str()).filter(|t| !t.is_empty()),
            &[Sub],
        );
    }
    Ok(())
}

/// BATCH_ACK_MESSAGE names its groups and topics in its body (RocketMQ has no header to
/// annotate, so it would not check them; StellMQ checks Sub as for one ack).
fn batch_ack(needs: &mut Vec<Need>, request: &RemotingCommand) -> Result<(), String> {
    let body: BatchAck = fastjson::decode(&request.body)
        .map_err(|e| format!("parse authorization context error: batch ack body: {e}"))?;
    for ack in &body.acks {
        push_group(
            needs,
            Some(ack.consumer_group.as_str()).filter(|g| !g.is_empty()),
            &[Sub],
        );
        push_plain_topic(
            needs,
            Some(ack.topic.as_str()).filter(|t| !t.is_empty()),
            &[Sub],
        );
    }
    Ok(())
}
