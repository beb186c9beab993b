//! [`MessageStore`]: opening (with recovery), writing, reading, and shutting down.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use stellmq_remoting::protocol::message::record::{self, store_timestamp_pos, SYS_FLAG_POS};
use stellmq_remoting::protocol::message::{property, MessageRecord};
use tokio::sync::oneshot;

use crate::allocator::Allocator;
use crate::checkpoint::Checkpoint;
use crate::commitlog::{AppendError, CommitLog, ReplicaError};
use crate::config::{FlushDiskType, MessageStoreConfig};
use crate::consume_queue::{ConsumeQueueStore, CqEntry, ENTRY_SIZE};
use crate::dispatch::{Dispatcher, MessageArrivingListener};
use crate::error::{IoContext, StoreError};
use crate::get::{GetMessageResult, GetMessageStatus, MessageFilter};
use crate::index::IndexService;
use crate::mapped_file::segment_name;
use crate::message::{PutMessage, PutMessageResult, PutMessageStatus};
use crate::recovery::recover_commit_log;
use crate::segments::SegmentQueue;

/// Fraction (0..1) of the disk holding a path that is in use.
pub type DiskUsageProbe = Arc<dyn Fn(&Path) -> Option<f64> + Send + Sync>;

/// Things that are not configuration: injected behaviour, mainly for tests.
#[derive(Clone, Default)]
pub struct StoreOptions {
    /// Replaces the statvfs-based disk usage probe.
    pub disk_usage: Option<DiskUsageProbe>,
}

/// Counters for runtime info.
#[derive(Debug, Default)]
pub struct StoreStats {
    pub put_times_total: AtomicU64,
    pub put_failed_times: AtomicU64,
    pub put_size_total: AtomicU64,
    pub put_entire_time_max_us: AtomicU64,
    pub get_found_times: AtomicU64,
    pub get_miss_times: AtomicU64,
    pub get_transferred_messages: AtomicU64,
}

/// Messages found by key.
#[derive(Debug, Clone, Default)]
pub struct QueryMessageResult {
    pub messages: Vec<Bytes>,
    pub index_last_update_timestamp: i64,
    pub index_last_update_phyoffset: i64,
}

/// A pending group-commit flush.
pub(crate) struct FlushRequest {
    pub target: i64,
    pub done: oneshot::Sender<Result<(), String>>,
}

pub(crate) struct Inner {
    pub config: MessageStoreConfig,
    pub root: PathBuf,
    pub flush_type: FlushDiskType,
    pub commit_log: CommitLog,
    pub queues: ConsumeQueueStore,
    pub index: IndexService,
    pub checkpoint: Checkpoint,
    pub dispatcher: Dispatcher,
    pub allocator: Arc<Allocator>,
    pub listener: RwLock<Option<Arc<dyn MessageArrivingListener>>>,
    pub poison: Mutex<Option<String>>,
    pub disk_full: AtomicBool,
    pub stopping: AtomicBool,
    /// A slave's store: only its master's bytes are appended (`append_replicated`).
    pub replica: AtomicBool,
    /// Wakes the dispatcher after appends and every service at shutdown.
    /// Woken by every append: the dispatcher and the async CommitLog flusher park here.
    pub wake: (Mutex<u64>, Condvar),
    /// Periodic services (ConsumeQueue flush, retention) sleep here; only shutdown wakes them.
    pub pause: (Mutex<()>, Condvar),
    pub flush_requests: (Mutex<Vec<FlushRequest>>, Condvar),
    pub disk_usage: DiskUsageProbe,
    pub stats: StoreStats,
    pub memory_bytes: u64,
    lock_file: Mutex<Option<File>>,
}

impl Inner {
    pub fn wake_all(&self) {
        let (lock, cv) = &self.wake;
        *lock.lock() += 1;
        cv.notify_all();
    }

    /// Sleeps up to `timeout` unless an append happened since the caller's `seen` (so a
    /// wake-up while the caller was busy is not lost); updates `seen`.
    pub fn park(&self, seen: &mut u64, timeout: Duration) {
        let (lock, cv) = &self.wake;
        let mut count = lock.lock();
        let deadline = Instant::now() + timeout;
        while *count == *seen && !self.stopping.load(Ordering::Acquire) {
            if cv.wait_until(&mut count, deadline).timed_out() {
                break;
            }
        }
        *seen = *count;
    }

