//! Timer messages (RocketMQ 5.x arbitrary delays, protocol.md 7.1): a send carrying
//! `TIMER_DELIVER_MS` (absolute), `TIMER_DELAY_SEC` or `TIMER_DELAY_MS` is parked in queue 0
//! of `rmq_sys_wheel_timer` with its real topic and queue and its due time (`TIMER_OUT_MS`),
//! and re-put to its real topic when due.
//!
//! Due times are not in queue order, so the service keeps the undelivered ones in memory,
//! ordered by time. Progress lives in `timerProgress.json`: the offset below which every
//! timer is delivered, plus the delivered offsets above it; a restart reloads the queue from
//! there, so nothing is lost and a clean restart delivers nothing twice (after a crash,
//! deliveries since the last save may repeat, which at-least-once delivery allows).
//!
//! Progress travels with the data (issue #36): each delivery, once stored, is journaled
//! ([`MetadataChange::TimerDelivered`]) ahead of the next append, and a slave marks it
//! delivered as the record arrives ([`TimerService::mark_delivered`]), so a promoted slave
//! does not deliver again what its old master delivered (at most the deliveries whose record
//! the master had not yet appended when it died).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use stellmq_remoting::protocol::message::{
    delay_level_of, property, MessageRecord, Properties, PropertyLookup,
};
use stellmq_store::{AcceptAll, GetMessageStatus, MessageStore, PutMessage};

use crate::context::Clock;
use crate::deferred::{self, DueDelivery};
use crate::metadata_journal::{JournalSlot, MetadataChange, MetadataJournal};
use crate::persist;

pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
const DELIVER_MS: &str = "TIMER_DELIVER_MS";
const DELAY_SEC: &str = "TIMER_DELAY_SEC";
const DELAY_MS: &str = "TIMER_DELAY_MS";
const OUT_MS: &str = "TIMER_OUT_MS";
/// A recall's marker in the timer queue names the timer it takes back (`<topic>+<uniqKey>`).
const DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";

mod recall;
pub use recall::Recall;

/// When a send's timer properties say it is due: `Ok(None)` for an ordinary message (or
/// one already due), an error for a malformed or too distant time. The clock is read only
/// for a message with a timer.
pub fn due_time(
    props: &impl PropertyLookup,
    now: impl FnOnce() -> i64,
    max_delay_sec: i64,
) -> Result<Option<i64>, String> {
    let number = |key: &str| -> Result<Option<i64>, String> {
        props
            .get(key)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("{key} is not a number: {v}"))
            })
            .transpose()
    };
    enum Due {
        At(i64),
        In(i64),
    }
    let due = if let Some(at) = number(DELIVER_MS)? {
        Due::At(at)
    } else if let Some(secs) = number(DELAY_SEC)? {
        Due::In(secs.saturating_mul(1000))
    } else if let Some(ms) = number(DELAY_MS)? {
        Due::In(ms)
    } else {
        return Ok(None);
    };
    if props.get(OUT_MS).is_some() {
        // Delivered by a timer already (RocketMQ's double check): not parked again.
        return Ok(None);
    }
    let now = now();
    let due = match due {
        Due::At(at) => at,
        Due::In(ms) => now.saturating_add(ms),
    };
    if delay_level_of(props.get(property::DELAY)) > 0 {
        return Err("a message cannot have both a delay level and a timer".into());
    }
    if due.saturating_sub(now) > max_delay_sec.saturating_mul(1000) {
        return Err(format!(
            "the timer is more than timerMaxDelaySec ({max_delay_sec} s) away"
        ));
    }
    Ok((due > now).then_some(due))
}

