//! What a request touches and needs, by request code, as RocketMQ's plain ACL decides it:
//! sends need PUB on their topic, pulls, pops, offsets and consumer heartbeats need SUB on
//! the group and the topic, and administrative requests need an admin account. Groups are
//! named in requests as themselves or as their `%RETRY%` topic; both mean the group.

use stellmq_protocol::body::lite::LiteSubscriptionCtlRequestBody;
use stellmq_protocol::body::pop::BatchAckMessageRequestBody;
use stellmq_protocol::body::{fastjson, HeartbeatData};
use stellmq_protocol::names::RETRY_PREFIX;
use stellmq_protocol::pop::parse_normal_topic;
use stellmq_protocol::{RemotingCommand, RequestCode};

use crate::error::AccessDenied;
use crate::perm::Perm;

/// A topic or a consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resource {
    Topic(String),
    Group(String),
}

impl Resource {
    /// A topic by name; a `%RETRY%<group>` topic is its group.
    pub fn topic(name: &str) -> Resource {
        match name.strip_prefix(RETRY_PREFIX) {
            Some(group) => Resource::Group(group.to_owned()),
            None => Resource::Topic(name.to_owned()),
        }
    }

    pub fn group(name: &str) -> Resource {
        Resource::Group(name.to_owned())
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Topic(name) => write!(f, "topic={name}"),
            Resource::Group(name) => write!(f, "group={name}"),
        }
    }
}

/// What one request needs of the account that signed it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Requirement {
    pub admin: bool,
    pub resources: Vec<(Resource, Perm)>,
}

impl Requirement {
    fn need(&mut self, resource: Resource, perm: Perm) {
        self.resources.push((resource, perm));
    }
}

/// Request codes only an admin account may send: topic, group, configuration, offset and
/// ACL changes (and reading the ACL, which holds secrets).
pub const ADMIN_CODES: &[RequestCode] = &[
    RequestCode::UPDATE_AND_CREATE_TOPIC,
    RequestCode::UPDATE_AND_CREATE_TOPIC_LIST,
    RequestCode::DELETE_TOPIC_IN_BROKER,
    RequestCode::UPDATE_AND_CREATE_STATIC_TOPIC,
    RequestCode::UPDATE_BROKER_CONFIG,
    RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
    RequestCode::DELETE_SUBSCRIPTIONGROUP,
    RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
    RequestCode::CLONE_GROUP_OFFSET,
    RequestCode::DELETE_EXPIRED_COMMITLOG,
    RequestCode::CLEAN_EXPIRED_CONSUMEQUEUE,
    RequestCode::CLEAN_UNUSED_TOPIC,
    RequestCode::RESUME_CHECK_HALF_MESSAGE,
    RequestCode::UPDATE_AND_CREATE_ACL_CONFIG,
    RequestCode::DELETE_ACL_CONFIG,
    RequestCode::GET_BROKER_CLUSTER_ACL_INFO,
    RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG,
    // The name server's changes.
    RequestCode::PUT_KV_CONFIG,
    RequestCode::DELETE_KV_CONFIG,
    RequestCode::UPDATE_NAMESRV_CONFIG,
    RequestCode::DELETE_TOPIC_IN_NAMESRV,
    RequestCode::REGISTER_TOPIC_IN_NAMESRV,
    RequestCode::WIPE_WRITE_PERM_OF_BROKER,
    RequestCode::ADD_WRITE_PERM_OF_BROKER,
];

pub fn needs_admin(code: i32) -> bool {
    ADMIN_CODES.iter().any(|c| c.as_i32() == code)
}

