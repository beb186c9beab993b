//! Messages as applications build them, what a send returns, and messages as consumers (and
//! requesters waiting for a reply) receive them: the one place a received record becomes a
//! [`ReceivedMessage`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::headers::ReplyMessageRequestHeader;
use stellmq_remoting::protocol::message::{
    encode_properties_into, encoded_properties_len, property, MessageRecord, MessageVersion,
    Properties, RecordHead,
};

/// `MSG_TYPE` of a reply (request/reply).
pub const REPLY_TYPE: &str = "reply";

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

    /// A reply to a request (sent with SEND_REPLY_MESSAGE_V2).
    pub(crate) fn is_reply(&self) -> bool {
        self.property(property::MSG_TYPE) == Some(REPLY_TYPE)
    }

    pub(crate) fn encoded_properties(&self) -> String {
        let mut out = String::with_capacity(encoded_properties_len(&self.properties));
        encode_properties_into(&self.properties, &mut out);
        out
    }

    pub(crate) fn properties(&self) -> &BTreeMap<String, String> {
        &self.properties
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
    /// The broker's region (`MSG_REGION` of its answer; empty if it sent none).
    pub region_id: String,
    /// Whether the broker takes traces (`TRACE_ON` of its answer, true if absent).
    pub trace_on: bool,
    /// A timer message's handle for [`crate::Producer::recall_message`] (RocketMQ 5.3.2+
    /// brokers).
    pub recall_handle: Option<String>,
}

/// A message as consumers see it: the body inflated, a retried message's original topic
/// restored and, for a consumer with a namespace, the topic without it.
#[derive(Debug, Clone)]
pub struct ReceivedMessage {
    /// The stored record as the broker sent it (broker-side names).
    pub record: MessageRecord,
    pub body: Bytes,
    /// The queue it was pulled from (a `%RETRY%` queue for retries). Push and lite pull
    /// consumers name it as the broker does (`<namespace>%<topic>` in a namespace), the pull
    /// consumer as the application passed it to `pull`.
    pub queue: MessageQueue,
    /// The consumer's namespace, taken off [`ReceivedMessage::topic`].
    namespace: Option<Arc<str>>,
}

impl ReceivedMessage {
    pub(crate) fn new(record: MessageRecord, queue: MessageQueue) -> Self {
        let body = record
            .uncompressed_body(64 << 20)
            .unwrap_or_else(|_| record.body.clone());
        Self {
            record,
            body,
            queue,
            namespace: None,
        }
    }

    /// The message as a consumer in `namespace` sees it.
    pub(crate) fn in_namespace(mut self, namespace: Option<&Arc<str>>) -> Self {
        self.namespace = namespace.cloned();
        self
    }

    /// A message the broker pushed to this client (a transaction check's half, a reply): its
    /// queue is known by topic and id only, not by broker name.
    pub(crate) fn pushed(record: MessageRecord) -> Self {
        let queue = MessageQueue {
            topic: record.topic.clone(),
            broker_name: String::new(),
            queue_id: record.head.queue_id,
        };
        Self::new(record, queue)
    }

    /// A reply pushed with PUSH_REPLY_MESSAGE_TO_CLIENT: the header carries what a stored
    /// record would (hosts as `/ip:port`, unparseable ones as `0.0.0.0:0`).
    pub(crate) fn from_reply(h: ReplyMessageRequestHeader, body: Bytes) -> Self {
        let unknown: SocketAddr = ([0, 0, 0, 0], 0).into();
        let host = |s: &str| s.trim_start_matches('/').parse().unwrap_or(unknown);
        Self::pushed(MessageRecord {
            head: RecordHead {
                body_crc: 0,
                queue_id: h.queue_id,
                flag: h.flag,
                queue_offset: 0,
                physical_offset: 0,
                sys_flag: h.sys_flag,
                born_timestamp: h.born_timestamp,
                born_host: host(&h.born_host),
                store_timestamp: h.store_timestamp,
                store_host: host(&h.store_host),
                reconsume_times: h.reconsume_times.unwrap_or(0),
                prepared_transaction_offset: 0,
            },
            version: MessageVersion::V1,
            body,
            topic: h.topic,
            properties: Properties::decode(h.properties.as_deref().unwrap_or("")),
        })
    }

    /// The topic the producer sent to (for retries, the original one), without the
    /// consumer's namespace.
    pub fn topic(&self) -> &str {
        crate::namespace::unwrap(self.namespace.as_deref(), self.origin_topic())
    }

    /// The topic the producer sent to (for retries, the original one) as the broker names it.
    pub(crate) fn origin_topic(&self) -> &str {
        self.record
            .properties
            .get(property::RETRY_TOPIC)
            .unwrap_or(&self.record.topic)
    }

    pub fn tags(&self) -> Option<&str> {
        self.record.properties.tags()
    }

    pub fn keys(&self) -> Vec<&str> {
        self.record.properties.keys().collect()
    }

    pub fn msg_id(&self) -> String {
        self.record.msg_id()
    }

    pub fn reconsume_times(&self) -> i32 {
        self.record.head.reconsume_times
    }

    pub fn queue_offset(&self) -> i64 {
        self.record.head.queue_offset
    }
}
