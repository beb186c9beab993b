//! Consumer-coordination and admin bodies (protocol.md 3.9-3.13).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::fastjson::MqKeyMap;
use super::heartbeat::{ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData};
use super::{DataVersion, MessageQueue};

/// LOCK_BATCH_MQ and UNLOCK_BATCH_MQ request body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockBatchRequestBody {
    pub consumer_group: String,
    pub client_id: String,
    #[serde(default)]
    pub mq_set: Vec<MessageQueue>,
    #[serde(default)]
    pub only_this_broker: bool,
}

/// LOCK_BATCH_MQ response body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LockBatchResponseBody {
    #[serde(rename = "lockOKMQSet", default)]
    pub lock_ok_mq_set: Vec<MessageQueue>,
}

/// Per-queue consume progress in [`ConsumeStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetWrapper {
    pub broker_offset: i64,
    pub consumer_offset: i64,
    #[serde(default)]
    pub last_timestamp: i64,
    #[serde(default)]
    pub pull_offset: i64,
}

/// GET_CONSUME_STATS body.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeStats {
    #[serde(default)]
    pub consume_tps: f64,
    #[serde(default)]
    pub offset_table: MqKeyMap<OffsetWrapper>,
}

/// Per-queue offsets in [`TopicStatsTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicOffset {
    pub min_offset: i64,
    pub max_offset: i64,
    #[serde(default)]
    pub last_update_timestamp: i64,
}

/// GET_TOPIC_STATS_INFO body.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicStatsTable {
    #[serde(default)]
    pub offset_table: MqKeyMap<TopicOffset>,
}

/// One client connection.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    pub client_id: String,
    pub client_addr: String,
    pub language: String,
    pub version: i32,
}

/// GET_CONSUMER_CONNECTION_LIST body.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    #[serde(default)]
    pub connection_set: Vec<Connection>,
    #[serde(default)]
    pub subscription_table: BTreeMap<String, SubscriptionData>,
    #[serde(default)]
    pub consume_type: ConsumeType,
    #[serde(default)]
    pub message_model: MessageModel,
    #[serde(default)]
    pub consume_from_where: ConsumeFromWhere,
}

/// GET_PRODUCER_CONNECTION_LIST body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerConnection {
    #[serde(default)]
    pub connection_set: Vec<Connection>,
}

fn yes() -> bool {
    true
}
fn one_i32() -> i32 {
    1
}
fn one_i64() -> i64 {
    1
}
fn sixteen() -> i32 {
    16
}

/// `SubscriptionGroupConfig` (protocol.md 3.12) with Java's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupConfig {
    pub group_name: String,
    #[serde(default = "yes")]
    pub consume_enable: bool,
    #[serde(default = "yes")]
    pub consume_from_min_enable: bool,
    #[serde(default = "yes")]
    pub consume_broadcast_enable: bool,
    #[serde(default = "one_i32")]
    pub retry_queue_nums: i32,
    #[serde(default = "sixteen")]
    pub retry_max_times: i32,
    #[serde(default)]
    pub broker_id: i64,
    #[serde(default = "one_i64")]
    pub which_broker_when_consume_slowly: i64,
    #[serde(default = "yes")]
    pub notify_consumer_ids_changed_enable: bool,
    #[serde(default)]
    pub consume_message_orderly: bool,
    /// RocketMQ 5's group attributes (`priority.factor`, ...). A request may carry them as
    /// changes (`+key` / `-key`, as `mqadmin updateSubGroup --attributes` sends them).
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

impl SubscriptionGroupConfig {
    pub fn new(group_name: impl Into<String>) -> Self {
        Self {
            group_name: group_name.into(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            retry_queue_nums: 1,
            retry_max_times: 16,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
            consume_message_orderly: false,
            attributes: BTreeMap::new(),
        }
    }

    /// How often in 100 a POP of a PRIORITY topic serves the highest priorities first
    /// (`priority.factor`, 100 when unset or unreadable, as RocketMQ reads it).
    pub fn priority_factor(&self) -> i64 {
        self.attributes
            .get(super::PRIORITY_FACTOR_ATTRIBUTE)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|f| (0..=100).contains(f))
            .unwrap_or(100)
    }
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST's body (`SubscriptionGroupList`): groups to
/// create or update at once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupList {
    #[serde(default)]
    pub group_config_list: Vec<SubscriptionGroupConfig>,
}

/// subscriptionGroup.json and GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupWrapper {
    #[serde(default)]
    pub data_version: DataVersion,
    #[serde(default)]
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
}

