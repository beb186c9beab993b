//! The reput service: follows the CommitLog, writes ConsumeQueue entries and tells the
//! listener (long polling) that a queue has new messages; index entries go to an
//! [`IndexSink`] (the index thread's feed, or the index itself during recovery).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use stellmq_protocol::lite::{LMQ_DISPATCH_SEPARATOR, LMQ_QUEUE_ID};
use stellmq_protocol::message::{
    delay_level_of, property, split_keys, sys_flag, tags_code, RecordView,
};

use crate::commitlog::{CommitLog, NextRecord};
use crate::consume_queue::ConsumeQueueStore;
use crate::error::StoreError;
use crate::index::{IndexEntry, IndexKeyHasher};
use crate::index_feed::{put_or_log, IndexSink};

/// The delay-message topic, whose tags code is the delivery time (protocol.md 7.1).
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";

/// Told about every dispatched message that got a ConsumeQueue entry.
pub trait MessageArrivingListener: Send + Sync {
    fn arriving(
        &self,
        topic: &str,
        queue_id: i32,
        logical_offset: i64,
        tags_code: i64,
        store_timestamp: i64,
    );
}

/// What dispatch needs from one record, borrowed from it.
#[derive(Debug, Clone)]
pub struct DispatchRequest<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub phys_offset: i64,
    pub size: i32,
    pub tags_code: i64,
    pub store_timestamp: i64,
    /// The `KEYS` property (space-separated keys), if any.
    pub keys: Option<&'a str>,
    /// The `UNIQ_KEY` property (the client's message id), if any.
    pub uniq_key: Option<&'a str>,
    pub to_consume_queue: bool,
    pub to_index: bool,
    /// `INNER_MULTI_DISPATCH` and `INNER_MULTI_QUEUE_OFFSET`: the light message queues
    /// (lite topics) the message also goes to, and its offset in each.
    pub multi_dispatch: Option<(&'a str, &'a str)>,
}

impl<'a> DispatchRequest<'a> {
    pub fn from_record(record: &RecordView<'a>, size: i32, delay_levels: &[i64]) -> Self {
        let kind = sys_flag::transaction_type(record.head.sys_flag);
        let props = DispatchProperties::read(record);
        let tags_code = if record.topic == SCHEDULE_TOPIC {
            let level = delay_level_of(props.delay).clamp(1, delay_levels.len().max(1) as i32);
            let delay = delay_levels.get(level as usize - 1).copied().unwrap_or(0);
            record.head.store_timestamp + delay
        } else {
            tags_code(props.tags)
        };
        Self {
            topic: record.topic,
            queue_id: record.head.queue_id,
            queue_offset: record.head.queue_offset,
            phys_offset: record.head.physical_offset,
            size,
            tags_code,
            store_timestamp: record.head.store_timestamp,
            keys: props.keys,
            uniq_key: props.uniq_key,
            to_consume_queue: kind == sys_flag::TRANSACTION_NOT_TYPE
                || kind == sys_flag::TRANSACTION_COMMIT_TYPE,
            to_index: kind != sys_flag::TRANSACTION_ROLLBACK_TYPE,
            multi_dispatch: props.multi_dispatch.zip(props.multi_offsets),
        }
    }

    /// The light message queues the message also goes to, with its offset in each;
    /// entries whose offset does not parse are left out.
    pub fn lmq_entries(&self) -> impl Iterator<Item = (&'a str, i64)> {
        let (queues, offsets) = self.multi_dispatch.unwrap_or(("", ""));
        queues
            .split(LMQ_DISPATCH_SEPARATOR)
            .zip(offsets.split(LMQ_DISPATCH_SEPARATOR))
            .filter(|(q, _)| !q.is_empty())
            .filter_map(|(q, o)| Some((q, o.trim().parse::<i64>().ok()?)))
    }

    /// Appends the message's index entries (`topic#key` for each key of `KEYS`, then for
    /// `UNIQ_KEY`, as RocketMQ's IndexService builds them) to `out`.
    pub fn index_entries(&self, out: &mut Vec<IndexEntry>) {
        if self.keys.is_none() && self.uniq_key.is_none() {
            return;
        }
        let hasher = IndexKeyHasher::new(self.topic);
        let listed = split_keys(self.keys.unwrap_or(""));
        out.extend(listed.chain(self.uniq_key).map(|key| IndexEntry {
            key_hash: hasher.hash(key),
            phys_offset: self.phys_offset,
            store_timestamp: self.store_timestamp,
        }));
    }
}

/// The properties dispatch reads, found in one pass over the record's properties.
#[derive(Default)]
struct DispatchProperties<'a> {
    tags: Option<&'a str>,
    keys: Option<&'a str>,
    uniq_key: Option<&'a str>,
    delay: Option<&'a str>,
    multi_dispatch: Option<&'a str>,
    multi_offsets: Option<&'a str>,
}

