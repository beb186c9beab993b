//! Index entries are written by a thread of their own, behind the ConsumeQueue dispatcher.
//!
//! The dispatcher used to write each message's index entries before its ConsumeQueue entry
//! was announced to waiting consumers, so every index page fault (the hash slots are
//! touched at random, and a fresh page costs tens of microseconds on some hosts) delayed
//! consumption; born-to-received p99 was 34-46 ms with the index on and 5-6 ms with it off.
//! Now the dispatcher hands each round's keys to an [`IndexFeed`] and the index thread
//! writes them. The feed is bounded: past [`MAX_PENDING`] entries the dispatcher indexes the
//! backlog itself, so a stalled index slows dispatch instead of growing memory. Entries carry
//! their keys' hashes (all an index file stores), so CommitLog retention never waits for the
//! index and no key is copied.
//!
//! Whoever drains the feed holds `indexing`, so entries reach the index in log order.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::index::{IndexEntry, IndexService};

/// Most entries the feed holds before the dispatcher indexes them itself.
pub const MAX_PENDING: usize = 131_072;

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
    pending: Mutex<Vec<IndexEntry>>,
    ready: Condvar,
    indexing: Mutex<()>,
    /// Store time of the last message indexed (the checkpoint's index timestamp).
    last_timestamp: AtomicI64,
}

impl IndexFeed {
    /// Queues entries for the index thread; true when the backlog is over [`MAX_PENDING`].
    pub fn push(&self, jobs: Vec<IndexEntry>) -> bool {
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

    /// Indexes everything queued so far, in log order; returns how many entries.
    pub fn drain(&self, index: &IndexService) -> usize {
        let _in_order = self.indexing.lock();
        let jobs = std::mem::take(&mut *self.pending.lock());
        put_or_log(index, &jobs);
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

/// Writes entries to the index; a failure is logged, since the index only serves key
/// lookups and losing entries must not stop anything.
pub(crate) fn put_or_log(index: &IndexService, entries: &[IndexEntry]) {
    if let Err(e) = index.put(entries) {
        let from = entries.first().map_or(0, |e| e.phys_offset);
        tracing::error!(from_offset = from, entries = entries.len(), error = %e, "cannot write index entries; their keys will not be found");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(phys: i64, key: &str) -> IndexEntry {
        IndexEntry {
            key_hash: crate::index::index_key_hash("T", key),
            phys_offset: phys,
            store_timestamp: 1_000 + phys,
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
        let jobs: Vec<IndexEntry> = (0..=MAX_PENDING as i64).map(|i| job(i, "k")).collect();
        assert!(feed.push(jobs));
    }
}