/// The resources and rights `request` needs.
pub fn requirement(request: &RemotingCommand) -> Result<Requirement, AccessDenied> {
    use RequestCode as C;
    let mut needs = Requirement {
        admin: needs_admin(request.code),
        resources: Vec::new(),
    };
    let field = |name: &str| request.ext_fields.get_non_empty(name);
    let Some(code) = RequestCode::from_i32(request.code) else {
        return Ok(needs);
    };
    match code {
        C::SEND_MESSAGE | C::SEND_REPLY_MESSAGE | C::RECALL_MESSAGE => {
            need_send(&mut needs, field("topic"))
        }
        C::SEND_MESSAGE_V2 | C::SEND_BATCH_MESSAGE | C::SEND_REPLY_MESSAGE_V2 => {
            need_send(&mut needs, field("b"))
        }
        C::CONSUMER_SEND_MSG_BACK => need_group(&mut needs, field("group")),
        C::PULL_MESSAGE
        | C::LITE_PULL_MESSAGE
        | C::UPDATE_CONSUMER_OFFSET
        | C::QUERY_CONSUMER_OFFSET => {
            need_topic(&mut needs, field("topic"), Perm::SUB);
            need_group(&mut needs, field("consumerGroup"));
        }
        C::POP_MESSAGE
        | C::POP_LITE_MESSAGE
        | C::PEEK_MESSAGE
        | C::ACK_MESSAGE
        | C::CHANGE_MESSAGE_INVISIBLETIME
        | C::NOTIFICATION
        | C::POLLING_INFO => {
            // Acks of retried messages name the group's POP retry topic
            // `%RETRY%<group>_<topic>`: that is the topic's business.
            let group = field("consumerGroup");
            let topic = field("topic").map(|t| parse_normal_topic(t, group.unwrap_or_default()));
            need_topic(&mut needs, topic, Perm::SUB);
            need_group(&mut needs, group);
        }
        C::QUERY_MESSAGE => need_topic(&mut needs, field("topic"), Perm::SUB),
        C::UNREGISTER_CLIENT | C::GET_CONSUMER_LIST_BY_GROUP => {
            need_group(&mut needs, field("consumerGroup"))
        }
        C::HEART_BEAT => need_heartbeat(&mut needs, request)?,
        C::BATCH_ACK_MESSAGE => need_batch_ack(&mut needs, request)?,
        C::LITE_SUBSCRIPTION_CTL => need_lite_subscriptions(&mut needs, request)?,
        C::GET_LITE_GROUP_INFO | C::TRIGGER_LITE_DISPATCH => need_group(&mut needs, field("group")),
        C::GET_PARENT_TOPIC_INFO => need_topic(&mut needs, field("topic"), Perm::SUB),
        C::GET_LITE_TOPIC_INFO | C::GET_LITE_CLIENT_INFO => {
            need_topic(&mut needs, field("parentTopic"), Perm::SUB)
        }
        _ => {}
    }
    Ok(needs)
}

fn need_send(needs: &mut Requirement, topic: Option<&str>) {
    // Sending to a retry topic is the group's business (SUB), as in RocketMQ.
    if let Some(topic) = topic {
        let perm = if topic.starts_with(RETRY_PREFIX) {
            Perm::SUB
        } else {
            Perm::PUB
        };
        needs.need(Resource::topic(topic), perm);
    }
}

fn need_topic(needs: &mut Requirement, topic: Option<&str>, perm: Perm) {
    if let Some(topic) = topic {
        needs.need(Resource::topic(topic), perm);
    }
}

fn need_group(needs: &mut Requirement, group: Option<&str>) {
    if let Some(group) = group {
        needs.need(Resource::group(group), Perm::SUB);
    }
}

/// A batch ack names its topics and groups in its body.
fn need_batch_ack(needs: &mut Requirement, request: &RemotingCommand) -> Result<(), AccessDenied> {
    let body: BatchAckMessageRequestBody = fastjson::decode(&request.body)
        .map_err(|e| AccessDenied(format!("batch ack body does not decode: {e}")))?;
    for ack in &body.acks {
        need_topic(needs, Some(&ack.topic), Perm::SUB);
        need_group(needs, Some(&ack.consumer_group));
    }
    Ok(())
}

fn need_lite_subscriptions(
    needs: &mut Requirement,
    request: &RemotingCommand,
) -> Result<(), AccessDenied> {
    let body: LiteSubscriptionCtlRequestBody = fastjson::decode(&request.body)
        .map_err(|e| AccessDenied(format!("lite subscription body does not decode: {e}")))?;
    for entry in &body.subscription_set {
        need_topic(needs, Some(&entry.topic), Perm::SUB);
        need_group(needs, Some(&entry.group));
    }
    Ok(())
}