/// Parks a send in the timer queue until `due`.
pub fn to_timer(msg: &mut PutMessage, props: &mut Properties, due: i64) {
    props.insert(OUT_MS, due.to_string());
    deferred::park(msg, props, TIMER_TOPIC, 0);
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Progress {
    /// Every timer below this queue offset is delivered.
    delivered_below: i64,
    /// Delivered timers at or above it.
    delivered: BTreeSet<i64>,
}

impl Progress {
    fn is_delivered(&self, offset: i64) -> bool {
        offset < self.delivered_below || self.delivered.contains(&offset)
    }

    /// Moves the "delivered below" mark over delivered offsets and those under `min`.
    fn compact(&mut self, min: i64) {
        if self.delivered_below < min {
            self.delivered_below = min;
            self.delivered = self.delivered.split_off(&min);
        }
        while self.delivered.remove(&self.delivered_below) {
            self.delivered_below += 1;
        }
    }
}

#[derive(Default)]
struct State {
    progress: Progress,
    /// Next queue offset to load into `pending`.
    loaded_to: i64,
    /// Undelivered timers: (due time, queue offset), with the key a recall names it by.
    pending: BTreeMap<(i64, i64), Option<String>>,
    /// The pending timers by recall key (`<topic>+<uniqKey>`).
    by_key: HashMap<String, (i64, i64)>,
}

impl State {
    /// Takes a timer out of `pending` (delivered, recalled or delivered elsewhere).
    fn forget(&mut self, at: (i64, i64)) {
        if let Some(Some(key)) = self.pending.remove(&at) {
            if self.by_key.get(&key) == Some(&at) {
                self.by_key.remove(&key);
            }
        }
    }
}

/// What a recall names a timer by: RocketMQ's `TimerMessageStore.buildDeleteKey`.
fn recall_key(topic: &str, uniq_key: &str) -> String {
    format!("{topic}+{uniq_key}")
}

pub struct TimerService {
    store: Arc<MessageStore>,
    path: PathBuf,
    state: Mutex<State>,
    clock: Arc<Clock>,
    /// Held by a tick and by a recall: a timer is never delivered while it is recalled.
    ticking: tokio::sync::Mutex<()>,
    /// Where deliveries are written for the slaves.
    journal: JournalSlot,
}

impl TimerService {
    /// The service over `store`'s timer queue, its progress in `path`; timers fall due on
    /// `clock` (the broker's, which tests move forward).
    pub fn load(
        store: Arc<MessageStore>,
        path: PathBuf,
        clock: Arc<Clock>,
    ) -> std::io::Result<Self> {
        let progress: Progress = persist::load(&path)?.unwrap_or_default();
        let state = State {
            loaded_to: progress.delivered_below,
            progress,
            pending: BTreeMap::new(),
            by_key: HashMap::new(),
        };
        Ok(Self {
            store,
            path,
            state: Mutex::new(state),
            clock,
            ticking: tokio::sync::Mutex::new(()),
            journal: JournalSlot::new(),
        })
    }

    /// From now on every delivery is journaled for the slaves.
    pub fn set_journal(&self, journal: Arc<MetadataJournal>) {
        let _ = self.journal.set(journal);
    }

    /// A slave: its master delivered the timer at `offset` (a journaled record).
    pub fn mark_delivered(&self, offset: i64) {
        let min = self.store.min_offset_in_queue(TIMER_TOPIC, 0);
        let mut state = self.state.lock();
        state.progress.delivered.insert(offset);
        state.progress.compact(min);
    }

    pub fn persist(&self) {
        let state = self.state.lock();
        if let Err(e) = persist::store(&self.path, &state.progress) {
            tracing::error!(file = %self.path.display(), error = %e, "cannot persist timerProgress.json");
        }
    }

    /// Timer messages in the timer queue not delivered yet (0: nothing left to deliver).
    pub fn backlog(&self) -> i64 {
        let end = self.store.max_offset_in_queue(TIMER_TOPIC, 0);
        let state = self.state.lock();
        let progress = &state.progress;
        let delivered_above = progress
            .delivered
            .range(progress.delivered_below..end)
            .count() as i64;
        (end - progress.delivered_below - delivered_above).max(0)
    }

    /// Loads new timers, delivers the due ones; returns how many were delivered.
    pub async fn tick(&self) -> usize {
        let _tick = self.ticking.lock().await;
        self.load_new();
        let mut delivered = 0;
        loop {
            let due = {
                let state = self.state.lock();
                state
                    .pending
                    .first_key_value()
                    .map(|(at, _)| *at)
                    .filter(|(at, _)| *at <= self.clock.now_ms())
            };
            let Some((at, offset)) = due else { break };
            // Delivered while this broker was a slave (loaded when it was master before).
            {
                let mut state = self.state.lock();
                if state.progress.is_delivered(offset) {
                    state.forget((at, offset));
                    continue;
                }
            }
            if !self.deliver(offset).await {
                break; // retried on the next tick
            }
            if let Some(journal) = self.journal.get() {
                journal.record(&MetadataChange::TimerDelivered(offset));
            }
            let mut state = self.state.lock();
            state.forget((at, offset));
            state.progress.delivered.insert(offset);
            delivered += 1;
        }
        self.advance();
        delivered
    }

    fn load_new(&self) {
        let mut state = self.state.lock();
        let min = self.store.min_offset_in_queue(TIMER_TOPIC, 0);
        let mut offset = state.loaded_to.max(min).max(state.progress.delivered_below);
        loop {
            let got = self
                .store
                .get_messages(TIMER_TOPIC, 0, offset, 32, &AcceptAll);
            if got.status != GetMessageStatus::Found {
                break;
            }
            for (raw, queue_offset) in got.messages.iter().zip(&got.queue_offsets) {
                if state.progress.is_delivered(*queue_offset) {
                    continue;
                }
                let record = MessageRecord::decode(raw, false).ok().map(|(r, _)| r);
                let props = record.as_ref().map(|r| &r.properties);
                if let Some(recalled) = props.and_then(|p| p.get(DEL_UNIQKEY)) {
                    // A recall's marker: it takes its timer back and is never delivered.
                    if let Some(at) = state.by_key.get(recalled).copied() {
                        state.forget(at);
                        state.progress.delivered.insert(at.1);
                    }
                    state.progress.delivered.insert(*queue_offset);
                    continue;
                }
                let due = props
                    .and_then(|p| p.get(OUT_MS)?.parse::<i64>().ok())
                    .unwrap_or(0);
                let key = props.and_then(|p| {
                    Some(recall_key(
                        p.get(property::REAL_TOPIC)?,
                        p.get(property::UNIQ_KEY)?,
                    ))
                });
                let at = (due, *queue_offset);
                if let Some(key) = &key {
                    state.by_key.insert(key.clone(), at);
                }
                state.pending.insert(at, key);
            }
            offset = got.next_begin_offset;
        }
        state.loaded_to = offset;
    }

    /// Moves the "delivered below" mark over delivered (or cleaned away) offsets.
    fn advance(&self) {
        let min = self.store.min_offset_in_queue(TIMER_TOPIC, 0);
        self.state.lock().progress.compact(min);
    }

    /// Re-puts the timer at `offset` to its real topic and queue.
    async fn deliver(&self, offset: i64) -> bool {
        let got = self
            .store
            .get_messages(TIMER_TOPIC, 0, offset, 1, &AcceptAll);
        let record = got
            .messages
            .first()
            .and_then(|raw| MessageRecord::decode(raw, false).ok())
            .map(|(r, _)| r);
        let Some(record) = record.filter(|_| got.status == GetMessageStatus::Found) else {
            return true; // cleaned away: nothing left to deliver
        };
        let mut props = record.properties.clone();
        let Some((topic, queue_id)) = deferred::take_real_target(&mut props) else {
            tracing::error!(offset, "timer message without REAL_TOPIC/REAL_QID skipped");
            return true;
        };
        // TIMER_DELIVER_MS and the rest stay, as in RocketMQ: consumers see when it was due
        // (a RocketMQ 5 client's delivery timestamp), and TIMER_OUT_MS keeps it from being
        // parked again.
        props.insert(property::WAIT, "false");
        let msg = PutMessage::from_record(&record, &props, topic, queue_id, record.head.store_host);
        let result = self.store.put_message(msg).await;
        if !result.status.is_stored() {
            tracing::warn!(status = ?result.status, "delivering a timer message failed; will retry");
        }
        result.status.is_stored()
    }
}

impl DueDelivery for TimerService {
    async fn deliver_due(&self) -> usize {
        self.tick().await
    }

    fn persist(&self) {
        TimerService::persist(self);
    }
}
