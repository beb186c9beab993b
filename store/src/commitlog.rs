//! The CommitLog: every message of every topic appended to one sequence of mapped segments
//! (protocol.md 6.2). Appends hold one short lock while they encode straight into the mapped file
//! and assign physical offset, queue offset and store timestamp.
//!
//! Lock order: the append lock, then the ConsumeQueue map lock (to read a queue's next
//! offset the first time it is used), then a segment's own write lock.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use stellmq_protocol::lite::{LMQ_DISPATCH_SEPARATOR, LMQ_QUEUE_ID};
use stellmq_protocol::message::record::{self, encode_record, RecordHead, BLANK_MAGIC};
use stellmq_protocol::message::{body_crc, property, sys_flag, MessageVersion, Properties};
use stellmq_protocol::names;

use crate::consume_queue::ConsumeQueueStore;
use crate::error::StoreError;
use crate::mapped_file::MappedFile;
use crate::message::{AppendResult, PutMessage};
use crate::segments::SegmentQueue;

/// Room always left at a segment's end for the end-of-file blank.
const END_FILE_MIN_BLANK: usize = 8;

/// Why an append was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendError {
    MessageIllegal(String),
    PropertiesTooLong,
    CreateFileFailed(String),
    /// The next segment (starting at this offset) is still being prepared: wait for it
    /// outside the append lock, then append again.
    SegmentNotReady(i64),
}

/// Next queue offset per topic and queue id, owned by the append lock.
#[derive(Default)]
struct AppendState {
    queue_offsets: HashMap<String, HashMap<i32, i64>>,
}

impl AppendState {
    /// The next offset of a queue, read from its ConsumeQueue the first time.
    fn next_queue_offset(&mut self, topic: &str, queue_id: i32, queues: &ConsumeQueueStore) -> i64 {
        if let Some(next) = self.queue_offsets.get(topic).and_then(|q| q.get(&queue_id)) {
            return *next;
        }
        let next = queues.max_offset(topic, queue_id);
        self.set_next_queue_offset(topic, queue_id, next);
        next
    }

    fn set_next_queue_offset(&mut self, topic: &str, queue_id: i32, next: i64) {
        match self.queue_offsets.get_mut(topic) {
            Some(queues) => {
                queues.insert(queue_id, next);
            }
            None => {
                self.queue_offsets
                    .insert(topic.to_owned(), HashMap::from([(queue_id, next)]));
            }
        }
    }
}

/// What an append works out for each message before taking the lock.
struct Prepared {
    len: usize,
    body_crc: u32,
    /// Gets a ConsumeQueue entry (not a prepared or rolled-back transaction message).
    dispatched: bool,
    /// The light message queues (`INNER_MULTI_DISPATCH`) it also goes to: its offset in
    /// each is assigned under the lock and stored as `INNER_MULTI_QUEUE_OFFSET`.
    lmqs: Vec<String>,
}

/// The light message queues a message's properties name, checked as queue names.
fn multi_dispatch_of(properties: &str) -> Result<Vec<String>, AppendError> {
    // Most messages name none: skip the parse.
    if !properties.contains(property::INNER_MULTI_DISPATCH) {
        return Ok(Vec::new());
    }
    let props = Properties::decode(properties);
    let Some(value) = props.get(property::INNER_MULTI_DISPATCH) else {
        return Ok(Vec::new());
    };
    let lmqs: Vec<String> = value
        .split(LMQ_DISPATCH_SEPARATOR)
        .filter(|q| !q.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(bad) = lmqs.iter().find(|q| !names::is_safe_file_name(q)) {
        return Err(AppendError::MessageIllegal(format!(
            "light message queue {bad:?} is not a valid queue name"
        )));
    }
    Ok(lmqs)
}

/// `properties` with the offsets of a message in its light message queues.
fn with_lmq_offsets(properties: &str, offsets: &[i64]) -> String {
    let value = offsets
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    // Appended, not re-encoded: the rest stays byte for byte, and as the last entry of its
    // name it is the one readers take.
    let separator = if properties.is_empty() || properties.ends_with('\u{2}') {
        ""
    } else {
        "\u{2}"
    };
    format!(
        "{properties}{separator}{}\u{1}{value}\u{2}",
        property::INNER_MULTI_QUEUE_OFFSET
    )
}

/// Why replicated bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicaError {
    #[error("master sent data at {offset} but this log ends at {local_max}: the logs diverged")]
    Diverged { offset: i64, local_max: i64 },
    #[error("an empty log can only start at a segment boundary, not at {offset}")]
    Unaligned { offset: i64 },
    #[error("{len} bytes at {offset} cross a segment boundary")]
    CrossesSegment { offset: i64, len: usize },
    #[error("cannot create a CommitLog segment: {0}")]
    CreateFile(String),
    /// The segment starting at this offset is being prepared: wait, then append again.
    #[error("the CommitLog segment at {0} is being prepared")]
    SegmentNotReady(i64),
}

