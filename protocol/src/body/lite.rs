//! Bodies of RocketMQ 5.5's lite topic requests.

use serde::{Deserialize, Serialize};

/// What LITE_SUBSCRIPTION_CTL asks of one client (`LiteSubscriptionDTO`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteSubscriptionDto {
    /// `PARTIAL_ADD`, `PARTIAL_REMOVE`, `COMPLETE_ADD` or `COMPLETE_REMOVE`.
    #[serde(default)]
    pub action: String,
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub group: String,
    /// The parent topic.
    #[serde(default)]
    pub topic: String,
    /// Lite topic names (not their queues' names).
    #[serde(default)]
    pub lite_topic_set: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

/// LITE_SUBSCRIPTION_CTL's body (`LiteSubscriptionCtlRequestBody`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteSubscriptionCtlRequestBody {
    #[serde(default)]
    pub subscription_set: Vec<LiteSubscriptionDto>,
}

/// The actions of [`LiteSubscriptionDto::action`].
pub mod action {
    pub const PARTIAL_ADD: &str = "PARTIAL_ADD";
    pub const PARTIAL_REMOVE: &str = "PARTIAL_REMOVE";
    pub const COMPLETE_ADD: &str = "COMPLETE_ADD";
    pub const COMPLETE_REMOVE: &str = "COMPLETE_REMOVE";
}

use std::collections::{BTreeMap, BTreeSet};

use super::{OffsetWrapper, TopicOffset};

/// GET_BROKER_LITE_INFO's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetBrokerLiteInfoResponseBody {
    #[serde(default)]
    pub store_type: String,
    #[serde(default)]
    pub max_lmq_num: i32,
    #[serde(default)]
    pub current_lmq_num: i32,
    #[serde(default)]
    pub lite_subscription_count: i32,
    #[serde(default)]
    pub order_info_count: i32,
    #[serde(default)]
    pub cq_table_size: i32,
    #[serde(default)]
    pub offset_table_size: i32,
    #[serde(default)]
    pub event_map_size: i32,
    /// Each LITE topic and its lite topics' expiration (minutes).
    #[serde(default)]
    pub topic_meta: BTreeMap<String, i32>,
    /// Each parent topic and the groups bound to it.
    #[serde(default)]
    pub group_meta: BTreeMap<String, BTreeSet<String>>,
}

/// GET_PARENT_TOPIC_INFO's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetParentTopicInfoResponseBody {
    #[serde(default)]
    pub topic: String,
    #[serde(default)]
    pub ttl: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<BTreeSet<String>>,
    #[serde(default)]
    pub lmq_num: i32,
    #[serde(default)]
    pub lite_topic_count: i32,
}

/// A client of a group (`ClientGroup`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientGroup {
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub group: String,
}

/// GET_LITE_TOPIC_INFO's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetLiteTopicInfoResponseBody {
    #[serde(default)]
    pub parent_topic: String,
    #[serde(default)]
    pub lite_topic: String,
    #[serde(default)]
    pub subscriber: Vec<ClientGroup>,
    #[serde(default)]
    pub topic_offset: TopicOffset,
    #[serde(default)]
    pub sharding_to_broker: bool,
}

/// GET_LITE_CLIENT_INFO's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetLiteClientInfoResponseBody {
    #[serde(default)]
    pub parent_topic: String,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub last_access_time: i64,
    #[serde(default)]
    pub last_consume_time: i64,
    /// -1 when the broker does not know the client.
    #[serde(default)]
    pub lite_topic_count: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lite_topic_set: Option<BTreeSet<String>>,
}

/// A lite topic's lag (`LiteLagInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteLagInfo {
    #[serde(default)]
    pub lite_topic: String,
    #[serde(default)]
    pub lag_count: i64,
    #[serde(default = "minus_one")]
    pub earliest_unconsumed_timestamp: i64,
}

fn minus_one() -> i64 {
    -1
}

/// GET_LITE_GROUP_INFO's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetLiteGroupInfoResponseBody {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub parent_topic: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lite_topic: Option<String>,
    #[serde(default = "minus_one")]
    pub earliest_unconsumed_timestamp: i64,
    #[serde(default)]
    pub total_lag_count: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lite_topic_offset_wrapper: Option<OffsetWrapper>,
    #[serde(default)]
    pub lag_count_top_k: Vec<LiteLagInfo>,
    #[serde(default)]
    pub lag_timestamp_top_k: Vec<LiteLagInfo>,
}
