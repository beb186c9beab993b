//! [`MessageStore`]: opening (with recovery), writing, reading, and shutting down.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use tokio::sync::oneshot;

use crate::allocator::Allocator;
use crate::checkpoint::Checkpoint;
use crate::commitlog::{AppendError, CommitLog, ReplicaError};
use crate::config::{FlushDiskType, MessageStoreConfig};
use crate::consume_queue::ConsumeQueueStore;
use crate::dispatch::{Dispatcher, MessageArrivingListener};
use crate::error::{open_read_write, IoContext, StoreError};
use crate::index::IndexService;
use crate::index_feed::{IndexFeed, IndexSink};
use crate::inner::{DiskUsageProbe, FlushRequest, Inner, StoreStats};
use crate::mapped_file::segment_name;
use crate::message::{PutMessage, PutMessageResult, PutMessageStatus};
use crate::pending::PendingPut;
use crate::recovery::recover_commit_log;
use crate::segments::SegmentQueue;

/// Things that are not configuration: injected behaviour, mainly for tests.
#[derive(Clone, Default)]
pub struct StoreOptions {
    /// Replaces the statvfs-based disk usage probe.
    pub disk_usage: Option<DiskUsageProbe>,
    /// Controller mode: make nothing past the recovered ConsumeQueues consumable until
    /// [`MessageStore::set_confirm_offset`] says so (the broker's role decides what of its
    /// log's tail survives).
    pub hold_dispatch: bool,
}

/// Messages found by key.
#[derive(Debug, Clone, Default)]
pub struct QueryMessageResult {
    pub messages: Vec<Bytes>,
    pub index_last_update_timestamp: i64,
    pub index_last_update_phyoffset: i64,
}

