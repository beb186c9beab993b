//! What a running consumer reports about itself when the broker relays an admin's question
//! (protocol.md 2.7): `ConsumerRunningInfo` (GET_CONSUMER_RUNNING_INFO, 307),
//! `GetConsumerStatusBody` (GET_CONSUMER_STATUS_FROM_CLIENT, 221, and the broker's fan-out
//! INVOKE_BROKER_TO_GET_CONSUMER_STATUS, 223) and `ConsumeMessageDirectlyResult`
//! (CONSUME_MESSAGE_DIRECTLY, 309). Field names are Java's getters as fastjson writes them.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::fastjson::MqKeyMap;
use super::heartbeat::{lenient_enum, SubscriptionData};
use crate::ext_fields::Lenient;

/// `ConsumerRunningInfo` property keys Java's tools read.
pub mod running_prop {
    pub const NAMESERVER_ADDR: &str = "PROP_NAMESERVER_ADDR";
    pub const THREADPOOL_CORE_SIZE: &str = "PROP_THREADPOOL_CORE_SIZE";
    pub const CONSUME_ORDERLY: &str = "PROP_CONSUMEORDERLY";
    pub const CONSUME_TYPE: &str = "PROP_CONSUME_TYPE";
    pub const CLIENT_VERSION: &str = "PROP_CLIENT_VERSION";
    pub const CONSUMER_START_TIMESTAMP: &str = "PROP_CONSUMER_START_TIMESTAMP";
}

/// The state of one queue a consumer owns (`ProcessQueueInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProcessQueueInfo {
    /// The consumed offset the consumer will commit.
    pub commit_offset: i64,
    /// Pulled messages not yet consumed: smallest and largest offset, count and MiB.
    pub cached_msg_min_offset: i64,
    pub cached_msg_max_offset: i64,
    pub cached_msg_count: i32,
    #[serde(rename = "cachedMsgSizeInMiB")]
    pub cached_msg_size_in_mib: i32,
    /// Messages an orderly listener is consuming right now.
    pub transaction_msg_min_offset: i64,
    pub transaction_msg_max_offset: i64,
    pub transaction_msg_count: i32,
    pub locked: bool,
    pub try_unlock_times: i64,
    pub last_lock_timestamp: i64,
    /// Java's spelling.
    pub droped: bool,
    pub last_pull_timestamp: i64,
    pub last_consume_timestamp: i64,
}

/// Pull and consume rates of one topic (`ConsumeStatus`): averages over the last minute,
/// failures over the last hour.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsumeStatus {
    /// Milliseconds per pull.
    #[serde(rename = "pullRT")]
    pub pull_rt: f64,
    /// Messages pulled per second.
    #[serde(rename = "pullTPS")]
    pub pull_tps: f64,
    /// Milliseconds per listener call.
    #[serde(rename = "consumeRT")]
    pub consume_rt: f64,
    #[serde(rename = "consumeOKTPS")]
    pub consume_ok_tps: f64,
    #[serde(rename = "consumeFailedTPS")]
    pub consume_failed_tps: f64,
    #[serde(rename = "consumeFailedMsgs")]
    pub consume_failed_msgs: i64,
}

/// GET_CONSUMER_RUNNING_INFO answer (`ConsumerRunningInfo`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerRunningInfo {
    /// The consumer's settings (Java's field names) and the `PROP_*` keys of
    /// [`running_prop`].
    #[serde(deserialize_with = "string_map")]
    pub properties: BTreeMap<String, String>,
    pub subscription_set: Vec<SubscriptionData>,
    pub mq_table: MqKeyMap<ProcessQueueInfo>,
    /// POP queues (RocketMQ 5 push consumers in POP mode); StellMQ's client has none.
    pub mq_pop_table: MqKeyMap<serde_json::Value>,
    /// Per subscribed topic.
    pub status_table: BTreeMap<String, ConsumeStatus>,
    #[serde(deserialize_with = "string_map")]
    pub user_consumer_info: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jstack: Option<String>,
}

