//! Messages as applications build them, and what a send returns.

use std::collections::BTreeMap;

use bytes::Bytes;
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::message::{property, Properties};

/// A message to send.
#[derive(Debug, Clone, Default)]
pub struct Message {
    pub topic: String,
    pub body: Bytes,
    pub flag: i32,
    properties: BTreeMap<String, String>,
}

impl Message {
    pub fn new(topic: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Self {
            topic: topic.into(),
            body: body.into(),
            ..Default::default()
        }
    }

    pub fn with_tags(mut self, tags: impl Into<String>) -> Self {
        self.properties.insert(property::TAGS.into(), tags.into());
        self
    }

    /// Business keys, indexed by the broker (space separated on the wire).
    pub fn with_keys<I: IntoIterator<Item = S>, S: Into<String>>(mut self, keys: I) -> Self {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        self.properties
            .insert(property::KEYS.into(), keys.join(" "));
        self
    }

    /// A delay level (1-based, RocketMQ's `messageDelayLevel`).
    pub fn with_delay_level(mut self, level: i32) -> Self {
        self.properties
            .insert(property::DELAY.into(), level.to_string());
        self
    }

    /// Deliver at this time (ms since the epoch; a RocketMQ 5 timer message).
    pub fn with_deliver_time_ms(self, at_ms: i64) -> Self {
        self.with_property("TIMER_DELIVER_MS", at_ms.to_string())
    }

    /// Deliver this many milliseconds after the broker stores it (a RocketMQ 5 timer message).
    pub fn with_delay_time_ms(self, delay_ms: u64) -> Self {
        self.with_property("TIMER_DELAY_MS", delay_ms.to_string())
    }

    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.insert(key.into(), value.into());
        self
    }

    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(String::as_str)
    }

    pub(crate) fn set_property(&mut self, key: &str, value: String) {
        self.properties.insert(key.to_owned(), value);
    }

    pub(crate) fn remove_property(&mut self, key: &str) {
        self.properties.remove(key);
    }

    pub(crate) fn encoded_properties(&self) -> String {
        self.properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Properties>()
            .encode()
    }
}

/// RocketMQ's SendStatus: the first four all mean "stored".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    SendOk,
    FlushDiskTimeout,
    FlushSlaveTimeout,
    SlaveNotAvailable,
}

/// Where a sent message landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    pub status: SendStatus,
    /// The client-generated id (UNIQ_KEY); comma-joined for a batch.
    pub msg_id: String,
    /// The broker's id (store host + physical offset).
    pub offset_msg_id: String,
    pub queue: MessageQueue,
    pub queue_offset: i64,
}
