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