/// Java `Properties` values are strings, but tolerate any scalar.
fn string_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let raw = Option::<BTreeMap<String, Lenient>>::deserialize(d)?.unwrap_or_default();
    Ok(raw
        .into_iter()
        .filter_map(|(k, v)| v.0.map(|v| (k, v)))
        .collect())
}

/// GET_CONSUMER_STATUS_FROM_CLIENT answer (`messageQueueTable`: one client's offsets of a
/// topic) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS answer (`consumerTable`: per client id).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetConsumerStatusBody {
    pub message_queue_table: MqKeyMap<i64>,
    pub consumer_table: BTreeMap<String, MqKeyMap<i64>>,
}

lenient_enum! {
    /// What a listener said about a message consumed directly (`CMResult`).
    CmResult {
        Success = "CR_SUCCESS",
        Later = "CR_LATER",
        Rollback = "CR_ROLLBACK",
        Commit = "CR_COMMIT",
        ThrowException = "CR_THROW_EXCEPTION",
        ReturnNull = "CR_RETURN_NULL",
    } default ReturnNull
}

/// CONSUME_MESSAGE_DIRECTLY answer (`ConsumeMessageDirectlyResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumeMessageDirectlyResult {
    /// Consumed by an orderly listener.
    pub order: bool,
    pub auto_commit: bool,
    pub consume_result: CmResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remark: Option<String>,
    pub spent_time_mills: i64,
}

impl Default for ConsumeMessageDirectlyResult {
    fn default() -> Self {
        Self {
            order: false,
            auto_commit: true,
            consume_result: CmResult::ReturnNull,
            remark: None,
            spent_time_mills: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{fastjson, MessageQueue};

    #[test]
    fn running_info_in_fastjson_form() {
        let mq = MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: 1,
        };
        let mut info = ConsumerRunningInfo::default();
        info.properties.insert(
            running_prop::CONSUME_TYPE.into(),
            "CONSUME_PASSIVELY".into(),
        );
        info.mq_table.0.insert(
            mq,
            ProcessQueueInfo {
                commit_offset: 7,
                droped: true,
                ..Default::default()
            },
        );
        info.status_table.insert(
            "T".into(),
            ConsumeStatus {
                pull_tps: 1.5,
                ..Default::default()
            },
        );
        let text = String::from_utf8(fastjson::encode(&info)).expect("utf8");
        assert!(text.contains(r#""mqTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"#));
        assert!(text.contains(r#""commitOffset":7"#) && text.contains(r#""droped":true"#));
        assert!(text.contains(r#""cachedMsgSizeInMiB":0"#));
        assert!(text.contains(r#""pullTPS":1.5"#) && text.contains(r#""consumeOKTPS":0.0"#));
        assert!(text.contains(r#""PROP_CONSUME_TYPE":"CONSUME_PASSIVELY""#));
        let back: ConsumerRunningInfo = fastjson::decode(text.as_bytes()).expect("decodes");
        assert_eq!(back, info);
    }

    #[test]
    fn reads_java_properties_of_any_scalar() {
        let java = r#"{"properties":{"consumeThreadMin":20,"unitMode":false,"PROP_CONSUME_TYPE":"CONSUME_ACTIVELY"},"subscriptionSet":[],"mqTable":{},"statusTable":{}}"#;
        let info: ConsumerRunningInfo = fastjson::decode(java.as_bytes()).expect("decodes");
        assert_eq!(info.properties["consumeThreadMin"], "20");
        assert_eq!(info.properties["unitMode"], "false");
    }

    #[test]
    fn direct_result_and_status_body() {
        let r = ConsumeMessageDirectlyResult {
            consume_result: CmResult::Later,
            spent_time_mills: 3,
            ..Default::default()
        };
        assert_eq!(
            String::from_utf8(fastjson::encode(&r)).expect("utf8"),
            r#"{"autoCommit":true,"consumeResult":"CR_LATER","order":false,"spentTimeMills":3}"#
        );
        let body: GetConsumerStatusBody = fastjson::decode(
            br#"{"consumerTable":{"c1":{{"brokerName":"b","queueId":0,"topic":"T"}:5}},"messageQueueTable":{}}"#,
        )
        .expect("decodes");
        assert_eq!(body.consumer_table["c1"].0.values().next(), Some(&5));
    }
}