    /// Sleeps `timeout`, or less if the store stops (appends do not end it).
    pub fn sleep(&self, timeout: Duration) {
        let (lock, cv) = &self.pause;
        let mut guard = lock.lock();
        let deadline = Instant::now() + timeout;
        while !self.stopping.load(Ordering::Acquire) {
            if cv.wait_until(&mut guard, deadline).timed_out() {
                break;
            }
        }
    }

    /// Marks the store unusable for writes after a failed flush.
    pub fn poison(&self, reason: String) {
        tracing::error!(event = "STORE_POISONED", %reason, "flush failed; the store refuses writes from now on");
        self.poison.lock().get_or_insert(reason);
    }
}

/// The message store. Dropping it shuts it down cleanly.
pub struct MessageStore {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// How long a write waits for the allocator to prepare the next CommitLog segment.
const SEGMENT_WAIT: Duration = Duration::from_secs(5);

fn default_disk_usage(path: &Path) -> Option<f64> {
    let stat = rustix::fs::statvfs(path).ok()?;
    if stat.f_blocks == 0 {
        return None;
    }
    // RocketMQ's ratio of used space, where space only root may use (the filesystem's
    // reserve) counts as used: it does not help the broker.
    Some(stat.f_blocks.saturating_sub(stat.f_bavail) as f64 / stat.f_blocks as f64)
}

fn total_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(8 << 30, |kb| kb * 1024)
}

/// Whether a stored record is `topic`'s and carries `key` (a KEYS token or its UNIQ_KEY):
/// the index only has hashes, and an entry may outlive the record it was made for.
fn record_has_key(raw: &Bytes, topic: &str, key: &str) -> bool {
    MessageRecord::decode(raw, false).is_ok_and(|(record, _)| {
        record.topic == topic
            && (record.properties.keys().any(|k| k == key)
                || record.properties.get(property::UNIQ_KEY) == Some(key))
    })
}

impl MessageStore {
    pub fn open(config: MessageStoreConfig) -> Result<Self, StoreError> {
        Self::open_with(config, StoreOptions::default())
    }

    /// Opens (creating or recovering) the store under `storePathRootDir`.
    pub fn open_with(
        config: MessageStoreConfig,
        options: StoreOptions,
    ) -> Result<Self, StoreError> {
        let started = Instant::now();
        config.validate()?;
        let root = config.store_path_root_dir.clone();
        std::fs::create_dir_all(&root).at(&root)?;
        let lock_path = root.join("lock");
        let lock_file = File::options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .at(&lock_path)?;
        if lock_file.try_lock().is_err() {
            return Err(StoreError::Locked(lock_path));
        }
        let abort_path = root.join("abort");
        let crashed = abort_path.exists();
        let checkpoint = Checkpoint::open(&root.join("checkpoint"))?;
        let allocator = Allocator::start(config.warm_mapped_file_enable);
        let segments = SegmentQueue::load(
            &config.commit_log_dir(),
            config.mapped_file_size_commit_log,
            Some(allocator.clone()),
        )?;
        let commit_log = CommitLog::new(segments, config.max_message_size);
        let queues = ConsumeQueueStore::load(
            &config.consume_queue_dir(),
            config.mapped_file_size_consume_queue,
        )?;
        let index = IndexService::load(
            &config.index_dir(),
            config.max_hash_slot_num,
            config.max_index_num,
        )?;

        let outcome = recover_commit_log(
            &commit_log,
            crashed,
            checkpoint.values().min_timestamp(),
            config.check_crc_on_recover,
        )?;
        let mut reput_from = commit_log.min_offset();
        for cq in queues.all() {
            cq.recover(outcome.valid_end)?;
            reput_from = reput_from.max(cq.max_phys_offset());
        }
        if crashed {
            reput_from = reput_from.min(outcome.scan_start);
        }
        let reput_from = reput_from.clamp(commit_log.min_offset(), outcome.valid_end);
        index.truncate(outcome.valid_end)?;
        index.set_resume_point(outcome.valid_end);
        let dispatcher = Dispatcher::new(
            reput_from,
            config.delay_levels()?,
            config.message_index_enable,
        );
        let redispatched = dispatcher.run_once(&commit_log, &queues, &index, None)?;
        for cq in queues.all() {
            cq.correct_min_offset(commit_log.min_offset());
        }
        std::fs::write(&abort_path, b"").at(&abort_path)?;

        // Have the next segment warm before the first append needs it.
        let next = commit_log.segments().last().map_or(0, |f| f.end());
        allocator.prepare(
            config.commit_log_dir().join(segment_name(next)),
            next,
            config.mapped_file_size_commit_log,
        );

        tracing::info!(
            event = "RECOVERY_DONE",
            crashed,
            valid_end = outcome.valid_end,
            torn_tail = outcome.torn_tail,
            reput_from,
            redispatched,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "store opened"
        );
        let inner = Arc::new(Inner {
            flush_type: config.flush_type(),
            root,
            commit_log,
            queues,
            index,
            checkpoint,
            dispatcher,
            allocator,
            listener: RwLock::new(None),
            poison: Mutex::new(None),
            disk_full: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            replica: AtomicBool::new(false),
            wake: (Mutex::new(0), Condvar::new()),
            pause: (Mutex::new(()), Condvar::new()),
            flush_requests: (Mutex::new(Vec::new()), Condvar::new()),
            disk_usage: options
                .disk_usage
                .unwrap_or_else(|| Arc::new(default_disk_usage)),
            stats: StoreStats::default(),
            memory_bytes: total_memory_bytes(),
            lock_file: Mutex::new(Some(lock_file)),
            config,
        });
        let threads = crate::services::start(&inner);
        Ok(Self {
            inner,
            threads: Mutex::new(threads),
        })
    }

