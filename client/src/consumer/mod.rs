//! Consumers: [`PushConsumer`] (listener driven, clustering or broadcasting, concurrent or
//! orderly) and [`LitePullConsumer`] (poll driven). Both rest on [`core::ConsumerCore`]:
//! routes, heartbeats, rebalancing, per-queue long-polling pull loops and offset stores.

pub mod allocate;
mod core;
pub mod lite_pull;
pub mod offset_store;
mod pull_loop;
pub mod push;
mod registry;

use bytes::Bytes;
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::message::{property, MessageRecord};

pub use lite_pull::LitePullConsumer;
pub use push::{ConsumeResult, ConsumerConfig, ExpressionType, PushConsumer};

/// A message as consumers see it: the body inflated and a retried message's original topic
/// restored.
#[derive(Debug, Clone)]
pub struct ReceivedMessage {
    pub record: MessageRecord,
    pub body: Bytes,
    /// The queue it was pulled from (a `%RETRY%` queue for retries).
    pub queue: MessageQueue,
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
        }
    }

    /// The topic the producer sent to (for retries, the original one).
    pub fn topic(&self) -> &str {
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