/// `ResetOffsetBody` for Java and Go clients: object-keyed offsets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetOffsetBody {
    #[serde(default)]
    pub offset_table: MqKeyMap<i64>,
}

/// GET_BROKER_CONSUME_STATS body: per group, its ConsumeStats per topic.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeStatsList {
    #[serde(default)]
    pub consume_stats_list: Vec<BTreeMap<String, Vec<ConsumeStats>>>,
    #[serde(default)]
    pub broker_addr: String,
    #[serde(default)]
    pub total_diff: i64,
}

/// One entry of [`ResetOffsetBodyForC`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueueOffset {
    pub broker_name: String,
    pub offset: i64,
    pub queue_id: i32,
    pub topic: String,
}

/// `ResetOffsetBodyForC`: the list form the C++ SDK reads.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetOffsetBodyForC {
    #[serde(default)]
    pub offset_table: Vec<MessageQueueOffset>,
}

impl From<&ResetOffsetBody> for ResetOffsetBodyForC {
    fn from(body: &ResetOffsetBody) -> Self {
        Self {
            offset_table: body
                .offset_table
                .0
                .iter()
                .map(|(mq, offset)| MessageQueueOffset {
                    broker_name: mq.broker_name.clone(),
                    offset: *offset,
                    queue_id: mq.queue_id,
                    topic: mq.topic.clone(),
                })
                .collect(),
        }
    }
}

/// One window of [`BrokerStatsData`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct BrokerStatsItem {
    pub sum: i64,
    pub tps: f64,
    pub avgpt: f64,
}

/// VIEW_BROKER_STATS_DATA body.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatsData {
    pub stats_minute: BrokerStatsItem,
    pub stats_hour: BrokerStatsItem,
    pub stats_day: BrokerStatsItem,
}

/// One entry of [`QueryConsumeQueueResponseBody`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeQueueData {
    pub physic_offset: i64,
    pub physic_size: i32,
    pub tags_code: i64,
    #[serde(default)]
    pub extend_data_json: Option<String>,
    #[serde(default)]
    pub bit_map: Option<String>,
    /// Whether the consumer group's subscription would take the entry.
    #[serde(default)]
    pub eval: bool,
    #[serde(default)]
    pub msg: Option<String>,
}

/// QUERY_CONSUME_QUEUE body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryConsumeQueueResponseBody {
    #[serde(default)]
    pub subscription_data: Option<SubscriptionData>,
    #[serde(default)]
    pub filter_data: Option<String>,
    #[serde(default)]
    pub queue_data: Vec<ConsumeQueueData>,
    #[serde(default)]
    pub max_queue_index: i64,
    #[serde(default)]
    pub min_queue_index: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    #[test]
    fn consume_stats_golden() {
        let mq = MessageQueue {
            topic: "T".into(),
            broker_name: "broker-a".into(),
            queue_id: 0,
        };
        let stats = ConsumeStats {
            consume_tps: 0.0,
            offset_table: [(
                mq,
                OffsetWrapper {
                    broker_offset: 120,
                    consumer_offset: 118,
                    last_timestamp: 1_700_000_000_000,
                    pull_offset: 119,
                },
            )]
            .into_iter()
            .collect(),
        };
        let text = String::from_utf8(fastjson::encode(&stats)).expect("utf8");
        assert_eq!(
            text,
            r#"{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":120,"consumerOffset":118,"lastTimestamp":1700000000000,"pullOffset":119}}}"#
        );
        let back: ConsumeStats = fastjson::decode(text.as_bytes()).expect("decodes");
        assert_eq!(back, stats);
    }

    #[test]
    fn group_config_defaults() {
        let g: SubscriptionGroupConfig = fastjson::decode(br#"{"groupName":"g"}"#).expect("ok");
        assert_eq!(g, SubscriptionGroupConfig::new("g"));
    }

    #[test]
    fn reset_body_for_c_is_a_list() {
        let body = ResetOffsetBody {
            offset_table: [(
                MessageQueue {
                    topic: "T".into(),
                    broker_name: "b".into(),
                    queue_id: 0,
                },
                123,
            )]
            .into_iter()
            .collect(),
        };
        assert_eq!(
            String::from_utf8(fastjson::encode(&ResetOffsetBodyForC::from(&body))).expect("utf8"),
            r#"{"offsetTable":[{"brokerName":"b","offset":123,"queueId":0,"topic":"T"}]}"#
        );
    }
}