    pub fn config(&self) -> &MessageStoreConfig {
        &self.inner.config
    }

    /// Registers the listener told about new messages (long polling).
    pub fn set_arriving_listener(&self, listener: Arc<dyn MessageArrivingListener>) {
        *self.inner.listener.write() = Some(listener);
    }

    /// Whether an append has held the CommitLog lock for over `busy_ms` (RocketMQ's
    /// `osPageCacheBusyTimeOutMills`): the broker then answers new sends SYSTEM_BUSY.
    pub fn is_page_cache_busy(&self, busy_ms: i64) -> bool {
        self.inner.commit_log.lock_held_ms() > busy_ms
    }

    /// Why writes are refused, if they are.
    pub fn write_refusal(&self) -> Option<String> {
        if self.inner.stopping.load(Ordering::Acquire) {
            return Some("the store is shutting down".into());
        }
        if self.inner.replica.load(Ordering::Acquire) {
            return Some(
                "the store is a slave's replica: only its master's CommitLog is appended".into(),
            );
        }
        if let Some(reason) = self.inner.poison.lock().as_ref() {
            return Some(format!(
                "the store refuses writes after a failed flush: {reason}"
            ));
        }
        if self.inner.disk_full.load(Ordering::Acquire) {
            return Some(format!(
                "disk full: usage is above diskSpaceWarningLevelRatio ({}%); writes resume when space returns",
                self.inner.config.disk_space_warning_level_ratio
            ));
        }
        None
    }

    pub async fn put_message(&self, msg: PutMessage) -> PutMessageResult {
        self.put_messages(vec![msg]).await
    }

