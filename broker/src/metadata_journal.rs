//! Topic and group changes travel with the data (issue #36): a master writes each change
//! as a record of [`JOURNAL_TOPIC`] into its CommitLog, queued so that it precedes every
//! message appended after the change ([`MessageStore::queue_prologue`]), and a slave
//! applies the records it receives, and waits until its config files hold them, before
//! it appends (and so acknowledges) the bytes that follow. A message a SYNC_MASTER
//! acknowledged is therefore never on a slave whose topic table lacks its topic, in
//! classic and controller mode, whatever happens to the master afterwards. (The slave's
//! copy of the master's tables every 10 s stays, for changes made before it was following.)
//!
//! A record is an ordinary message in RocketMQ's format: body JSON, e.g.
//! `{"topic":{...TopicConfig...}}`, `{"topicDeleted":"T"}`, `{"group":{...}}`,
//! `{"groupDeleted":"G"}`, `{"timerDelivered":12}` (timer progress, see [`crate::timer`]).
//! Clients may not send to the topic (an `rmq_sys_` topic).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use stellmq_remoting::protocol::body::{SubscriptionGroupConfig, TopicConfig};
use stellmq_remoting::protocol::message::RecordView;
use stellmq_store::{MessageStore, PutMessage};

use crate::context::now_ms;
use crate::group::SubscriptionGroupManager;
use crate::timer::TimerService;
use crate::topic::TopicConfigManager;
use crate::writer::MessageWriter;

/// The topic of the metadata records.
pub const JOURNAL_TOPIC: &str = "rmq_sys_STELLMQ_METADATA";

/// One change of the broker's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MetadataChange {
    Topic(TopicConfig),
    TopicDeleted(String),
    Group(SubscriptionGroupConfig),
    GroupDeleted(String),
    /// The timer message at this offset of `rmq_sys_wheel_timer` queue 0 was delivered.
    TimerDelivered(i64),
}

/// Where the topic and group managers write their changes (set once the store and the
/// writer exist; a manager without one journals nothing).
pub type JournalSlot = OnceLock<Arc<MetadataJournal>>;

/// A master's side: queues each change as a CommitLog record.
pub struct MetadataJournal {
    store: Arc<MessageStore>,
    writer: Arc<MessageWriter>,
    store_host: SocketAddr,
    /// A task that appends the queued records is on its way.
    draining: AtomicBool,
}

impl MetadataJournal {
    pub fn new(
        store: Arc<MessageStore>,
        writer: Arc<MessageWriter>,
        store_host: SocketAddr,
    ) -> Self {
        Self {
            store,
            writer,
            store_host,
            draining: AtomicBool::new(false),
        }
    }

    /// Queues `change` ahead of every later append (a slave's store drops it), and makes
    /// sure it is appended soon even if nothing else is.
    pub fn record(self: &Arc<Self>, change: &MetadataChange) {
        let body = match serde_json::to_vec(change) {
            Ok(body) => body,
            Err(e) => {
                tracing::error!(error = %e, "a metadata change could not be encoded");
                return;
            }
        };
        let now = now_ms();
        let record = PutMessage {
            topic: JOURNAL_TOPIC.to_owned(),
            queue_id: 0,
            flag: 0,
            body: Bytes::from(body),
            properties: String::new(),
            sys_flag: 0,
            born_timestamp: now,
            born_host: self.store_host,
            store_host: self.store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            wait_store_ok: false,
        };
        if self.store.queue_prologue(record) {
            self.drain_soon();
        }
    }

    /// Appends what is queued on a task of its own (one at a time), waking the slaves.
    fn drain_soon(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // Start-up: the first append takes them.
        };
        if self.draining.swap(true, Ordering::AcqRel) {
            return;
        }
        let journal = self.clone();
        runtime.spawn(async move {
            journal.draining.store(false, Ordering::Release);
            journal.writer.append_prologue().await;
        });
    }
}

