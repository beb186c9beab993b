//! RocketMQ 5 POP consumption (docs/pop.md): POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
//! CHANGE_MESSAGE_INVISIBLETIME, PEEK_MESSAGE, NOTIFICATION and POLLING_INFO, and the revive
//! service that brings back what was not acked in time.
//!
//! - `message.rs`: POP_MESSAGE reads queues (and the group's POP retry topic `%RETRY%<group>_<topic>`),
//!   writes a checkpoint per queue read to the revive log, moves the group's offset.
//! - `hold.rs`: long polling of POPs and notifications that found nothing.
//! - `ack.rs`, `change.rs`: acks and invisible-time changes, written to the revive log.
//! - `checkpoint.rs`: the batches in flight (memory, bounded); `order.rs`: orderly POP.
//! - `revive.rs`: rebuilds the checkpoints from the revive log at start, re-delivers
//!   expired messages through the retry topic (or the DLQ), and saves its progress.
//! - `peek.rs`: PEEK_MESSAGE, NOTIFICATION and POLLING_INFO.
//!
//! Lock order: a queue lock ([`QueueLocks`]) is taken before the checkpoint or order table's
//! mutex; those mutexes are never held across an await or while taking another.

pub mod ack;
pub mod change;
pub mod checkpoint;
mod handle;
pub mod hold;
pub mod lite;
mod message;
pub mod order;
pub mod peek;
pub mod revive;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use stellmq_remoting::net::{ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::{perm, SubscriptionGroupConfig, TopicConfig};
use stellmq_remoting::protocol::message::{property, Properties};
use stellmq_remoting::protocol::ResponseCode;
use stellmq_store::{MessageStore, PutMessage};

use super::{guard, FAQ};
use crate::config::BrokerConfig;
use crate::context::{BrokerIdentity, Clock};
use crate::filter::SelectorCache;
use crate::group::SubscriptionGroupManager;
use crate::offset::ConsumerOffsetManager;
use crate::settings::Settings;
use crate::stats::BrokerStats;
use crate::topic::TopicConfigManager;
use crate::writer::{response_code, MessageWriter};
use checkpoint::CheckpointTable;
use order::OrderTable;

pub use hold::PopHoldService;
pub use message::PopProcessor;

/// The revive service's consumer group (`PopAckConstants.REVIVE_GROUP`).
pub const REVIVE_GROUP: &str = "CID_RMQ_SYS_REVIVE_GROUP";
/// The revive log topic is this plus the cluster name (`PopAckConstants.REVIVE_TOPIC`).
pub const REVIVE_TOPIC_PREFIX: &str = "rmq_sys_REVIVE_LOG_";
/// Tags of the revive log's records.
pub const CK_TAG: &str = "ck";
pub const ACK_TAG: &str = "ack";
pub const BATCH_ACK_TAG: &str = "bAck";

/// The revive log topic of a cluster.
pub fn revive_topic(cluster: &str) -> String {
    format!("{REVIVE_TOPIC_PREFIX}{cluster}")
}

/// The broker settings POP reads (replaced when the configuration changes).
#[derive(Debug, Clone)]
pub struct PopSettings {
    pub broker_permission: i32,
    pub enable_property_filter: bool,
    pub long_polling_max_suspend_millis: u64,
    /// Held POPs in all (`maxPopPollingSize`) and per topic and queue (`popPollingSize`).
    pub max_pop_polling_size: usize,
    pub pop_polling_size: usize,
    /// `popFromRetryProbability` and `popFromRetryProbabilityForPriority`, within 0..=100.
    pub retry_probability: i32,
    pub retry_probability_for_priority: i32,
    /// `priorityOrderAsc`: the highest queue id is the highest priority.
    pub priority_order_asc: bool,
}

impl From<&BrokerConfig> for PopSettings {
    fn from(c: &BrokerConfig) -> Self {
        Self {
            broker_permission: c.broker_permission,
            enable_property_filter: c.enable_property_filter,
            long_polling_max_suspend_millis: c.long_polling_max_suspend_millis,
            max_pop_polling_size: c.max_pop_polling_size,
            pop_polling_size: c.pop_polling_size,
            retry_probability: c.pop_from_retry_probability.clamp(0, 100),
            retry_probability_for_priority: c.pop_from_retry_probability_for_priority.clamp(0, 100),
            priority_order_asc: c.priority_order_asc,
        }
    }
}

/// What POP shares with the rest of the broker.
pub struct PopParts {
    pub identity: Arc<BrokerIdentity>,
    pub settings: Settings<PopSettings>,
    pub store: Arc<MessageStore>,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub writer: Arc<MessageWriter>,
    pub traffic: Arc<BrokerStats>,
    /// Invisible times, revive and POP long-poll deadlines run on this clock.
    pub clock: Arc<Clock>,
}

/// Everything the POP processors and the revive service share. Its parts are private to
/// the POP module: the rest of the broker reaches POP through its processors and services.
pub struct PopCore {
    identity: Arc<BrokerIdentity>,
    settings: Settings<PopSettings>,
    store: Arc<MessageStore>,
    topics: Arc<TopicConfigManager>,
    groups: Arc<SubscriptionGroupManager>,
    offsets: Arc<ConsumerOffsetManager>,
    writer: Arc<MessageWriter>,
    traffic: Arc<BrokerStats>,
    clock: Arc<Clock>,
    selectors: SelectorCache,
    checkpoints: CheckpointTable,
    orders: OrderTable,
    locks: QueueLocks,
    revive_topic: String,
    revive_queue_num: i32,
    ck_counter: AtomicU64,
    /// One revive pass at a time (the service's, or one asked for), so no batch is put back
    /// twice.
    revive_pass: tokio::sync::Mutex<()>,
    /// `config/consumerOrderInfo.json`: the orderly batches, saved.
    order_file: std::path::PathBuf,
    /// Who receives which lite topics.
    lite: lite::LiteRegistry,
}

impl PopCore {
    /// POP over `parts`; the revive log's topic and queue count and the bound on batches in
    /// flight come from `config` as started.
    pub fn new(parts: PopParts, config: &BrokerConfig) -> Self {
        let PopParts {
            identity,
            settings,
            store,
            topics,
            groups,
            offsets,
            writer,
            traffic,
            clock,
        } = parts;
        let order_file = crate::persist::config_path(store.root_dir(), "consumerOrderInfo.json");
        let max = config.pop_max_inflight_checkpoints;
        Self {
            identity,
            settings,
            store,
            topics,
            groups,
            offsets,
            writer,
            traffic,
            selectors: SelectorCache::default(),
            checkpoints: CheckpointTable::new(max),
            orders: OrderTable::new(max),
            locks: QueueLocks::default(),
            revive_topic: revive_topic(&config.broker_cluster_name),
            revive_queue_num: config.revive_queue_num.clamp(1, 64),
            ck_counter: AtomicU64::new(0),
            revive_pass: tokio::sync::Mutex::new(()),
            clock,
            order_file,
            lite: lite::LiteRegistry::new(config.max_lite_subscription_count),
        }
    }