    /// Appends messages of one topic and queue contiguously (a batch shares one queue).
    pub async fn put_messages(&self, msgs: Vec<PutMessage>) -> PutMessageResult {
        let started = Instant::now();
        let result = self.put_inner(&msgs).await;
        let stats = &self.inner.stats;
        if result.status.is_stored() {
            stats
                .put_times_total
                .fetch_add(msgs.len() as u64, Ordering::Relaxed);
            let bytes = result.append.as_ref().map_or(0, |a| a.wrote_bytes);
            stats
                .put_size_total
                .fetch_add(bytes as u64, Ordering::Relaxed);
        } else {
            stats.put_failed_times.fetch_add(1, Ordering::Relaxed);
        }
        stats
            .put_entire_time_max_us
            .fetch_max(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        result
    }

    async fn put_inner(&self, msgs: &[PutMessage]) -> PutMessageResult {
        if let Some(reason) = self.write_refusal() {
            return PutMessageResult::failed(PutMessageStatus::ServiceNotAvailable, reason);
        }
        if let Some(first) = msgs.first() {
            if msgs
                .iter()
                .any(|m| m.topic != first.topic || m.queue_id != first.queue_id)
            {
                return PutMessageResult::failed(
                    PutMessageStatus::MessageIllegal,
                    "a batch must target one topic and queue",
                );
            }
        }
        let append = match self.append_waiting_for_segments(msgs).await {
            Ok(append) => append,
            Err(AppendError::SegmentNotReady(base)) => {
                let reason = format!(
                    "the CommitLog segment at {base} is not ready after {} s",
                    SEGMENT_WAIT.as_secs()
                );
                tracing::error!(%reason, "cannot roll the CommitLog");
                return PutMessageResult::failed(PutMessageStatus::CreateMappedFileFailed, reason);
            }
            Err(AppendError::MessageIllegal(reason)) => {
                return PutMessageResult::failed(PutMessageStatus::MessageIllegal, reason)
            }
            Err(AppendError::PropertiesTooLong) => {
                return PutMessageResult::failed(
                    PutMessageStatus::PropertiesSizeExceeded,
                    "properties longer than 32767 bytes",
                )
            }
            Err(AppendError::CreateFileFailed(reason)) => {
                tracing::error!(%reason, "cannot create the next CommitLog file");
                return PutMessageResult::failed(PutMessageStatus::CreateMappedFileFailed, reason);
            }
        };
        self.inner.wake_all();
        let wait =
            self.inner.flush_type == FlushDiskType::Sync && msgs.iter().all(|m| m.wait_store_ok);
        if !wait {
            return PutMessageResult {
                status: PutMessageStatus::PutOk,
                append: Some(append),
                remark: None,
            };
        }
        let (tx, rx) = oneshot::channel();
        {
            let (lock, cv) = &self.inner.flush_requests;
            lock.lock().push(FlushRequest {
                target: append.end_offset,
                done: tx,
            });
            cv.notify_one();
        }
        let status = match tokio::time::timeout(self.inner.config.sync_flush_timeout(), rx).await {
            Ok(Ok(Ok(()))) => PutMessageStatus::PutOk,
            Ok(Ok(Err(reason))) => {
                return PutMessageResult::failed(
                    PutMessageStatus::ServiceNotAvailable,
                    format!("flush failed: {reason}"),
                )
            }
            Ok(Err(_)) => {
                return PutMessageResult::failed(
                    PutMessageStatus::ServiceNotAvailable,
                    "the store stopped before the flush",
                )
            }
            Err(_) => PutMessageStatus::FlushDiskTimeout,
        };
        PutMessageResult {
            status,
            append: Some(append),
            remark: None,
        }
    }

    /// Appends, and when the next segment is still being prepared, waits for it outside the
    /// append lock (other writers go on meanwhile) and tries again.
    async fn append_waiting_for_segments(
        &self,
        msgs: &[PutMessage],
    ) -> Result<crate::message::AppendResult, AppendError> {
        let log = &self.inner.commit_log;
        loop {
            match log.append(msgs, &self.inner.queues) {
                Err(AppendError::SegmentNotReady(base)) => {
                    if !log.wait_segment(base, SEGMENT_WAIT).await {
                        return Err(AppendError::SegmentNotReady(base));
                    }
                }
                other => return other,
            }
        }
    }

    /// Reads up to `max_nums` messages of a queue from `offset` (protocol.md 2.5's statuses).
    pub fn get_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_nums: usize,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        let result = self.get_inner(topic, queue_id, offset, max_nums.max(1), filter);
        let stats = &self.inner.stats;
        if result.status == GetMessageStatus::Found {
            stats.get_found_times.fetch_add(1, Ordering::Relaxed);
            stats
                .get_transferred_messages
                .fetch_add(result.messages.len() as u64, Ordering::Relaxed);
        } else {
            stats.get_miss_times.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn get_inner(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_nums: usize,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        let mut result = GetMessageResult {
            status: GetMessageStatus::NoMatchedLogicQueue,
            next_begin_offset: 0,
            min_offset: 0,
            max_offset: 0,
            messages: Vec::new(),
            queue_offsets: Vec::new(),
            suggest_pull_from_slave: false,
        };
        let Some(cq) = self.inner.queues.find(topic, queue_id) else {
            return result;
        };
        let (min, max) = (cq.min_offset(), cq.max_offset());
        result.min_offset = min;
        result.max_offset = max;
        if max == 0 {
            result.status = GetMessageStatus::NoMessageInQueue;
            return result;
        }
        if offset < min {
            result.status = GetMessageStatus::OffsetTooSmall;
            result.next_begin_offset = min;
            return result;
        }
        if offset == max {
            result.status = GetMessageStatus::OffsetOverflowOne;
            result.next_begin_offset = offset;
            return result;
        }
        if offset > max {
            result.status = GetMessageStatus::OffsetOverflowBadly;
            result.next_begin_offset = if min == 0 { min } else { max };
            return result;
        }
        let scan_bytes = (max_nums * ENTRY_SIZE).max(16_000);
        let Some(entries) = cq.entries_from(offset, scan_bytes) else {
            result.status = GetMessageStatus::OffsetFoundNull;
            result.next_begin_offset = cq.roll_next_file(offset);
            return result;
        };
        self.collect(&mut result, offset, &entries, max_nums, filter);
        result
    }

    fn collect(
        &self,
        result: &mut GetMessageResult,
        offset: i64,
        entries: &[CqEntry],
        max_nums: usize,
        filter: &dyn MessageFilter,
    ) {
        let config = &self.inner.config;
        let log = &self.inner.commit_log;
        let log_min = log.min_offset();
        let log_max = log.max_offset();
        let memory_budget = (self.inner.memory_bytes as f64
            * f64::from(config.access_message_in_memory_max_ratio)
            / 100.0) as i64;
        let mut status = GetMessageStatus::NoMatchedMessage;
        let mut scanned = 0usize;
        let mut bytes = 0usize;
        let mut last_phys = 0i64;
        for entry in entries {
            if result.messages.len() >= max_nums {
                break;
            }
            let on_disk = log_max - entry.phys_offset > memory_budget;
            let (max_bytes, max_count) = if on_disk {
                (
                    config.max_transfer_bytes_on_message_in_disk,
                    config.max_transfer_count_on_message_in_disk,
                )
            } else {
                (
                    config.max_transfer_bytes_on_message_in_memory,
                    config.max_transfer_count_on_message_in_memory,
                )
            };
            if !result.messages.is_empty()
                && (bytes + entry.size.max(0) as usize > max_bytes
                    || result.messages.len() >= max_count)
            {
                break;
            }
            scanned += 1;
            if entry.is_blank() {
                continue;
            }
            last_phys = entry.phys_offset;
            if entry.phys_offset < log_min {
                status = GetMessageStatus::MessageWasRemoving;
                continue;
            }
            if !filter.matches_tags_code(entry.tags_code) {
                continue;
            }
            match log.read(entry.phys_offset, entry.size as usize) {
                Some(message) if !filter.matches_record(&message) => {}
                Some(message) => {
                    bytes += message.len();
                    result.messages.push(message);
                    result.queue_offsets.push(offset + scanned as i64 - 1);
                }
                None => status = GetMessageStatus::MessageWasRemoving,
            }
        }
        if !result.messages.is_empty() {
            status = GetMessageStatus::Found;
        }
        result.status = status;
        result.next_begin_offset = offset + scanned as i64;
        result.suggest_pull_from_slave = last_phys > 0 && log_max - last_phys > memory_budget;
    }

    /// The stored record at a physical offset.
    pub fn look_message_by_offset(&self, phys_offset: i64) -> Option<Bytes> {
        self.inner.commit_log.read_record(phys_offset)
    }

    /// Messages indexed under `key` (a KEYS token or UNIQ_KEY) within `[begin, end]` ms.
    pub fn query_message(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin: i64,
        end: i64,
    ) -> QueryMessageResult {
        let (offsets, ts, phy) = self.inner.index.query(topic, key, max, begin, end);
        QueryMessageResult {
            messages: offsets
                .into_iter()
                .filter_map(|o| self.look_message_by_offset(o))
                .filter(|raw| record_has_key(raw, topic, key))
                .collect(),
            index_last_update_timestamp: ts,
            index_last_update_phyoffset: phy,
        }
    }

    /// Next queue offset to be written (0 for an unknown queue).
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.queues.max_offset(topic, queue_id)
    }

    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner
            .queues
            .find(topic, queue_id)
            .map_or(0, |cq| cq.min_offset())
    }

