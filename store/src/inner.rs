//! The store's shared state, used by the API ([`crate::MessageStore`]), the background
//! services and retention: the files, the flags that refuse writes, and the condvars the
//! threads sleep on.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use tokio::sync::oneshot;

use crate::allocator::Allocator;
use crate::checkpoint::Checkpoint;
use crate::commitlog::CommitLog;
use crate::config::{FlushDiskType, MessageStoreConfig};
use crate::consume_queue::ConsumeQueueStore;
use crate::dispatch::{Dispatcher, MessageArrivingListener};
use crate::index::IndexService;
use crate::index_feed::IndexFeed;

/// Fraction (0..1) of the disk holding a path that is in use.
pub type DiskUsageProbe = Arc<dyn Fn(&Path) -> Option<f64> + Send + Sync>;

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

/// Why a group commit did not cover a write.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum FlushError {
    #[error("{0}")]
    Failed(#[source] Arc<std::io::Error>),
    #[error("flushed to {flushed}, short of {target}")]
    Short { flushed: i64, target: i64 },
}

/// A pending group-commit flush.
pub(crate) struct FlushRequest {
    pub target: i64,
    pub done: oneshot::Sender<Result<(), FlushError>>,
}

pub(crate) struct Inner {
    pub config: MessageStoreConfig,
    pub root: PathBuf,
    pub flush_type: FlushDiskType,
    pub commit_log: CommitLog,
    pub queues: ConsumeQueueStore,
    pub index: IndexService,
    /// Index entries waiting for the index thread.
    pub index_feed: IndexFeed,
    pub checkpoint: Checkpoint,
    pub dispatcher: Dispatcher,
    /// Held by the dispatcher for each round and by a runtime truncation for its whole
    /// cut, so the two never interleave. Lock order: this, then the CommitLog's append lock.
    pub dispatch_lock: Mutex<()>,
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
    pub lock_file: Mutex<Option<File>>,
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