impl<'a> DispatchProperties<'a> {
    fn read(record: &RecordView<'a>) -> Self {
        let mut found = Self::default();
        for (name, value) in record.property_entries() {
            let slot = match name {
                property::TAGS => &mut found.tags,
                property::KEYS => &mut found.keys,
                property::UNIQ_KEY => &mut found.uniq_key,
                property::DELAY => &mut found.delay,
                property::INNER_MULTI_DISPATCH => &mut found.multi_dispatch,
                property::INNER_MULTI_QUEUE_OFFSET => &mut found.multi_offsets,
                _ => continue,
            };
            // The last entry of a name counts, as in `Properties::decode`.
            *slot = Some(value);
        }
        found
    }
}

/// Dispatch state: where to continue in the CommitLog.
pub struct Dispatcher {
    reput_from: AtomicI64,
    /// Store time of the last dispatched message (checkpoint input).
    last_store_timestamp: AtomicI64,
    delay_levels: Vec<i64>,
    index_enabled: bool,
    /// Set when the store stops: a round far behind ends at its next hand-over instead of
    /// dispatching everything first (the next start continues from where it stopped).
    stop: AtomicBool,
    /// Only records that end at or before this offset are dispatched (RocketMQ 5's confirm
    /// offset: what every replica that may be elected has); `i64::MAX` when nothing waits.
    limit: AtomicI64,
}

impl Dispatcher {
    pub fn new(reput_from: i64, delay_levels: Vec<i64>, index_enabled: bool) -> Self {
        Self {
            reput_from: AtomicI64::new(reput_from),
            last_store_timestamp: AtomicI64::new(0),
            delay_levels,
            index_enabled,
            stop: AtomicBool::new(false),
            limit: AtomicI64::new(i64::MAX),
        }
    }

    /// Dispatches no record that ends past `offset` until the limit is raised.
    pub fn set_limit(&self, offset: i64) {
        self.limit.store(offset, Ordering::Release);
    }

    pub fn limit(&self) -> i64 {
        self.limit.load(Ordering::Acquire)
    }

    /// Makes a running round end early (the store is stopping).
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    pub fn reput_from(&self) -> i64 {
        self.reput_from.load(Ordering::Acquire)
    }

    pub fn last_store_timestamp(&self) -> i64 {
        self.last_store_timestamp.load(Ordering::Acquire)
    }

    /// After the CommitLog was cut at `offset` (the dispatcher not running): continue from
    /// there at the latest, and report no store time past `store_timestamp`.
    pub fn rewind(&self, offset: i64, store_timestamp: i64) {
        self.reput_from.fetch_min(offset, Ordering::AcqRel);
        self.last_store_timestamp
            .fetch_min(store_timestamp, Ordering::AcqRel);
    }

    /// Dispatches everything written so far; returns how many records it handled.
    pub fn run_once(
        &self,
        log: &CommitLog,
        queues: &ConsumeQueueStore,
        index: IndexSink<'_>,
        listener: Option<&dyn MessageArrivingListener>,
    ) -> Result<usize, StoreError> {
        let mut jobs = Vec::new();
        let mut offset = self.reput_from().max(log.min_offset());
        let result = self.dispatch_all(log, queues, index, listener, &mut jobs, &mut offset);
        // Progress is published only once the index jobs are queued, so "dispatched" (no
        // bytes behind) also means every dispatched message's keys reached the index feed.
        hand_over(index, jobs);
        self.reput_from.store(offset, Ordering::Release);
        result
    }

    fn dispatch_all(
        &self,
        log: &CommitLog,
        queues: &ConsumeQueueStore,
        index: IndexSink<'_>,
        listener: Option<&dyn MessageArrivingListener>,
        jobs: &mut Vec<IndexEntry>,
        offset: &mut i64,
    ) -> Result<usize, StoreError> {
        let mut handled: usize = 0;
        loop {
            match log.next_record(*offset) {
                NextRecord::Record(bytes) => {
                    let size = bytes.len();
                    if (*offset).saturating_add(size as i64) > self.limit() {
                        return Ok(handled);
                    }
                    let record = match RecordView::parse(&bytes) {
                        Ok(record) => record,
                        Err(e) => {
                            // Appends publish whole records, so this is corruption: stop here
                            // rather than skip data; recovery will deal with it.
                            tracing::error!(offset = *offset, error = %e, "undecodable CommitLog record; dispatch halted");
                            return Err(StoreError::Corrupt {
                                path: log.segments().dir().to_owned(),
                                reason: format!("record at {}: {e}", *offset),
                            });
                        }
                    };
                    let req =
                        DispatchRequest::from_record(&record, size as i32, &self.delay_levels);
                    self.dispatch(req, queues, index, listener, jobs)?;
                    *offset += size as i64;
                    handled += 1;
                    if jobs.len() >= HAND_OVER_EVERY || handled.is_multiple_of(HAND_OVER_EVERY) {
                        hand_over(index, std::mem::take(jobs));
                        self.reput_from.store(*offset, Ordering::Release);
                        if self.stop.load(Ordering::Acquire) {
                            return Ok(handled);
                        }
                    }
                }
                NextRecord::Skip(next) => *offset = next,
                NextRecord::None => return Ok(handled),
            }
        }
    }