    /// Store timestamp of the message at a queue offset.
    pub fn message_store_timestamp(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        let entry = self.inner.queues.find(topic, queue_id)?.entry(offset)?;
        if entry.is_blank() {
            return None;
        }
        self.store_timestamp_at(entry.phys_offset)
    }

    fn store_timestamp_at(&self, phys_offset: i64) -> Option<i64> {
        let head = self.inner.commit_log.read(phys_offset, SYS_FLAG_POS + 4)?;
        let mut flag = [0u8; 4];
        flag.copy_from_slice(&head[SYS_FLAG_POS..SYS_FLAG_POS + 4]);
        let pos = store_timestamp_pos(i32::from_be_bytes(flag));
        let raw = self.inner.commit_log.read(phys_offset, pos + 8)?;
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&raw[pos..pos + 8]);
        Some(i64::from_be_bytes(ts))
    }

    /// Store time of the oldest message of a queue.
    pub fn earliest_message_time(&self, topic: &str, queue_id: i32) -> Option<i64> {
        self.message_store_timestamp(topic, queue_id, self.min_offset_in_queue(topic, queue_id))
    }

    /// Store time of the oldest message in the store.
    pub fn earliest_message_time_overall(&self) -> Option<i64> {
        let offset = self.inner.commit_log.min_offset();
        match self.inner.commit_log.next_record(offset) {
            crate::commitlog::NextRecord::Record(bytes) => record::peek(&bytes)
                .ok()
                .and_then(|_| self.store_timestamp_at(offset)),
            _ => None,
        }
    }

    /// The queue offset whose message was stored closest to `timestamp` (4.x semantics:
    /// exact match wins, else the nearer neighbour); min or max offset outside the range.
    pub fn offset_in_queue_by_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        let Some(cq) = self.inner.queues.find(topic, queue_id) else {
            return 0;
        };
        let (mut lo, max) = (cq.min_offset(), cq.max_offset());
        if lo >= max {
            return max;
        }
        let ts_at = |o: i64| {
            cq.entry(o)
                .filter(|e| !e.is_blank())
                .and_then(|e| self.store_timestamp_at(e.phys_offset))
        };
        let mut hi = max;
        // First offset stored at or after `timestamp`.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match ts_at(mid) {
                Some(ts) if ts < timestamp => lo = mid + 1,
                _ => hi = mid,
            }
        }
        if lo >= max {
            return max;
        }
        if lo == cq.min_offset() {
            return lo;
        }
        match (ts_at(lo - 1), ts_at(lo)) {
            (Some(before), Some(after))
                if after != timestamp && timestamp - before < after - timestamp =>
            {
                lo - 1
            }
            _ => lo,
        }
    }

    /// The ConsumeQueue entry at a queue offset.
    pub fn consume_queue_entry(&self, topic: &str, queue_id: i32, offset: i64) -> Option<CqEntry> {
        self.inner.queues.find(topic, queue_id)?.entry(offset)
    }

    pub fn commit_log_min_offset(&self) -> i64 {
        self.inner.commit_log.min_offset()
    }

    /// Makes this a slave's store: local puts are refused so that its CommitLog stays a
    /// byte-exact copy of the master's (a local write would make the two diverge).
    pub fn set_replica(&self, replica: bool) {
        self.inner.replica.store(replica, Ordering::Release);
    }

    /// A slave's append of bytes streamed from its master; dispatch follows as for local
    /// writes. Returns the new end of the log.
    pub async fn append_replicated(
        &self,
        offset: i64,
        data: &[u8],
    ) -> Result<i64, crate::commitlog::ReplicaError> {
        let log = &self.inner.commit_log;
        let end = loop {
            match log.append_replicated(offset, data) {
                Err(ReplicaError::SegmentNotReady(base)) => {
                    if !log.wait_segment(base, SEGMENT_WAIT).await {
                        return Err(ReplicaError::SegmentNotReady(base));
                    }
                }
                other => break other?,
            }
        };
        self.inner.wake_all();
        Ok(end)
    }

    /// The next bytes to send a slave whose log ends at `offset` (at most `max`, one segment).
    pub fn replication_chunk(&self, offset: i64, max: usize) -> Option<Bytes> {
        self.inner.commit_log.replication_chunk(offset, max)
    }

    /// Where a slave that reported `slave_max` starts: its own end, or for an empty slave the
    /// start of the master's last segment (protocol.md 9.2).
    pub fn replication_start(&self, slave_max: i64) -> i64 {
        if slave_max > 0 {
            return slave_max;
        }
        let max = self.commit_log_max_offset();
        max - max % self.inner.commit_log.file_size() as i64
    }

    /// CommitLog bytes written but not yet flushed to disk.
    pub fn commit_log_unflushed_bytes(&self) -> usize {
        self.inner.commit_log.unflushed()
    }

    pub fn commit_log_max_offset(&self) -> i64 {
        self.inner.commit_log.max_offset()
    }

    /// Bytes written to the CommitLog but not yet dispatched.
    pub fn dispatch_behind_bytes(&self) -> i64 {
        (self.inner.commit_log.max_offset() - self.inner.dispatcher.reput_from()).max(0)
    }

    /// Waits (blocking) until everything written is dispatched, up to `timeout`.
    pub fn wait_dispatched(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.dispatch_behind_bytes() > 0 {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Topics with ConsumeQueues.
    pub fn topics(&self) -> Vec<String> {
        self.inner.queues.topics()
    }

    pub fn queue_ids(&self, topic: &str) -> Vec<i32> {
        self.inner.queues.queue_ids(topic)
    }

    /// Deletes a topic's ConsumeQueues (its CommitLog records age out with retention).
    pub fn delete_topic(&self, topic: &str) -> Result<(), StoreError> {
        for queue_id in self.inner.queues.delete_topic(topic)? {
            self.inner.commit_log.forget_queue(topic, queue_id);
        }
        tracing::info!(event = "TOPIC_QUEUES_DELETED", %topic, "consume queues deleted");
        Ok(())
    }

    pub fn stats(&self) -> &StoreStats {
        &self.inner.stats
    }

    pub fn is_disk_full(&self) -> bool {
        self.inner.disk_full.load(Ordering::Acquire)
    }

    /// Fraction of the CommitLog's disk in use.
    pub fn disk_usage(&self) -> Option<f64> {
        (self.inner.disk_usage)(&self.inner.config.commit_log_dir())
    }

    /// Runs retention now, as if it were `deleteWhen` (admin DELETE_EXPIRED_COMMITLOG).
    pub fn clean_expired_files_now(&self) -> usize {
        crate::clean::clean_once(&self.inner, true)
    }

    /// Number of CommitLog segments.
    pub fn commit_log_file_count(&self) -> usize {
        self.inner.commit_log.segments().files().len()
    }

    pub fn root_dir(&self) -> &Path {
        &self.inner.root
    }

    /// Stops the services, flushes everything, writes the checkpoint and removes `abort`.
    pub fn shutdown(&self) {
        let threads: Vec<JoinHandle<()>> = self.threads.lock().drain(..).collect();
        if threads.is_empty() && self.inner.stopping.load(Ordering::Acquire) {
            return;
        }
        self.inner.stopping.store(true, Ordering::Release);
        self.inner.wake_all();
        {
            let (lock, cv) = &self.inner.pause;
            let _guard = lock.lock();
            cv.notify_all();
        }
        self.inner.flush_requests.1.notify_all();
        for t in threads {
            let _ = t.join();
        }
        self.inner.allocator.shutdown();
        let clean = crate::services::final_flush(&self.inner);
        if clean {
            let abort = self.inner.root.join("abort");
            if let Err(e) = std::fs::remove_file(&abort) {
                tracing::warn!(error = %e, "cannot remove the abort file");
            }
        }
        // Release the store lock now, even if other handles keep this value alive.
        if let Some(lock) = self.inner.lock_file.lock().take() {
            let _ = lock.unlock();
        }
        tracing::info!(event = "STORE_STOPPED", clean, "store shut down");
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        self.shutdown();
    }
}
