//! The store's background threads: dispatch, CommitLog flush (async interval or sync group
//! commit), ConsumeQueue/index flush with the checkpoint, and retention.
//!
//! They are plain threads, not tokio tasks: they block on msync and file I/O. Appends wake
//! the dispatcher and the async flusher (the `wake` condvar) and sync flushes queue
//! group-commit requests; the periodic services only sleep, so appends never run them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::FlushDiskType;
use crate::index_feed::IndexSink;
use crate::inner::{FlushError, Inner};
use crate::mapped_file::PAGE_SIZE;

fn spawn(name: &str, inner: &Arc<Inner>, body: fn(&Inner)) -> Option<JoinHandle<()>> {
    let inner = inner.clone();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || body(&inner))
        .map_err(|e| tracing::error!(thread = name, error = %e, "cannot start store thread"))
        .ok()
}

pub(crate) fn start(inner: &Arc<Inner>) -> Vec<JoinHandle<()>> {
    let flush: fn(&Inner) = match inner.flush_type {
        FlushDiskType::Sync => group_commit_loop,
        FlushDiskType::Async => async_flush_loop,
    };
    [
        spawn("stellmq-dispatch", inner, dispatch_loop),
        spawn("stellmq-index", inner, index_loop),
        spawn("stellmq-flush-commitlog", inner, flush),
        spawn("stellmq-flush-cq", inner, consume_queue_flush_loop),
        spawn("stellmq-clean", inner, clean_loop),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn stopping(inner: &Inner) -> bool {
    inner.stopping.load(Ordering::Acquire)
}

/// How long the dispatcher naps after catching up while appends keep coming.
const DISPATCH_NAP: Duration = Duration::from_millis(1);

/// Dispatches what was appended. While appends keep coming, the dispatcher naps
/// [`DISPATCH_NAP`] after catching up instead of parking where appends wake it: a busy broker
/// then dispatches in batches and no append pays for waking it (RocketMQ's reput service
/// naps 1 ms between rounds always). Only when a nap brought nothing does it park until the
/// next append, so an idle broker still dispatches a lone message at once.
fn dispatch_loop(inner: &Inner) {
    let mut seen = 0;
    let mut napped = false;
    while !stopping(inner) {
        let listener = inner.listener.read().clone();
        let round = {
            let _paused_by_truncation = inner.dispatch_lock.lock();
            inner.dispatcher.run_once(
                &inner.commit_log,
                &inner.queues,
                IndexSink::Feed(&inner.index_feed, &inner.index),
                listener.as_deref(),
            )
        };
        match round {
            Ok(0) if napped => {
                inner.park(&mut seen, Duration::from_millis(10));
                napped = false;
            }
            Ok(0) => {
                inner.sleep(DISPATCH_NAP);
                napped = true;
            }
            Ok(_) => napped = false,
            Err(e) => {
                tracing::error!(error = %e, "dispatch failed; retrying in 1 s");
                inner.sleep(Duration::from_secs(1));
            }
        }
    }
}

/// Writes the index entries the dispatcher queued (see [`crate::index_feed`]).
fn index_loop(inner: &Inner) {
    while !stopping(inner) {
        if inner.index_feed.drain(&inner.index) == 0 {
            inner.index_feed.wait(Duration::from_millis(10));
        }
    }
}

/// Flushes the CommitLog and records the checkpoint's physic timestamp.
fn flush_commit_log(inner: &Inner) -> Result<i64, FlushError> {
    let ts = inner.commit_log.last_store_timestamp();
    match inner.commit_log.flush() {
        Ok(flushed) => {
            if ts > 0 {
                inner.checkpoint.update(|c| c.physic_msg_timestamp = ts);
            }
            Ok(flushed)
        }
        Err(e) => {
            inner.poison(e.to_string());
            Err(FlushError::Failed(Arc::new(e)))
        }
    }
}

/// SYNC_FLUSH: one flush serves every request queued before it (group commit).
fn group_commit_loop(inner: &Inner) {
    let (lock, cv) = &inner.flush_requests;
    loop {
        let batch = {
            let mut requests = lock.lock();
            if requests.is_empty() && !stopping(inner) {
                cv.wait_for(&mut requests, Duration::from_millis(10));
            }
            std::mem::take(&mut *requests)
        };
        let result = if batch.is_empty() && inner.commit_log.unflushed() == 0 {
            Ok(0)
        } else {
            flush_commit_log(inner)
        };
        for req in batch {
            let outcome = match &result {
                Ok(flushed) if *flushed >= req.target => Ok(()),
                Ok(flushed) => Err(FlushError::Short {
                    flushed: *flushed,
                    target: req.target,
                }),
                Err(e) => Err(e.clone()),
            };
            let _ = req.done.send(outcome);
        }
        if stopping(inner) && lock.lock().is_empty() {
            return;
        }
    }
}

/// ASYNC_FLUSH: every `flushIntervalCommitLog` ms when enough pages are dirty, and fully
/// every `flushCommitLogThoroughInterval` ms.
fn async_flush_loop(inner: &Inner) {
    let config = &inner.config;
    let interval = Duration::from_millis(config.flush_interval_commit_log.max(1));
    let thorough = Duration::from_millis(config.flush_commit_log_thorough_interval);
    let least = config.flush_commit_log_least_pages * PAGE_SIZE;
    let mut last_thorough = Instant::now();
    let mut seen = 0;
    while !stopping(inner) {
        // Woken by appends only when untimed: each early flush write-protects the pages
        // being filled, so the next appends fault and shoot down TLBs on every core.
        if config.flush_commit_log_timed {
            inner.sleep(interval);
        } else {
            inner.park(&mut seen, interval);
        }
        let unflushed = inner.commit_log.unflushed();
        let due = last_thorough.elapsed() >= thorough;
        if unflushed > 0 && (unflushed >= least || due) {
            let _ = flush_commit_log(inner);
        }
        if due {
            last_thorough = Instant::now();
        }
    }
}

/// Flushes ConsumeQueues and the index, then writes the checkpoint. The checkpoint only
/// claims what reached the disk: the logics timestamp moves only on a thorough pass
/// (`least_bytes` 1, every queue flushed, as Java's FlushConsumeQueueService does), and a
/// failed flush poisons the store like a failed CommitLog flush.
fn flush_queues_and_checkpoint(inner: &Inner, least_bytes: usize) -> bool {
    let ts = inner.dispatcher.last_store_timestamp();
    let index_ts = if inner.config.message_index_enable {
        inner.index_feed.last_timestamp()
    } else {
        ts
    };
    // New queues' directory entries first: the checkpoint below must not claim entries
    // of a file whose name a crash could lose.
    let mut queues_ok = match inner.queues.sync_new_dirs() {
        Ok(()) => true,
        Err(e) => {
            inner.poison(format!("consume queue directory sync failed: {e}"));
            false
        }
    };
    for cq in inner.queues.all() {
        if cq.unflushed() > 0 && cq.unflushed() >= least_bytes {
            if let Err(e) = cq.flush() {
                inner.poison(format!(
                    "consume queue {}/{} flush failed: {e}",
                    cq.topic(),
                    cq.queue_id()
                ));
                queues_ok = false;
            }
        }
    }
    let index_ok = match inner.index.flush() {
        Ok(()) => true,
        Err(e) => {
            inner.poison(format!("index flush failed: {e}"));
            false
        }
    };
    if ts > 0 {
        inner.checkpoint.update(|c| {
            if queues_ok && least_bytes <= 1 {
                c.logics_msg_timestamp = ts;
            }
            if index_ok && index_ts > 0 {
                c.index_msg_timestamp = index_ts;
            }
        });
    }
    let checkpoint_ok = match inner.checkpoint.flush() {
        Ok(()) => true,
        Err(e) => {
            inner.poison(format!("checkpoint flush failed: {e}"));
            false
        }
    };
    queues_ok && index_ok && checkpoint_ok
}

fn consume_queue_flush_loop(inner: &Inner) {
    let config = &inner.config;
    let interval = Duration::from_millis(config.flush_interval_consume_queue.max(1));
    let thorough = Duration::from_millis(config.flush_consume_queue_thorough_interval);
    let least = config.flush_consume_queue_least_pages * PAGE_SIZE;
    let mut last_thorough = Instant::now();
    let mut snapshots = Snapshots::new(config.consume_queue_snapshot_interval);
    while !stopping(inner) {
        inner.sleep(interval);
        inner.queues.tick();
        snapshots.take_if_due(inner);
        let due = last_thorough.elapsed() >= thorough;
        let flushed = flush_queues_and_checkpoint(inner, if due { 1 } else { least });
        if due {
            last_thorough = Instant::now();
            if flushed {
                close_idle_queues(inner, thorough);
            }
        } else if flushed && inner.queues.open_queues() > max_open_queues() {
            close_idle_queues(inner, BUSY_IDLE);
        }
    }
}

/// The running store's ConsumeQueue snapshots (see `consume_queue::summary`).
struct Snapshots {
    every: Option<Duration>,
    last: Instant,
    /// Where the last one re-dispatches from: nothing new, no new snapshot.
    last_from: Option<i64>,
}

impl Snapshots {
    fn new(interval_ms: u64) -> Self {
        Self {
            every: (interval_ms > 0).then(|| Duration::from_millis(interval_ms)),
            last: Instant::now(),
            last_from: None,
        }
    }

    fn take_if_due(&mut self, inner: &Inner) {
        let Some(every) = self.every else { return };
        if self.last.elapsed() < every {
            return;
        }
        self.last = Instant::now();
        // Noted first: every message below it is in the queues before they are flushed.
        let from = inner.dispatcher.reput_from();
        if self.last_from == Some(from) {
            return;
        }
        let started = Instant::now();
        match inner.queues.write_snapshot(from) {
            Ok(queues) => {
                self.last_from = Some(from);
                tracing::debug!(
                    queues,
                    redispatch_from = from,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "consume queue snapshot written"
                );
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot write the consume queue snapshot; a crash start would read every queue's files")
            }
        }
    }
}

/// Queues with open files beyond which those idle for [`BUSY_IDLE`] close at every flush
/// pass, not only those idle for a minute: each open queue holds at least one mapping
/// (Linux's default `vm.max_map_count` is 65,530). 20,000, or a quarter of the process's
/// descriptor limit or of `vm.max_map_count` when that is lower (sockets, the CommitLog
/// and the index need theirs).
pub(crate) fn max_open_queues() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        let descriptors = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let mappings = std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .ok()
            .and_then(|m| m.trim().parse::<u64>().ok());
        open_queue_bound(descriptors).min(open_queue_bound(mappings))
    })
}