/// What the record at an offset turned out to be, for the dispatcher.
pub enum NextRecord {
    Record(Bytes),
    /// End-of-file blank: continue at this offset (the next segment).
    Skip(i64),
    /// Nothing (more) written yet.
    None,
}

pub struct CommitLog {
    segments: SegmentQueue,
    max_message_size: usize,
    append: Mutex<AppendState>,
    /// Store time of the last appended message (checkpoint input).
    last_store_timestamp: AtomicI64,
    /// When the current append took the lock (ms), 0 when not held: a stalled append means
    /// the OS page cache is busy and the broker should shed load.
    lock_held_since: AtomicI64,
    /// Records that must precede whatever is appended next (the broker's metadata journal:
    /// a topic's record before the first message of the topic), in order. Each append
    /// writes them first, under its own lock, so no message can overtake one.
    prologue: Mutex<VecDeque<PutMessage>>,
}

impl CommitLog {
    pub fn new(segments: SegmentQueue, max_message_size: usize) -> Self {
        Self {
            segments,
            max_message_size,
            append: Mutex::new(AppendState::default()),
            last_store_timestamp: AtomicI64::new(0),
            lock_held_since: AtomicI64::new(0),
            prologue: Mutex::new(VecDeque::new()),
        }
    }

    /// Queues `record` to be appended before the next append's own records.
    pub fn queue_prologue(&self, record: PutMessage) {
        self.prologue.lock().push_back(record);
    }

    /// Drops the queued prologue records (this log becomes a replica).
    pub fn clear_prologue(&self) {
        self.prologue.lock().clear();
    }

    /// Appends the queued prologue records on their own; `Ok(None)` when there were none.
    pub fn append_prologue_only(
        &self,
        queues: &ConsumeQueueStore,
    ) -> Result<Option<i64>, AppendError> {
        if self.prologue.lock().is_empty() {
            return Ok(None);
        }
        let mut state = self.append.lock();
        let now = now_ms();
        self.lock_held_since.store(now, Ordering::Release);
        let result = self.append_prologue(&mut state, now, queues);
        self.lock_held_since.store(0, Ordering::Release);
        result
    }

    /// Appends the queued prologue records under the append lock; the end offset of the
    /// last one, if any. A record that does not fit a segment not ready yet goes back to
    /// the front of the queue; one that can never be appended is logged and dropped.
    fn append_prologue(
        &self,
        state: &mut AppendState,
        now: i64,
        queues: &ConsumeQueueStore,
    ) -> Result<Option<i64>, AppendError> {
        let mut end = None;
        loop {
            let Some(record) = self.prologue.lock().pop_front() else {
                return Ok(end);
            };
            let one = std::slice::from_ref(&record);
            let appended = self.prepare(one).and_then(|(prepared, total)| {
                self.append_locked(state, one, &prepared, total, now, queues)
            });
            match appended {
                Ok(result) => end = Some(result.end_offset),
                Err(not_ready @ AppendError::SegmentNotReady(_)) => {
                    self.prologue.lock().push_front(record);
                    return Err(not_ready);
                }
                Err(e) => {
                    tracing::error!(topic = %record.topic, error = ?e, "a prologue record cannot be appended; dropped");
                }
            }
        }
    }

    /// How long the current append has held the lock (0 when none is in progress).
    pub fn lock_held_ms(&self) -> i64 {
        match self.lock_held_since.load(Ordering::Acquire) {
            0 => 0,
            since => (now_ms() - since).max(0),
        }
    }

    pub fn segments(&self) -> &SegmentQueue {
        &self.segments
    }

    pub fn file_size(&self) -> usize {
        self.segments.file_size()
    }

    pub fn min_offset(&self) -> i64 {
        self.segments.min_offset()
    }

    pub fn max_offset(&self) -> i64 {
        self.segments.max_offset()
    }