fn need_heartbeat(needs: &mut Requirement, request: &RemotingCommand) -> Result<(), AccessDenied> {
    let data: HeartbeatData = fastjson::decode(&request.body)
        .map_err(|e| AccessDenied(format!("heartbeat body does not decode: {e}")))?;
    for consumer in &data.consumer_data_set {
        need_group(needs, Some(&consumer.group_name));
        for subscription in &consumer.subscription_data_set {
            need_topic(needs, Some(&subscription.topic), Perm::SUB);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_protocol::ExtFields;

    fn request(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
        RemotingCommand::request(code, fields.iter().copied().collect::<ExtFields>())
    }

    #[test]
    fn sends_need_pub_and_retry_sends_sub() {
        let v2 = requirement(&request(
            RequestCode::SEND_MESSAGE_V2,
            &[("a", "PG"), ("b", "TopicA")],
        ))
        .expect("ok");
        assert_eq!(
            v2.resources,
            [(Resource::Topic("TopicA".into()), Perm::PUB)]
        );
        assert!(!v2.admin);
        let retry = requirement(&request(
            RequestCode::SEND_MESSAGE,
            &[("topic", "%RETRY%G1")],
        ))
        .expect("ok");
        assert_eq!(retry.resources, [(Resource::Group("G1".into()), Perm::SUB)]);
    }

    #[test]
    fn pulls_and_offsets_need_sub_on_topic_and_group() {
        for code in [
            RequestCode::PULL_MESSAGE,
            RequestCode::UPDATE_CONSUMER_OFFSET,
            RequestCode::QUERY_CONSUMER_OFFSET,
        ] {
            let needs =
                requirement(&request(code, &[("consumerGroup", "G"), ("topic", "T")])).expect("ok");
            assert_eq!(
                needs.resources,
                [
                    (Resource::Topic("T".into()), Perm::SUB),
                    (Resource::Group("G".into()), Perm::SUB)
                ],
                "{code}"
            );
        }
    }

    #[test]
    fn pop_requests_need_sub_and_batch_acks_name_theirs() {
        for code in [
            RequestCode::POP_MESSAGE,
            RequestCode::NOTIFICATION,
            RequestCode::POLLING_INFO,
        ] {
            let needs =
                requirement(&request(code, &[("consumerGroup", "G"), ("topic", "T")])).expect("ok");
            assert_eq!(needs.resources.len(), 2, "{code}");
        }
        let mut batch = request(RequestCode::BATCH_ACK_MESSAGE, &[]);
        batch.body = bytes::Bytes::from_static(
            br#"{"acks":[{"c":"G","t":"T","r":"0","so":0,"q":0,"rq":0,"pt":1,"it":1,"b":"AQ=="}]}"#,
        );
        let needs = requirement(&batch).expect("decodes");
        assert_eq!(
            needs.resources,
            [
                (Resource::Topic("T".into()), Perm::SUB),
                (Resource::Group("G".into()), Perm::SUB)
            ]
        );
        let ack = requirement(&request(
            RequestCode::ACK_MESSAGE,
            &[("consumerGroup", "G"), ("topic", "%RETRY%G_T")],
        ))
        .expect("ok");
        assert_eq!(
            ack.resources,
            [
                (Resource::Topic("T".into()), Perm::SUB),
                (Resource::Group("G".into()), Perm::SUB)
            ]
        );
        batch.body = bytes::Bytes::from_static(b"{oops");
        assert!(requirement(&batch).is_err());
    }

    #[test]
    fn consumer_heartbeats_name_their_groups_and_topics() {
        let mut hb = request(RequestCode::HEART_BEAT, &[]);
        hb.body = bytes::Bytes::from_static(br#"{"clientID":"c","consumerDataSet":[{"groupName":"G","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1},{"topic":"%RETRY%G","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1}],"unitMode":false}],"producerDataSet":[]}"#);
        let needs = requirement(&hb).expect("decodes");
        assert_eq!(
            needs.resources,
            [
                (Resource::Group("G".into()), Perm::SUB),
                (Resource::Topic("T".into()), Perm::SUB),
                (Resource::Group("G".into()), Perm::SUB)
            ]
        );
        hb.body = bytes::Bytes::from_static(b"{not json");
        assert!(requirement(&hb).is_err());
    }

    #[test]
    fn admin_codes_need_admin() {
        for code in [
            RequestCode::UPDATE_AND_CREATE_TOPIC,
            RequestCode::DELETE_TOPIC_IN_BROKER,
            RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
            RequestCode::UPDATE_BROKER_CONFIG,
            RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG,
        ] {
            assert!(
                requirement(&request(code, &[("topic", "T")]))
                    .expect("ok")
                    .admin,
                "{code}"
            );
        }
        assert!(
            !requirement(&request(
                RequestCode::GET_ROUTEINFO_BY_TOPIC,
                &[("topic", "T")]
            ))
            .expect("ok")
            .admin
        );
    }
}