    fn dispatch(
        &self,
        req: DispatchRequest<'_>,
        queues: &ConsumeQueueStore,
        index: IndexSink<'_>,
        listener: Option<&dyn MessageArrivingListener>,
        jobs: &mut Vec<IndexEntry>,
    ) -> Result<(), StoreError> {
        if req.to_consume_queue {
            for (lmq, offset) in req.lmq_entries() {
                let entry = QueueEntry {
                    topic: lmq,
                    queue_id: LMQ_QUEUE_ID,
                    offset,
                    ..QueueEntry::of(&req)
                };
                match put_entry(queues, &entry) {
                    Ok(()) => {
                        if let Some(listener) = listener {
                            listener.arriving(
                                lmq,
                                LMQ_QUEUE_ID,
                                offset + 1,
                                req.tags_code,
                                req.store_timestamp,
                            );
                        }
                    }
                    Err(StoreError::UnsafeName(name)) => {
                        tracing::error!(offset = req.phys_offset, queue = %name, "record names no valid light message queue; not dispatched there");
                    }
                    Err(e) => return Err(e),
                }
            }
            match put_entry(queues, &QueueEntry::of(&req)) {
                Ok(()) => {}
                // A record no queue can hold (only a foreign or corrupt log has one): skip
                // it rather than stop dispatching for everyone.
                Err(StoreError::UnsafeName(name)) => {
                    tracing::error!(offset = req.phys_offset, queue = %name, "record names no valid queue; not dispatched");
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
        self.last_store_timestamp
            .store(req.store_timestamp, Ordering::Release);
        if req.to_consume_queue {
            if let Some(listener) = listener {
                listener.arriving(
                    req.topic,
                    req.queue_id,
                    req.queue_offset + 1,
                    req.tags_code,
                    req.store_timestamp,
                );
            }
        }
        if self.index_enabled && req.to_index {
            match index {
                IndexSink::Direct(index) => {
                    let mut entries = Vec::new();
                    req.index_entries(&mut entries);
                    put_or_log(index, &entries);
                }
                IndexSink::Feed(..) => req.index_entries(jobs),
            }
        }
        Ok(())
    }
}

/// Index entries are handed to the feed at least this often within one round.
const HAND_OVER_EVERY: usize = 4096;

/// Queues a round's index jobs; a feed over its bound is drained here (backpressure).
fn hand_over(index: IndexSink<'_>, jobs: Vec<IndexEntry>) {
    if let IndexSink::Feed(feed, index) = index {
        if feed.push(jobs) {
            feed.drain(index);
        }
    }
}

/// One ConsumeQueue entry to write.
struct QueueEntry<'a> {
    topic: &'a str,
    queue_id: i32,
    offset: i64,
    phys_offset: i64,
    size: i32,
    tags_code: i64,
}

impl<'a> QueueEntry<'a> {
    /// The entry of the message's own queue.
    fn of(req: &DispatchRequest<'a>) -> Self {
        Self {
            topic: req.topic,
            queue_id: req.queue_id,
            offset: req.queue_offset,
            phys_offset: req.phys_offset,
            size: req.size,
            tags_code: req.tags_code,
        }
    }
}

/// Writes one ConsumeQueue entry. Out of file descriptors, the idle queues' files are
/// closed (they reopen at their next use) and the entry tried once more, rather than
/// dispatching stop for everyone.
fn put_entry(queues: &ConsumeQueueStore, req: &QueueEntry<'_>) -> Result<(), StoreError> {
    // A burst of new queues opens them faster than the flush service's passes close idle
    // ones: past twice the bound, close every idle one now (each then waits for another
    // bound's worth of opens, so the walks stay linear in the queues opened).
    if queues.open_queues() >= 2 * crate::services::max_open_queues() {
        queues.close_idle(std::time::Duration::ZERO);
    }
    let put = || {
        queues
            .find_or_create(req.topic, req.queue_id)
            .and_then(|cq| cq.put(req.offset, req.phys_offset, req.size, req.tags_code))
    };
    match put() {
        Err(e) if e.is_out_of_file_resources() => {
            let closed = queues.close_idle(std::time::Duration::ZERO);
            tracing::warn!(closed, error = %e, "out of file descriptors: closed idle consume queues");
            put()
        }
        other => other,
    }
}
