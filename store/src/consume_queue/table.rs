//! Every ConsumeQueue of a store: found at start, created on first use, closed when idle.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use stellmq_protocol::names;

use super::{monotonic_ms, ConsumeQueue, COARSE_NOW_MS};
use crate::error::{IoContext, StoreError};
use crate::mapped_file::{create_dir_all_syncing, DirSync, PendingDirSyncs};

/// All ConsumeQueues of a store, under `consumequeue/<topic>/<queueId>/`.
pub struct ConsumeQueueStore {
    dir: PathBuf,
    file_size: usize,
    queues: RwLock<HashMap<String, HashMap<i32, Arc<ConsumeQueue>>>>,
    /// Directories that new queues and files added entries to, synced by
    /// [`ConsumeQueueStore::sync_new_dirs`] before each checkpoint.
    pub(super) dir_syncs: Arc<PendingDirSyncs>,
    /// Queues with open files.
    open_queues: Arc<AtomicUsize>,
    /// The CommitLog's valid end when the store opened: a queue created later over files
    /// already there (a crash start from a snapshot) is recovered against it.
    log_end_at_start: i64,
    /// Held while a snapshot is written, and while the CommitLog is cut back.
    snapshot_lock: parking_lot::Mutex<()>,
}

impl ConsumeQueueStore {
    /// Opens every queue found on disk, recovers it against the CommitLog's valid range
    /// ([`ConsumeQueue::recover`], [`ConsumeQueue::correct_min_offset`]) and closes it
    /// again, so a store of a million queues never maps more than one at a time while it
    /// starts; each reopens at its next use.
    pub fn load(
        dir: &Path,
        file_size: usize,
        commit_log: std::ops::Range<i64>,
    ) -> Result<Self, StoreError> {
        let dir_syncs = Arc::new(PendingDirSyncs::default());
        let open_queues = Arc::new(AtomicUsize::new(0));
        create_dir_all_syncing(dir, DirSync::Later(&dir_syncs))?;
        let mut queues: HashMap<String, HashMap<i32, Arc<ConsumeQueue>>> = HashMap::new();
        for topic_entry in std::fs::read_dir(dir).at(dir)? {
            let topic_entry = topic_entry.at(dir)?;
            let Some(topic) = topic_entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !topic_entry.path().is_dir() {
                continue;
            }
            for queue_entry in std::fs::read_dir(topic_entry.path()).at(&topic_entry.path())? {
                let queue_entry = queue_entry.at(&topic_entry.path())?;
                let Some(queue_id) = queue_entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok())
                else {
                    continue;
                };
                let cq = ConsumeQueue::open(
                    &queue_entry.path(),
                    &topic,
                    queue_id,
                    file_size,
                    dir_syncs.clone(),
                    open_queues.clone(),
                )?;
                cq.recover(commit_log.end)?;
                cq.correct_min_offset(commit_log.start);
                cq.close_if_idle(Duration::ZERO);
                queues
                    .entry(topic.clone())
                    .or_default()
                    .insert(queue_id, Arc::new(cq));
            }
        }
        Ok(Self {
            dir: dir.to_owned(),
            file_size,
            queues: RwLock::new(queues),
            dir_syncs,
            open_queues,
            log_end_at_start: commit_log.end,
            snapshot_lock: parking_lot::Mutex::new(()),
        })
    }

    /// The queues of the summary (see [`super::summary`]), their files untouched, and where
    /// to re-dispatch from when it is a running store's snapshot. `None` when there is no
    /// usable summary: none, damaged, a clean stop's after a crash (`crashed`), or one that
    /// does not fit the CommitLog's valid range (then [`Self::load`] reads the files). The
    /// summary is gone once read.
    pub fn load_summary(
        dir: &Path,
        file_size: usize,
        commit_log: std::ops::Range<i64>,
        crashed: bool,
    ) -> Option<(Self, Option<i64>)> {
        let summary = super::summary::take(&super::summary::path_of(dir))?;
        let from = summary.redispatch_from;
        if crashed && from.is_none() {
            return None;
        }
        if from.is_some_and(|f| f > commit_log.end)
            || summary.queues.iter().any(|s| s.max_phys > commit_log.end)
        {
            tracing::warn!("the ConsumeQueue summary is ahead of the CommitLog; reading the queues' files instead");
            return None;
        }
        let dir_syncs = Arc::new(PendingDirSyncs::default());
        let open_queues = Arc::new(AtomicUsize::new(0));
        let mut queues: HashMap<String, HashMap<i32, Arc<ConsumeQueue>>> = HashMap::new();
        // A topic deleted after a snapshot has no directory left: its queues are gone.
        let mut topic_exists: HashMap<String, bool> = HashMap::new();
        for summary in summary.queues {
            let (topic, queue_id) = (summary.topic.clone(), summary.queue_id);
            if from.is_some()
                && !*topic_exists
                    .entry(topic.clone())
                    .or_insert_with(|| dir.join(&topic).is_dir())
            {
                continue;
            }
            let cq = ConsumeQueue::from_summary(
                summary,
                from.is_some(),
                dir,
                file_size,
                dir_syncs.clone(),
                open_queues.clone(),
            );
            cq.correct_min_offset(commit_log.start);
            queues
                .entry(topic)
                .or_default()
                .insert(queue_id, Arc::new(cq));
        }
        let store = Self {
            dir: dir.to_owned(),
            file_size,
            queues: RwLock::new(queues),
            dir_syncs,
            open_queues,
            log_end_at_start: commit_log.end,
            snapshot_lock: parking_lot::Mutex::new(()),
        };
        Some((store, from))
    }

    /// Summarizes every queue for the next start (at a clean stop, after the final flush);
    /// false, and no summary, when a queue could not close.
    pub fn write_summary(&self) -> Result<bool, StoreError> {
        let path = super::summary::path_of(&self.dir);
        let summaries: Option<Vec<_>> = self.all().iter().map(|cq| cq.summary()).collect();
        let Some(summaries) = summaries else {
            let _ = std::fs::remove_file(&path);
            return Ok(false);
        };
        super::summary::write(&path, None, &summaries).inspect_err(|_| {
            // Never leave an older summary for a start that would trust it.
            let _ = std::fs::remove_file(&path);
        })?;
        Ok(true)
    }

    /// Writes a running store's snapshot (see [`super::summary`]): every message below
    /// `redispatch_from` is dispatched. Each queue is flushed, its flushed state noted, and
    /// the directories of every file the snapshot names synced, before the snapshot
    /// replaces the previous one; a failure leaves the previous one (still valid: it only
    /// re-dispatches more).
    pub fn write_snapshot(&self, redispatch_from: i64) -> Result<usize, StoreError> {
        let _writing = self.snapshot_lock.lock();
        let all = self.all();
        let mut queues = Vec::with_capacity(all.len());
        for cq in &all {
            cq.flush().map_err(|e| StoreError::Io {
                path: self.dir.join(cq.topic()),
                source: e,
            })?;
            queues.push(cq.snapshot());
        }
        self.sync_new_dirs()?;
        super::summary::write(
            &super::summary::path_of(&self.dir),
            Some(redispatch_from),
            &queues,
        )?;
        Ok(queues.len())
    }

    /// Removes the snapshot and holds off new ones while the guard lives: the CommitLog is
    /// being cut back, which no snapshot taken before may survive.
    pub fn hold_snapshots(&self) -> parking_lot::MutexGuard<'_, ()> {
        let guard = self.snapshot_lock.lock();
        Self::discard_summary(&self.dir);
        guard
    }

    /// Removes a summary a start does not use (after a crash), so no later start can.
    pub fn discard_summary(dir: &Path) {
        let _ = std::fs::remove_file(super::summary::path_of(dir));
    }

    pub fn find(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.queues
            .read()
            .get(topic)
            .and_then(|q| q.get(&queue_id))
            .cloned()
    }

    pub fn find_or_create(
        &self,
        topic: &str,
        queue_id: i32,
    ) -> Result<Arc<ConsumeQueue>, StoreError> {
        if let Some(cq) = self.find(topic, queue_id) {
            return Ok(cq);
        }
        if !names::is_safe_file_name(topic) || queue_id < 0 {
            return Err(StoreError::UnsafeName(format!("{topic}/{queue_id}")));
        }
        // Its directories are made outside the lock every lookup takes (only the
        // dispatcher creates queues; a racing creator's copy, unwritten, is dropped).
        let dir = self.dir.join(topic).join(queue_id.to_string());
        let cq = ConsumeQueue::open(
            &dir,
            topic,
            queue_id,
            self.file_size,
            self.dir_syncs.clone(),
            self.open_queues.clone(),
        )?;
        if cq.has_files() {
            // Files of a queue no snapshot knew (created after it, before a crash): find
            // their written end as a crash start does.
            cq.recover(self.log_end_at_start)?;
        }
        let cq = Arc::new(cq);
        let mut queues = self.queues.write();
        let by_id = queues.entry(topic.to_owned()).or_default();
        Ok(by_id.entry(queue_id).or_insert(cq).clone())
    }

    /// Moves the clock uses are noted with (the flush service, every pass).
    pub fn tick(&self) {
        COARSE_NOW_MS.fetch_max(monotonic_ms(), Ordering::Relaxed);
    }

    /// Makes the directory entries of the queues and files created so far durable (the
    /// flush service calls it before each checkpoint).
    pub fn sync_new_dirs(&self) -> Result<(), StoreError> {
        self.dir_syncs.sync_all()
    }

    /// Closes the files of every queue unused for `idle` (see
    /// [`ConsumeQueue::close_if_idle`]); how many it closed.
    /// Idle queues are flushed first (a flush failure keeps the queue open: the flush
    /// service reports it).
    pub fn close_idle(&self, idle: Duration) -> usize {
        self.tick();
        self.all()
            .iter()
            .filter(|cq| cq.is_idle(idle) && cq.flush().is_ok() && cq.close_if_idle(idle))
            .count()
    }

    /// Queues whose files are open (mapped).
    pub fn open_queues(&self) -> usize {
        self.open_queues.load(Ordering::Acquire)
    }

    /// Queues whose files are open (mapped), and all queues.
    pub fn open_count(&self) -> (usize, usize) {
        let all = self.queues.read().values().map(HashMap::len).sum();
        (self.open_queues(), all)
    }

    /// Next logical offset of a queue (0 if it does not exist).
    pub fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.find(topic, queue_id).map_or(0, |cq| cq.max_offset())
    }

    pub fn all(&self) -> Vec<Arc<ConsumeQueue>> {
        self.queues
            .read()
            .values()
            .flat_map(|q| q.values().cloned())
            .collect()
    }

    /// Queue ids of a topic.
    pub fn queue_ids(&self, topic: &str) -> Vec<i32> {
        let mut ids: Vec<i32> = self
            .queues
            .read()
            .get(topic)
            .map(|q| q.keys().copied().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    pub fn topics(&self) -> Vec<String> {
        self.queues.read().keys().cloned().collect()
    }

    /// Removes one queue and its files (the topic's directory too when it was the last).
    pub fn delete_queue(&self, topic: &str, queue_id: i32) -> Result<bool, StoreError> {
        let removed = {
            let mut queues = self.queues.write();
            let Some(by_id) = queues.get_mut(topic) else {
                return Ok(false);
            };
            let removed = by_id.remove(&queue_id);
            if by_id.is_empty() {
                queues.remove(topic);
            }
            removed
        };
        let Some(cq) = removed else {
            return Ok(false);
        };
        cq.destroy()?;
        let topic_dir = self.dir.join(topic);
        let _ = std::fs::remove_dir_all(topic_dir.join(queue_id.to_string()));
        // Only succeeds when no other queue of the topic is left.
        let _ = std::fs::remove_dir(topic_dir);
        Ok(true)
    }

    /// Removes a topic's queues and files.
    pub fn delete_topic(&self, topic: &str) -> Result<Vec<i32>, StoreError> {
        if !names::is_safe_file_name(topic) {
            return Err(StoreError::UnsafeName(topic.to_owned()));
        }
        let removed = self.queues.write().remove(topic).unwrap_or_default();
        for cq in removed.values() {
            cq.destroy()?;
        }
        let _ = std::fs::remove_dir_all(self.dir.join(topic));
        Ok(removed.keys().copied().collect())
    }
}
