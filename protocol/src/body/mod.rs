//! JSON bodies (protocol.md 3), with serde, in fastjson's dialect where clients need it.
//!
//! Encode with [`fastjson::encode`] (or [`fastjson::encode_standard`]) and decode with
//! [`fastjson::decode`], which accepts both dialects.

pub mod acl;
pub mod admin;
pub mod auth;
pub mod consume_time;
pub mod consumer_running;
pub mod controller;
pub mod fastjson;
pub mod heartbeat;
pub mod lite;
pub mod pop;
pub mod producer_table;
pub mod register;
pub mod route;
pub mod topic;

pub use acl::*;
pub use admin::*;
pub use consume_time::*;
pub use consumer_running::*;
pub use controller::*;
pub use fastjson::{IntKeyMap, MqKeyMap};
pub use heartbeat::*;
pub use producer_table::*;
pub use register::*;
pub use route::*;
pub use topic::*;

use serde::{Deserialize, Serialize};

/// A queue of a topic on one broker group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    // Alphabetical, as fastjson writes them: MessageQueue JSON is used as a map key.
    pub broker_name: String,
    pub queue_id: i32,
    pub topic: String,
}

/// `DataVersion` (protocol.md 3.3): bumped on every change of a broker's topic table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataVersion {
    #[serde(default)]
    pub counter: i64,
    #[serde(default)]
    pub state_version: i64,
    #[serde(default)]
    pub timestamp: i64,
}

impl DataVersion {
    /// A fresh version stamped `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        Self {
            counter: 0,
            state_version: 0,
            timestamp: now_ms,
        }
    }

    /// Records a change.
    pub fn next(&mut self, now_ms: i64) {
        self.counter += 1;
        self.timestamp = now_ms;
    }
}

/// `KVTable`: `{"table":{"k":"v"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KvTable {
    #[serde(default)]
    pub table: std::collections::BTreeMap<String, String>,
}