    /// Whether orderly batches are in flight (their file is then saved periodically).
    pub fn has_orderly_batches(&self) -> bool {
        !self.orders.is_empty()
    }

    /// Loads the saved orderly batches (blocking; at start).
    pub fn load_orders(&self) -> std::io::Result<()> {
        if let Some(saved) = crate::persist::load(&self.order_file)? {
            self.orders.restore(saved);
        }
        Ok(())
    }

    /// Saves the orderly batches (blocking).
    pub fn persist_orders(&self) {
        if let Err(e) = crate::persist::store(&self.order_file, &self.orders.snapshot()) {
            tracing::error!(file = %self.order_file.display(), error = %e, "cannot persist consumerOrderInfo.json");
        }
    }

    /// The next revive queue, round robin.
    fn next_revive_qid(&self) -> i32 {
        let n = self.ck_counter.fetch_add(1, Ordering::Relaxed);
        (n % self.revive_queue_num.max(1) as u64) as i32
    }

    fn broker_forbidden(&self, what: &str) -> Option<ProcessorError> {
        let readable = perm::is_readable(self.settings.get().broker_permission);
        if !readable {
            return Some(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!(
                    "the broker[{}] {what} is forbidden",
                    self.identity.broker_addr
                ),
            ));
        }
        if !self.identity.is_master() {
            return Some(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!(
                    "the broker[{}] is a slave; {what} is served by the master of {}",
                    self.identity.broker_addr, self.identity.broker_name
                ),
            ));
        }
        None
    }

    /// The topic, readable, with `queue_id` (-1 = any, when `any_queue`) in range.
    fn readable_topic(
        &self,
        topic: &str,
        queue_id: i32,
        any_queue: bool,
    ) -> Result<TopicConfig, ProcessorError> {
        let config = self.topics.get(topic).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("topic[{topic}] not exist, apply first please!{FAQ}"),
            )
        })?;
        if !perm::is_readable(config.perm) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("the topic[{topic}] peeking message is forbidden"),
            ));
        }
        let low = if any_queue { -1 } else { 0 };
        if queue_id < low || queue_id >= config.read_queue_nums {
            return Err(ProcessorError::system(format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}]",
                config.read_queue_nums
            )));
        }
        Ok(config)
    }

    /// The group, allowed to consume.
    /// A group that must exist already (lite consumption creates none), and may consume.
    fn existing_group(&self, group: &str) -> Result<SubscriptionGroupConfig, ProcessorError> {
        let config = self.groups.get(group).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("subscription group [{group}] does not exist, apply first please!{FAQ}"),
            )
        })?;
        if !config.consume_enable {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("subscription group no permission, {group}"),
            ));
        }
        Ok(config)
    }

    fn consumable_group(&self, group: &str) -> Result<SubscriptionGroupConfig, ProcessorError> {
        if crate::group::is_internal_group(group) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("the group {group} is reserved for the broker"),
            ));
        }
        let config = self
            .groups
            .find_or_create(group)
            .map_err(guard::group_refusal)?;
        if !config.consume_enable {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("subscription group no permission, {group}"),
            ));
        }
        Ok(config)
    }

    /// Appends one record to revive queue `qid`; returns its queue offset once stored (and
    /// flushed or replicated as the broker's modes require).
    async fn append_revive(
        &self,
        ctx: Option<&RequestContext>,
        qid: i32,
        tag: &str,
        uniq: String,
        body: Vec<u8>,
    ) -> Result<i64, ProcessorError> {
        let mut props = Properties::new();
        props.insert(property::TAGS, tag);
        props.insert(property::UNIQ_KEY, uniq);
        let msg = PutMessage {
            topic: self.revive_topic.clone(),
            queue_id: qid,
            flag: 0,
            body: body.into(),
            properties: props.encode(),
            sys_flag: 0,
            born_timestamp: self.clock.now_ms(),
            born_host: self.identity.store_host,
            store_host: self.identity.store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            wait_store_ok: true,
        };
        let result = match ctx {
            Some(ctx) => self.writer.put_for(ctx, vec![msg]).await,
            None => self.writer.put(vec![msg]).await,
        };
        response_code(&result).inspect_err(|e| {
            tracing::warn!(remark = %e.remark, tag, "revive log write failed");
        })?;
        Ok(result.append.map_or(0, |a| a.queue_offset))
    }

    /// Creates the revive log topic (on a master, at start).
    pub fn ensure_revive_topic(&self) {
        self.topics.ensure_internal_topic(
            &self.revive_topic,
            self.revive_queue_num,
            perm::READ | perm::WRITE,
        );
    }
}

