//! Index entries are written by a thread of their own, behind the ConsumeQueue dispatcher.
//!
//! The dispatcher used to write each message's index entries before its ConsumeQueue entry
//! was announced to waiting consumers, so every index page fault (the hash slots are
//! touched at random, and a fresh page costs tens of microseconds on some hosts) delayed
//! consumption; born-to-received p99 was 34-46 ms with the index on and 5-6 ms with it off.
//! Now the dispatcher hands each round's keys to an [`IndexFeed`] and the index thread
//! writes them. The feed is bounded: past [`MAX_PENDING`] jobs the dispatcher indexes the
//! backlog itself, so a stalled index slows dispatch instead of growing memory. Jobs own
//! their keys, so CommitLog retention never waits for the index.
//!
//! Whoever drains the feed holds `indexing`, so entries reach the index in log order.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::index::IndexService;

/// Most jobs the feed holds before the dispatcher indexes them itself.
pub const MAX_PENDING: usize = 65_536;

/// The index entries of one message.
#[derive(Debug)]
pub struct IndexJob {
    pub phys_offset: i64,
    pub store_timestamp: i64,
    pub keys: Vec<String>,
}

/// Where a dispatch round puts index entries.
#[derive(Clone, Copy)]
pub enum IndexSink<'a> {
    /// Written at once (recovery, the final flush).
    Direct(&'a IndexService),
    /// Queued for the index thread.
    Feed(&'a IndexFeed, &'a IndexService),
}

#[derive(Default)]
pub struct IndexFeed {
    pending: Mutex<Vec<IndexJob>>,
    ready: Condvar,
    indexing: Mutex<()>,
    /// Store time of the last message indexed (the checkpoint's index timestamp).
    last_timestamp: AtomicI64,
}

impl IndexFeed {
    /// Queues jobs for the index thread; true when the backlog is over [`MAX_PENDING`].
    pub fn push(&self, jobs: Vec<IndexJob>) -> bool {
        if jobs.is_empty() {
            return false;
        }
        let mut pending = self.pending.lock();
        let was_empty = pending.is_empty();
        if was_empty {
            *pending = jobs;
        } else {
            pending.extend(jobs);
        }
        let over = pending.len() > MAX_PENDING;
        drop(pending);
        if was_empty {
            self.ready.notify_one();
        }
        over
    }

    /// Indexes everything queued so far, in log order; returns how many messages.
    pub fn drain(&self, index: &IndexService) -> usize {
        let _in_order = self.indexing.lock();
        let jobs = std::mem::take(&mut *self.pending.lock());
        for job in &jobs {
            // The index only serves key lookups: losing an entry must not stop anything.
            if let Err(e) = index.put(&job.keys, job.phys_offset, job.store_timestamp) {
                tracing::error!(offset = job.phys_offset, error = %e, "cannot index a message; its keys will not be found");
            }
        }
        if let Some(last) = jobs.last() {
            self.last_timestamp
                .store(last.store_timestamp, Ordering::Release);
        }
        jobs.len()
    }

    /// Nothing queued and nothing being written.
    pub fn is_idle(&self) -> bool {
        // Pending first: a drain takes `indexing` before it empties `pending`.
        self.pending.lock().is_empty() && self.indexing.try_lock().is_some()
    }

    /// Waits up to `timeout` for jobs.
    pub fn wait(&self, timeout: Duration) {
        let mut pending = self.pending.lock();
        if pending.is_empty() {
            self.ready.wait_for(&mut pending, timeout);
        }
    }

    /// Wakes a waiting index thread (shutdown).
    pub fn wake(&self) {
        self.ready.notify_all();
    }

    pub fn last_timestamp(&self) -> i64 {
        self.last_timestamp.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(phys: i64, key: &str) -> IndexJob {
        IndexJob {
            phys_offset: phys,
            store_timestamp: 1_000 + phys,
            keys: vec![format!("T#{key}")],
        }
    }

    #[test]
    fn drained_jobs_are_found_in_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let index = IndexService::load(dir.path(), 64, 256).unwrap();
        let feed = IndexFeed::default();
        assert!(!feed.push(vec![job(0, "a"), job(100, "b")]));
        assert!(!feed.push(vec![job(200, "a")]));
        assert_eq!(feed.drain(&index), 3);
        assert_eq!(feed.drain(&index), 0);
        assert_eq!(feed.last_timestamp(), 1_200);
        let (found, _, _) = index.query("T", "a", 10, 0, i64::MAX);
        assert_eq!(found, vec![200, 0]);
    }

    #[test]
    fn a_full_feed_says_so() {
        let feed = IndexFeed::default();
        let jobs: Vec<IndexJob> = (0..=MAX_PENDING as i64).map(|i| job(i, "k")).collect();
        assert!(feed.push(jobs));
    }
}
