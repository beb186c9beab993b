//! Taking back a timer message before it is due (RECALL_MESSAGE, RocketMQ 5.3.2+).
//!
//! A recall is recorded as RocketMQ records it: a marker message in the timer queue whose
//! `TIMER_DEL_UNIQKEY` names the timer (`<topic>+<uniqKey>`). The marker travels with the
//! CommitLog, so a slave promoted later, or this broker after a restart, drops the timer
//! when it loads the marker. Unlike RocketMQ, which stores a marker for any handle, StellMQ
//! first checks that the timer still waits here: a recall of a delivered, already recalled
//! or unknown message is refused.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use stellmq_remoting::protocol::message::{property, Properties};
use stellmq_store::PutMessage;

use super::{recall_key, TimerService, DELIVER_MS, DEL_UNIQKEY, OUT_MS, TIMER_TOPIC};
use crate::context::now_ms;

/// The tag of a recall's marker (RocketMQ's `RECALL_MESSAGE_TAG`).
const RECALL_TAG: &str = "_RECALL_TAG_";
/// How long a recall waits for dispatch to reach the timer it names.
const DISPATCH_WAIT: Duration = Duration::from_secs(3);

/// A recall under way: no timer is delivered until it is committed or dropped.
pub struct Recall<'a> {
    timers: &'a TimerService,
    _tick: tokio::sync::MutexGuard<'a, ()>,
    topic: String,
    uniq_key: String,
    key: String,
    at: (i64, i64),
}

impl TimerService {
    /// Starts taking back the timer message `uniq_key` of `topic`; `None` when no such
    /// timer waits here (delivered, recalled already, or never sent here).
    pub async fn begin_recall(&self, topic: &str, uniq_key: &str) -> Option<Recall<'_>> {
        // The handle came from an acknowledged send: let dispatch reach what the CommitLog
        // holds now, so that the timer is in the timer queue to be found.
        self.dispatched_past(self.store.commit_log_max_offset())
            .await;
        let tick = self.ticking.lock().await;
        self.load_new();
        let key = recall_key(topic, uniq_key);
        let at = self.state.lock().by_key.get(&key).copied()?;
        Some(Recall {
            timers: self,
            _tick: tick,
            topic: topic.to_owned(),
            uniq_key: uniq_key.to_owned(),
            key,
            at,
        })
    }
}

impl TimerService {
    /// Waits (at most [`DISPATCH_WAIT`]) until dispatch has passed CommitLog offset `target`.
    async fn dispatched_past(&self, target: i64) {
        let deadline = tokio::time::Instant::now() + DISPATCH_WAIT;
        while self.store.dispatched_to() < target && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

impl Recall<'_> {
    /// When the recalled timer was due.
    pub fn due_ms(&self) -> i64 {
        self.at.0
    }

    /// The marker to store in the timer queue, as RocketMQ's `RecallMessageProcessor`
    /// builds it: body "0", tag `_RECALL_TAG_`, the timer's key, id and due time.
    pub fn marker(
        &self,
        producer_group: Option<&str>,
        born_host: SocketAddr,
        store_host: SocketAddr,
    ) -> PutMessage {
        let now = now_ms();
        let mut props = Properties::new();
        props.insert(property::TAGS, RECALL_TAG);
        props.insert(DEL_UNIQKEY, self.key.clone());
        props.insert(property::UNIQ_KEY, self.uniq_key.clone());
        props.insert(DELIVER_MS, self.due_ms().to_string());
        props.insert(OUT_MS, self.due_ms().to_string());
        props.insert(property::REAL_TOPIC, self.topic.clone());
        props.insert(property::REAL_QID, "0");
        if let Some(group) = producer_group.filter(|g| !g.is_empty()) {
            props.insert(property::PGROUP, group);
        }
        PutMessage {
            topic: TIMER_TOPIC.to_owned(),
            queue_id: 0,
            flag: 0,
            body: Bytes::from_static(b"0"),
            properties: props.encode(),
            sys_flag: 0,
            born_timestamp: now,
            born_host,
            store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            wait_store_ok: true,
        }
    }

    /// The marker is stored: the timer is never delivered.
    pub fn commit(self) {
        let mut state = self.timers.state.lock();
        state.forget(self.at);
        state.progress.delivered.insert(self.at.1);
    }
}