    pub fn last_store_timestamp(&self) -> i64 {
        self.last_store_timestamp.load(Ordering::Acquire)
    }

    /// Appends messages of one queue (one message, or a batch) contiguously, after the
    /// queued prologue records.
    pub fn append(
        &self,
        msgs: &[PutMessage],
        queues: &ConsumeQueueStore,
    ) -> Result<AppendResult, AppendError> {
        if msgs.is_empty() {
            return Err(AppendError::MessageIllegal("empty batch".into()));
        }
        let (prepared, total) = self.prepare(msgs)?;
        let mut state = self.append.lock();
        // One clock read for the lock's busy watch and the messages' store time.
        let now = now_ms();
        self.lock_held_since.store(now, Ordering::Release);
        let result = self
            .append_prologue(&mut state, now, queues)
            .and_then(|_| self.append_locked(&mut state, msgs, &prepared, total, now, queues));
        self.lock_held_since.store(0, Ordering::Release);
        result
    }

    /// Checks messages and works out their record lengths before the lock is taken.
    fn prepare(&self, msgs: &[PutMessage]) -> Result<(Vec<Prepared>, usize), AppendError> {
        let mut prepared = Vec::with_capacity(msgs.len());
        for m in msgs {
            if m.body.len() > self.max_message_size {
                return Err(AppendError::MessageIllegal(format!(
                    "message body of {} bytes exceeds maxMessageSize {}",
                    m.body.len(),
                    self.max_message_size
                )));
            }
            if m.properties.len() > record::MAX_PROPERTIES_LEN {
                return Err(AppendError::PropertiesTooLong);
            }
            if !names::is_safe_file_name(&m.topic) {
                return Err(AppendError::MessageIllegal(format!(
                    "topic {:?} is not a valid topic name",
                    m.topic
                )));
            }
            let kind = sys_flag::transaction_type(m.sys_flag);
            let lmqs = multi_dispatch_of(&m.properties)?;
            if !lmqs.is_empty() && msgs.len() > 1 {
                return Err(AppendError::MessageIllegal(
                    "a batch cannot be dispatched to light message queues".into(),
                ));
            }
            prepared.push(Prepared {
                len: record::record_len(
                    &m.born_host,
                    &m.store_host,
                    m.body.len(),
                    m.topic.len(),
                    m.properties.len(),
                    MessageVersion::for_topic(&m.topic),
                ),
                body_crc: body_crc(&m.body),
                dispatched: kind == sys_flag::TRANSACTION_NOT_TYPE
                    || kind == sys_flag::TRANSACTION_COMMIT_TYPE,
                lmqs,
            });
        }
        let total: usize = prepared.iter().map(|p| p.len).sum();
        if total + END_FILE_MIN_BLANK > self.file_size() {
            return Err(AppendError::MessageIllegal(format!(
                "{total} bytes do not fit in one CommitLog file of {} bytes",
                self.file_size()
            )));
        }
        Ok((prepared, total))
    }