/// A slave's side: applies the metadata records among replicated bytes.
pub struct JournalApplier {
    topics: Arc<TopicConfigManager>,
    groups: Arc<SubscriptionGroupManager>,
    timers: Arc<TimerService>,
    /// When timerProgress.json was last saved (at most once a second: a slave that crashes
    /// may deliver the last second's timers again once promoted, at-least-once).
    timers_saved: parking_lot::Mutex<Option<std::time::Instant>>,
}

/// How often a slave saves the timer progress it replicates.
const SAVE_TIMERS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl JournalApplier {
    pub fn new(
        topics: Arc<TopicConfigManager>,
        groups: Arc<SubscriptionGroupManager>,
        timers: Arc<TimerService>,
    ) -> Self {
        Self {
            topics,
            groups,
            timers,
            timers_saved: parking_lot::Mutex::new(None),
        }
    }

    /// Applies the metadata records among `records` (whole records back to back, as the
    /// slave's verifier hands them out), then waits until topics.json and
    /// subscriptionGroup.json hold them.
    pub async fn apply_records(&self, records: &[u8]) {
        let mut topics_changed = None;
        let mut groups_changed = None;
        let mut timers_changed = false;
        let mut rest = records;
        while let Ok(record) = RecordView::parse(rest) {
            if record.topic == JOURNAL_TOPIC {
                let body = rest.get(record.body_range.clone()).unwrap_or_default();
                match serde_json::from_slice::<MetadataChange>(body) {
                    Ok(change) => self.apply(
                        change,
                        &mut topics_changed,
                        &mut groups_changed,
                        &mut timers_changed,
                    ),
                    Err(e) => {
                        tracing::warn!(error = %e, "a metadata record from the master could not be read; ignored")
                    }
                }
            }
            rest = rest.get(record.total..).unwrap_or_default();
        }
        if timers_changed {
            self.save_timers_now_and_then();
        }
        if let Some(generation) = topics_changed {
            if !self.topics.persisted(generation).await {
                tracing::warn!("topics.json not written yet after a replicated topic change");
            }
        }
        if let Some(generation) = groups_changed {
            if !self.groups.persisted(generation).await {
                tracing::warn!(
                    "subscriptionGroup.json not written yet after a replicated group change"
                );
            }
        }
    }

    /// Saves the replicated timer progress on a blocking thread, at most once a second.
    fn save_timers_now_and_then(&self) {
        {
            let mut saved = self.timers_saved.lock();
            if saved.is_some_and(|at| at.elapsed() < SAVE_TIMERS_EVERY) {
                return;
            }
            *saved = Some(std::time::Instant::now());
        }
        let timers = self.timers.clone();
        tokio::task::spawn_blocking(move || timers.persist());
    }

    fn apply(
        &self,
        change: MetadataChange,
        topics_changed: &mut Option<u64>,
        groups_changed: &mut Option<u64>,
        timers_changed: &mut bool,
    ) {
        let refused = |what: &str, e: &dyn std::fmt::Display| {
            tracing::warn!(%what, error = %e, "a replicated metadata change was refused");
        };
        match change {
            MetadataChange::Topic(config) => {
                let name = config.topic_name.clone();
                match self.topics.update(config) {
                    Ok(generation) => *topics_changed = Some(generation),
                    Err(e) => refused(&name, &e),
                }
            }
            MetadataChange::TopicDeleted(topic) => {
                if let Some(generation) = self.topics.delete(&topic) {
                    *topics_changed = Some(generation);
                }
            }
            MetadataChange::Group(config) => {
                let name = config.group_name.clone();
                match self.groups.update(config) {
                    Ok(generation) => *groups_changed = Some(generation),
                    Err(e) => refused(&name, &e),
                }
            }
            MetadataChange::GroupDeleted(group) => {
                if let Some(generation) = self.groups.delete(&group) {
                    *groups_changed = Some(generation);
                }
            }
            MetadataChange::TimerDelivered(offset) => {
                self.timers.mark_delivered(offset);
                *timers_changed = true;
            }
        }
    }
}