/// Per group, topic and queue, at most one POP (or orderly ack) at a time, as RocketMQ's
/// `QueueLockManager`: a POP that finds its queue busy skips it. Entries exist only while
/// held, so the set is bounded by the requests in progress.
#[derive(Default)]
pub struct QueueLocks(Mutex<HashSet<String>>);

/// A held queue lock; released on drop (also when the request is dropped mid-way).
pub struct QueueLockGuard<'a> {
    locks: &'a QueueLocks,
    key: String,
}

impl QueueLocks {
    pub fn key(topic: &str, group: &str, queue_id: i32) -> String {
        format!("{topic}@{group}@{queue_id}")
    }

    pub fn try_lock(&self, key: String) -> Option<QueueLockGuard<'_>> {
        // The set's guard must be gone before a guard is made: a guard made for a busy key
        // (as `then_some` would make it) is dropped at once, and its drop takes the set's
        // lock again (a self-deadlock under parking_lot) and frees the holder's key.
        let inserted = self.0.lock().insert(key.clone());
        inserted.then(|| QueueLockGuard { locks: self, key })
    }

    /// Waits (yielding) until the lock is free; for acks, which must not be skipped.
    pub async fn lock(&self, key: String) -> QueueLockGuard<'_> {
        loop {
            if let Some(guard) = self.try_lock(key.clone()) {
                return guard;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}

impl Drop for QueueLockGuard<'_> {
    fn drop(&mut self) {
        self.locks.0.lock().remove(&self.key);
    }
}

/// The refusal of an ack or change for a handle that expired.
fn expired(extra_info: &str) -> ProcessorError {
    ProcessorError::new(
        ResponseCode::NO_MESSAGE,
        format!(
            "the receipt handle [{extra_info}] has expired: the message's invisible time passed and it is (or will be) delivered again"
        ),
    )
}

/// The refusal of an ack or change for a handle no batch in flight holds.
fn unknown_handle(extra_info: &str) -> ProcessorError {
    ProcessorError::new(
        ResponseCode::NO_MESSAGE,
        format!(
            "no message in flight for the receipt handle [{extra_info}]: it was revived after its invisible time, acked with another handle, or never popped here"
        ),
    )
}

/// A malformed receipt handle.
fn bad_handle(e: stellmq_remoting::protocol::pop::ExtraInfoError) -> ProcessorError {
    ProcessorError::new(ResponseCode::MESSAGE_ILLEGAL, e.to_string())
}

#[cfg(test)]
mod queue_lock_tests {
    use super::QueueLocks;

    #[test]
    fn a_busy_queue_is_skipped_and_its_holder_keeps_it() {
        let locks = QueueLocks::default();
        let key = QueueLocks::key("T", "G", 0);
        let held = locks.try_lock(key.clone()).expect("free");
        // Contended: refused, without deadlocking or freeing the holder's key.
        assert!(locks.try_lock(key.clone()).is_none());
        assert!(locks.try_lock(key.clone()).is_none());
        assert!(locks.try_lock(QueueLocks::key("T", "G", 1)).is_some());
        drop(held);
        assert!(locks.try_lock(key).is_some());
    }
}

#[cfg(test)]
mod priority_tests;
#[cfg(test)]
mod tests;