    fn append_locked(
        &self,
        state: &mut AppendState,
        msgs: &[PutMessage],
        prepared: &[Prepared],
        total: usize,
        now: i64,
        queues: &ConsumeQueueStore,
    ) -> Result<AppendResult, AppendError> {
        let Some(first) = msgs.first() else {
            return Err(AppendError::MessageIllegal("nothing to append".into()));
        };
        // A message to light message queues (one message, never a batch) learns its
        // offset in each now, under the lock, and carries them: its record grows.
        let lmq_offsets: Vec<i64> = match prepared.first() {
            Some(p) if p.dispatched && !p.lmqs.is_empty() => p
                .lmqs
                .iter()
                .map(|q| state.next_queue_offset(q, LMQ_QUEUE_ID, queues))
                .collect(),
            _ => Vec::new(),
        };
        let lmq_properties =
            (!lmq_offsets.is_empty()).then(|| with_lmq_offsets(&first.properties, &lmq_offsets));
        let mut lengths: Vec<usize> = prepared.iter().map(|p| p.len).collect();
        let mut total = total;
        if let (Some(props), Some(len)) = (&lmq_properties, lengths.first_mut()) {
            if props.len() > record::MAX_PROPERTIES_LEN {
                return Err(AppendError::PropertiesTooLong);
            }
            // The record holds the properties: it grows by what was appended to them.
            let grown = *len + (props.len() - first.properties.len());
            total = total - *len + grown;
            *len = grown;
        }
        let file = self.writable_file(total)?;
        let next_queue_offset = state.next_queue_offset(&first.topic, first.queue_id, queues);
        let store_timestamp = now.max(self.last_store_timestamp());
        let base = file.base() + file.wrote_position() as i64;
        let mut phys_offsets = Vec::with_capacity(msgs.len());
        let mut queue_offset = next_queue_offset;
        let mut encode_error = None;
        file.append(total, |mut region| {
            let mut phys = base;
            for ((m, p), len) in msgs.iter().zip(prepared).zip(&lengths) {
                let properties = match &lmq_properties {
                    Some(props) if std::ptr::eq(m, first) => props.as_str(),
                    _ => m.properties.as_str(),
                };
                let head = RecordHead {
                    body_crc: p.body_crc,
                    queue_id: m.queue_id,
                    flag: m.flag,
                    queue_offset: if p.dispatched { queue_offset } else { 0 },
                    physical_offset: phys,
                    sys_flag: m.sys_flag,
                    born_timestamp: m.born_timestamp,
                    born_host: m.born_host,
                    store_timestamp,
                    store_host: m.store_host,
                    reconsume_times: m.reconsume_times,
                    prepared_transaction_offset: m.prepared_transaction_offset,
                };
                if let Err(e) = encode_record(&head, &m.body, &m.topic, properties, &mut region) {
                    encode_error = Some(e.to_string());
                    return;
                }
                phys_offsets.push(phys);
                phys += *len as i64;
                if p.dispatched {
                    queue_offset += 1;
                }
            }
        })
        .ok_or_else(|| AppendError::CreateFileFailed("segment full after roll".into()))?;
        if let Some(e) = encode_error {
            // Lengths were validated above, so this cannot happen; never publish a partial batch.
            return Err(AppendError::MessageIllegal(e));
        }
        state.set_next_queue_offset(&first.topic, first.queue_id, queue_offset);
        if let Some(p) = prepared.first() {
            for (q, offset) in p.lmqs.iter().zip(&lmq_offsets) {
                state.set_next_queue_offset(q, LMQ_QUEUE_ID, offset + 1);
            }
        }
        file.set_last_store_timestamp(store_timestamp);
        self.last_store_timestamp
            .store(store_timestamp, Ordering::Release);
        Ok(AppendResult {
            phys_offsets,
            queue_offset: next_queue_offset,
            store_timestamp,
            wrote_bytes: total,
            end_offset: base + total as i64,
        })
    }

    /// The next segment starting at `base`, if the allocator has it ready.
    fn roll(&self, base: i64) -> Result<Arc<MappedFile>, AppendError> {
        match self.segments.try_roll(base) {
            Ok(Some(file)) => Ok(file),
            Ok(None) => Err(AppendError::SegmentNotReady(base)),
            Err(e) => Err(AppendError::CreateFileFailed(e.to_string())),
        }
    }

    /// The segment to write `len` bytes into, rolling (with an end-of-file blank) if needed.
    /// Never creates a file itself: a segment that is not ready is waited for by the caller.
    fn writable_file(&self, len: usize) -> Result<Arc<MappedFile>, AppendError> {
        let file = match self.segments.last() {
            Some(f) => f,
            None => return self.roll(0),
        };
        if file.remaining() >= len + END_FILE_MIN_BLANK {
            return Ok(file);
        }
        // Take the next segment before closing this one, so nothing is written when it is
        // not ready yet.
        let next = self.roll(file.end())?;
        if !file.is_full() {
            let remaining = file.remaining();
            let mut blank = [0u8; END_FILE_MIN_BLANK];
            blank[..4].copy_from_slice(&(remaining as i32).to_be_bytes());
            blank[4..].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
            file.append_bytes(&blank);
            file.fill_to_end();
        }
        Ok(next)
    }

    /// Waits until the segment starting at `base` is prepared (or failed); false on timeout.
    pub async fn wait_segment(&self, base: i64, timeout: std::time::Duration) -> bool {
        match self.segments.allocator() {
            Some(allocator) => {
                allocator
                    .wait_ready(&self.segments.segment_path(base), timeout)
                    .await
            }
            None => true,
        }
    }