/// The bound on open queues under a descriptor or mapping limit (`None`: unlimited).
fn open_queue_bound(limit: Option<u64>) -> usize {
    const MAX_OPEN_QUEUES: usize = 20_000;
    limit.map_or(MAX_OPEN_QUEUES, |limit| {
        MAX_OPEN_QUEUES.min(usize::try_from(limit / 4).unwrap_or(usize::MAX).max(16))
    })
}

const BUSY_IDLE: Duration = Duration::from_secs(1);

/// After a thorough flush: closes the files of queues unused for as long as the pass
/// takes to come round (`flushConsumeQueueThoroughInterval`, 60 s), so idle queues hold
/// neither mappings nor descriptors (a million queues would exceed Linux's default
/// `vm.max_map_count` of 65,530).
fn close_idle_queues(inner: &Inner, idle: Duration) {
    let closed = inner.queues.close_idle(idle);
    if closed > 0 {
        tracing::debug!(closed, "closed the files of idle consume queues");
    }
}

fn clean_loop(inner: &Inner) {
    let interval = Duration::from_millis(inner.config.clean_resource_interval.max(10));
    crate::clean::clean_once(inner, false);
    while !stopping(inner) {
        inner.sleep(interval);
        if !stopping(inner) {
            crate::clean::clean_once(inner, false);
        }
    }
}

/// Final flush at shutdown; true when everything reached the disk.
pub(crate) fn final_flush(inner: &Inner) -> bool {
    let listener = inner.listener.read().clone();
    let _paused_by_truncation = inner.dispatch_lock.lock();
    // What the index thread left queued is older than what is still to dispatch.
    inner.index_feed.drain(&inner.index);
    let _ = inner.dispatcher.run_once(
        &inner.commit_log,
        &inner.queues,
        IndexSink::Direct(&inner.index),
        listener.as_deref(),
    );
    let log_ok = flush_commit_log(inner).is_ok();
    let queues_ok = flush_queues_and_checkpoint(inner, 1);
    log_ok && queues_ok && inner.poison.lock().is_none()
}

#[cfg(test)]
mod open_queue_tests {
    use super::open_queue_bound;

    #[test]
    fn open_queues_stay_well_under_the_descriptor_limit() {
        assert_eq!(open_queue_bound(None), 20_000);
        assert_eq!(open_queue_bound(Some(1 << 20)), 20_000);
        assert_eq!(open_queue_bound(Some(20_000)), 5_000);
        assert_eq!(open_queue_bound(Some(1_024)), 256);
        assert_eq!(open_queue_bound(Some(8)), 16);
    }
}