/// The message store. Dropping it shuts it down cleanly.
pub struct MessageStore {
    pub(crate) inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// How long a write waits for the allocator to prepare the next CommitLog segment.
const SEGMENT_WAIT: Duration = Duration::from_secs(5);

/// Available space below which the disk counts as full (or 5 % of a smaller disk).
const MIN_AVAILABLE_BYTES: u64 = 2 << 30;

fn default_disk_usage(path: &Path) -> Option<f64> {
    let stat = rustix::fs::statvfs(path).ok()?;
    if stat.f_blocks == 0 {
        return None;
    }
    // RocketMQ's ratio (total - free) / total, so its thresholds mean what they mean there.
    // But space the broker may not use (root's reserve, quotas) does not help it: nearly no
    // available space is a full disk whatever the ratio says. "Nearly none" is 2 GiB, or 5 %
    // of a small disk.
    let total = stat.f_blocks.saturating_mul(stat.f_frsize);
    let floor = MIN_AVAILABLE_BYTES.min(total / 20);
    if stat.f_bavail.saturating_mul(stat.f_frsize) < floor {
        return Some(1.0);
    }
    Some(stat.f_blocks.saturating_sub(stat.f_bfree) as f64 / stat.f_blocks as f64)
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
        let lock_file = open_read_write(&lock_path)?;
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
        let cq_range = commit_log.min_offset()..outcome.valid_end;
        let summarized = ConsumeQueueStore::load_summary(
            &config.consume_queue_dir(),
            config.mapped_file_size_consume_queue,
            cq_range.clone(),
            crashed,
        );
        // Never leave a summary a later start could trust.
        ConsumeQueueStore::discard_summary(&config.consume_queue_dir());
        let queues_from_summary = summarized.is_some();
        let (queues, snapshot_from) = match summarized {
            Some(loaded) => loaded,
            None => (
                ConsumeQueueStore::load(
                    &config.consume_queue_dir(),
                    config.mapped_file_size_consume_queue,
                    cq_range,
                )?,
                None,
            ),
        };
        let mut reput_from = commit_log.min_offset();
        for cq in queues.all() {
            reput_from = reput_from.max(cq.max_phys_offset());
        }
        index.truncate(outcome.valid_end)?;
        index.set_resume_point(outcome.valid_end);
        if let Some(from) = snapshot_from {
            // Every entry below `from` is in the snapshot (flushed); every later one is
            // written again from the CommitLog.
            reput_from = from;
        } else if crashed {
            // Queues flushed at different times: any may lack entries the scan covers.
            reput_from = reput_from.min(outcome.scan_start);
        }
        if crashed {
            // The index thread may have been behind the ConsumeQueues when the broker died.
            if let Some(indexed_to) = index.resume_point() {
                reput_from = reput_from.min(indexed_to);
            }
        }
        let reput_from = reput_from.clamp(commit_log.min_offset(), outcome.valid_end);
        let dispatcher = Dispatcher::new(
            reput_from,
            config.delay_levels()?,
            config.message_index_enable,
        );
        if options.hold_dispatch {
            dispatcher.set_limit(reput_from);
        }
        let redispatched =
            dispatcher.run_once(&commit_log, &queues, IndexSink::Direct(&index), None)?;
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
            queues_from_summary,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "store opened"
        );
        let inner = Arc::new(Inner {
            flush_type: config.flush_type(),
            root,
            commit_log,
            queues,
            index,
            index_feed: IndexFeed::default(),
            checkpoint,
            dispatcher,
            dispatch_lock: Mutex::new(()),
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

    /// How long (ms) the CommitLog's append lock has been held by the write now holding
    /// it; 0 when free (RocketMQ's `pageCacheLockTimeMills`).
    pub fn page_cache_lock_time_ms(&self) -> i64 {
        self.inner.commit_log.lock_held_ms()
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

    /// Appends messages of one topic and queue contiguously (a batch shares one queue), and
    /// with SYNC_FLUSH waits for their flush.
    pub async fn put_messages(&self, msgs: Vec<PutMessage>) -> PutMessageResult {
        self.append_messages(msgs).await.wait().await
    }

    /// Appends like [`Self::put_messages`] but returns before the SYNC_FLUSH wait: a caller
    /// that holds a scarce worker can give it back, then [`PendingPut::wait`] for the flush.
    pub async fn append_messages(&self, msgs: Vec<PutMessage>) -> PendingPut {
        let started = Instant::now();
        let pending = self.put_inner(&msgs).await;
        let result = &pending.result;
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
        pending
    }

    async fn put_inner(&self, msgs: &[PutMessage]) -> PendingPut {
        self.append_inner(msgs)
            .await
            .unwrap_or_else(PendingPut::done)
    }

    /// The append, and the flush still to wait for; `Err` is a finished (failed) result.
    async fn append_inner(&self, msgs: &[PutMessage]) -> Result<PendingPut, PutMessageResult> {
        if let Some(reason) = self.write_refusal() {
            return Err(PutMessageResult::failed(
                PutMessageStatus::ServiceNotAvailable,
                reason,
            ));
        }
        if let Some(first) = msgs.first() {
            if msgs
                .iter()
                .any(|m| m.topic != first.topic || m.queue_id != first.queue_id)
            {
                return Err(PutMessageResult::failed(
                    PutMessageStatus::MessageIllegal,
                    "a batch must target one topic and queue",
                ));
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
                return Err(PutMessageResult::failed(
                    PutMessageStatus::CreateMappedFileFailed,
                    reason,
                ));
            }
            Err(AppendError::MessageIllegal(reason)) => {
                return Err(PutMessageResult::failed(
                    PutMessageStatus::MessageIllegal,
                    reason,
                ))
            }
            Err(AppendError::PropertiesTooLong) => {
                return Err(PutMessageResult::failed(
                    PutMessageStatus::PropertiesSizeExceeded,
                    "properties longer than 32767 bytes",
                ))
            }
            Err(AppendError::CreateFileFailed(reason)) => {
                tracing::error!(%reason, "cannot create the next CommitLog file");
                return Err(PutMessageResult::failed(
                    PutMessageStatus::CreateMappedFileFailed,
                    reason,
                ));
            }
        };
        self.inner.wake_all();
        let appended = PutMessageResult {
            status: PutMessageStatus::PutOk,
            append: Some(append),
            remark: None,
        };
        let wait =
            self.inner.flush_type == FlushDiskType::Sync && msgs.iter().all(|m| m.wait_store_ok);
        if !wait {
            return Ok(PendingPut::done(appended));
        }
        let target = appended.append.as_ref().map_or(0, |a| a.end_offset);
        let (tx, rx) = oneshot::channel();
        {
            let (lock, cv) = &self.inner.flush_requests;
            lock.lock().push(FlushRequest { target, done: tx });
            cv.notify_one();
        }
        Ok(PendingPut {
            result: appended,
            flush: Some((rx, self.inner.config.sync_flush_timeout())),
        })
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

    pub fn commit_log_min_offset(&self) -> i64 {
        self.inner.commit_log.min_offset()
    }

    /// Makes this a slave's store: local puts are refused so that its CommitLog stays a
    /// byte-exact copy of the master's (a local write would make the two diverge).
    pub fn set_replica(&self, replica: bool) {
        self.inner.replica.store(replica, Ordering::Release);
        if replica {
            // A master's queued records go with its mastership: the new master writes its own.
            self.inner.commit_log.clear_prologue();
        }
    }

    /// Queues `record` to be appended before the next append's own records, so that it
    /// precedes in the log every message appended after this call; a replica (whose log is
    /// its master's) drops it and answers false.
    pub fn queue_prologue(&self, record: PutMessage) -> bool {
        if self.inner.replica.load(Ordering::Acquire) {
            return false;
        }
        self.inner.commit_log.queue_prologue(record);
        true
    }

    /// Appends the queued prologue records now, without a message of its own; the end
    /// offset of the last, or `None` when none was queued or the store refuses writes.
    pub async fn append_prologue(&self) -> Option<i64> {
        if self.write_refusal().is_some() {
            return None;
        }
        let log = &self.inner.commit_log;
        let end = loop {
            match log.append_prologue_only(&self.inner.queues) {
                Err(AppendError::SegmentNotReady(base)) => {
                    if !log.wait_segment(base, SEGMENT_WAIT).await {
                        return None;
                    }
                }
                Ok(end) => break end,
                Err(e) => {
                    tracing::error!(error = ?e, "the prologue records could not be appended");
                    return None;
                }
            }
        };
        if end.is_some() {
            self.inner.wake_all();
        }
        end
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

    /// Controller mode: makes only records that end at or before `offset` consumable (the
    /// master's confirm offset: what every SyncStateSet member has). Records past it stay in
    /// the CommitLog, undispatched, until it is raised: a consumer never reads bytes a new
    /// master may truncate (RocketMQ 5 with `readUnCommitted=false`). `i64::MAX` lifts it.
    pub fn set_confirm_offset(&self, offset: i64) {
        let raised = offset > self.inner.dispatcher.limit();
        self.inner.dispatcher.set_limit(offset);
        if raised {
            self.inner.wake_all();
        }
    }

    /// The offset set by [`Self::set_confirm_offset`] (`i64::MAX` when none holds dispatch).
    pub fn confirm_offset(&self) -> i64 {
        self.inner.dispatcher.limit()
    }

    /// The CommitLog offset dispatch has reached: everything before it is in its
    /// ConsumeQueue (it stops at the confirm offset).
    pub fn dispatched_to(&self) -> i64 {
        self.inner.dispatcher.reput_from()
    }

    /// Bytes written to the CommitLog but not yet dispatched.
    pub fn dispatch_behind_bytes(&self) -> i64 {
        (self.inner.commit_log.max_offset() - self.inner.dispatcher.reput_from()).max(0)
    }

    /// Waits (blocking) until everything written is dispatched (ConsumeQueues and index), up
    /// to `timeout`.
    pub fn wait_dispatched(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.dispatch_behind_bytes() > 0 || !self.inner.index_feed.is_idle() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Closes the files of ConsumeQueues unused for `idle` (the flush service does it
    /// after each thorough flush for those idle for that long); how many it closed.
    pub fn close_idle_consume_queues(&self, idle: Duration) -> usize {
        self.inner.queues.close_idle(idle)
    }

    /// ConsumeQueues whose files are open (mapped), and all ConsumeQueues.
    /// Writes a snapshot of every ConsumeQueue now (the flush service writes one every
    /// `consumeQueueSnapshotInterval`): a start after a crash then opens no queue's files
    /// and re-dispatches the CommitLog from it. How many queues it holds. Blocking.
    pub fn snapshot_consume_queues(&self) -> Result<usize, StoreError> {
        self.inner
            .queues
            .write_snapshot(self.inner.dispatcher.reput_from())
    }

    pub fn consume_queues_open(&self) -> (usize, usize) {
        self.inner.queues.open_count()
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
        self.inner.dispatcher.request_stop();
        self.inner.wake_all();
        self.inner.index_feed.wake();
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
            match self.inner.queues.write_summary() {
                Ok(true) => {}
                Ok(false) => tracing::warn!(
                    "a ConsumeQueue could not close; the next start reads every queue's files"
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot write the ConsumeQueue summary; the next start reads every queue's files")
                }
            }
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