    /// Appends bytes replicated from a master at `offset` (a slave's side of HA, protocol.md 9.2).
    /// The bytes may split records; they never cross a segment boundary. Refuses to diverge:
    /// the offset must be this log's end, or a segment boundary when the log is empty.
    pub fn append_replicated(&self, offset: i64, data: &[u8]) -> Result<i64, ReplicaError> {
        let mut state = self.append.lock();
        let file_size = self.file_size() as i64;
        let file = match self.segments.last() {
            None if offset % file_size == 0 => self.create_segment(offset)?,
            None => return Err(ReplicaError::Unaligned { offset }),
            Some(f) if offset != f.base() + f.wrote_position() as i64 => {
                return Err(ReplicaError::Diverged {
                    offset,
                    local_max: f.base() + f.wrote_position() as i64,
                })
            }
            Some(f) if f.is_full() => self.create_segment(f.end())?,
            Some(f) => f,
        };
        if file.append_bytes(data).is_none() {
            return Err(ReplicaError::CrossesSegment {
                offset,
                len: data.len(),
            });
        }
        // Local queue offsets are recomputed from the ConsumeQueues if this store ever writes.
        state.queue_offsets.clear();
        Ok(offset + data.len() as i64)
    }

    fn create_segment(&self, base: i64) -> Result<Arc<MappedFile>, ReplicaError> {
        match self.segments.try_roll(base) {
            Ok(Some(file)) => Ok(file),
            Ok(None) => Err(ReplicaError::SegmentNotReady(base)),
            Err(e) => Err(ReplicaError::CreateFile(e.to_string())),
        }
    }

    /// Up to `max` published bytes from `offset`, never past the end of its segment (what a
    /// master sends a slave in one frame).
    pub fn replication_chunk(&self, offset: i64, max: usize) -> Option<Bytes> {
        let file = self.segments.find(offset)?;
        let pos = (offset - file.base()) as usize;
        let len = file.wrote_position().saturating_sub(pos).min(max);
        if len == 0 {
            return None;
        }
        file.bytes(pos, len)
    }

    /// Forgets a queue's next offset (its topic was deleted).
    pub fn forget_queue(&self, topic: &str, queue_id: i32) {
        let mut state = self.append.lock();
        if let Some(queues) = state.queue_offsets.get_mut(topic) {
            queues.remove(&queue_id);
            if queues.is_empty() {
                state.queue_offsets.remove(topic);
            }
        }
    }

    /// `size` bytes at `offset`, zero-copy.
    pub fn read(&self, offset: i64, size: usize) -> Option<Bytes> {
        let file = self.segments.find(offset)?;
        file.bytes((offset - file.base()) as usize, size)
    }

    /// The whole record starting at `offset`.
    pub fn read_record(&self, offset: i64) -> Option<Bytes> {
        let file = self.segments.find(offset)?;
        let pos = (offset - file.base()) as usize;
        let head = file.read(pos, 8)?;
        let (size, magic) = record::peek(head).ok()?;
        if magic == BLANK_MAGIC || size <= 0 {
            return None;
        }
        file.bytes(pos, size as usize)
    }

    /// What lies at `offset`, for the dispatcher following the log.
    pub fn next_record(&self, offset: i64) -> NextRecord {
        let Some(file) = self.segments.find(offset) else {
            return NextRecord::None;
        };
        let pos = (offset - file.base()) as usize;
        let Some(head) = file.read(pos, 8) else {
            return NextRecord::None;
        };
        match record::peek(head) {
            Ok((_, BLANK_MAGIC)) => NextRecord::Skip(file.end()),
            Ok((size, _)) if size > 0 => file
                .bytes(pos, size as usize)
                .map_or(NextRecord::None, NextRecord::Record),
            _ => NextRecord::None,
        }
    }

    /// Flushes written data; returns the flushed offset.
    pub fn flush(&self) -> std::io::Result<i64> {
        self.segments.flush()
    }

    pub fn unflushed(&self) -> usize {
        self.segments.unflushed()
    }

    pub fn truncate(&self, offset: i64) -> Result<(), StoreError> {
        self.segments.truncate(offset)
    }

    /// Cuts a running log at `offset` under the append lock (no append interleaves), forgets
    /// the cached queue offsets (they are read again from the ConsumeQueues) and lowers the
    /// last store time to `store_timestamp`.
    pub fn truncate_running(&self, offset: i64, store_timestamp: i64) -> Result<(), StoreError> {
        let mut state = self.append.lock();
        self.segments.truncate(offset)?;
        state.queue_offsets.clear();
        self.last_store_timestamp
            .fetch_min(store_timestamp, Ordering::AcqRel);
        Ok(())
    }
}

pub use stellmq_protocol::message::now_ms;
