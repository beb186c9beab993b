//! Cutting a running slave's store back to a physical offset (controller mode: a slave that
//! rejoins a new master drops what the new master never had, RocketMQ's
//! `truncateInvalidMsg` / `truncateFiles`).
//!
//! The cut pauses the dispatcher (its lock is held throughout), then under the CommitLog's
//! append lock cuts the CommitLog, drops every ConsumeQueue entry whose message ends past the
//! offset (their max offsets follow), drops the index entries at or past it, rewinds the
//! dispatcher, and lowers the checkpoint's timestamps so that a crash afterwards recovers
//! from before the cut. Readers are never blocked: a pull that read a queue's max offset
//! before the cut finds no entry past the new end and answers as for any missing offset.

use stellmq_protocol::message::MessageRecord;

use crate::error::StoreError;
use crate::MessageStore;

/// What a truncation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// The CommitLog's end before the cut.
    pub old_max: i64,
    /// Its end now (the offset asked for).
    pub new_max: i64,
}

impl MessageStore {
    /// Cuts the CommitLog, ConsumeQueues and index back to `offset` (blocking: call it from
    /// a blocking thread). Only a replica's store (`set_replica(true)`) is cut, so no local
    /// write races the cut; `offset` must lie between the log's min and max offsets. At or
    /// past the max offset nothing changes (`Ok(None)`).
    pub fn truncate_to(&self, offset: i64) -> Result<Option<Truncation>, StoreError> {
        let inner = &self.inner;
        if !inner.replica.load(std::sync::atomic::Ordering::Acquire) {
            return Err(StoreError::TruncateRefused(
                "the store accepts local writes; make it a replica first".into(),
            ));
        }
        let _dispatcher_paused = inner.dispatch_lock.lock();
        let log = &inner.commit_log;
        let old_max = log.max_offset();
        if offset >= old_max {
            return Ok(None);
        }
        if offset < log.min_offset() || offset < 0 {
            return Err(StoreError::TruncateRefused(format!(
                "offset {offset} is below the CommitLog's min offset {}",
                log.min_offset()
            )));
        }
        let resume_ts = store_time_before(self, offset);
        let _no_snapshot = inner.queues.hold_snapshots();
        log.truncate_running(offset, resume_ts)?;
        let next_base = log.segments().last().map_or(offset, |f| f.end());
        inner.allocator.discard_after(next_base);
        for cq in inner.queues.all() {
            cq.recover(offset)?;
        }
        // Entries still queued for the index thread are written first, so the cut drops them.
        inner.index_feed.drain(&inner.index);
        inner.index.truncate(offset)?;
        inner.index.set_resume_point(offset);
        inner.dispatcher.rewind(offset, resume_ts);
        inner.checkpoint.update(|c| {
            c.physic_msg_timestamp = c.physic_msg_timestamp.min(resume_ts);
            c.logics_msg_timestamp = c.logics_msg_timestamp.min(resume_ts);
            c.index_msg_timestamp = c.index_msg_timestamp.min(resume_ts);
        });
        inner.checkpoint.flush()?;
        tracing::warn!(
            event = "STORE_TRUNCATED",
            old_max,
            new_max = offset,
            dropped_bytes = old_max - offset,
            "CommitLog, consume queues and index cut back"
        );
        inner.wake_all();
        Ok(Some(Truncation {
            old_max,
            new_max: offset,
        }))
    }
}

/// A store time at or before every record from the segment holding `offset` on: its first
/// record's time minus one, so crash recovery rescans that segment; 0 when unknown.
fn store_time_before(store: &MessageStore, offset: i64) -> i64 {
    let log = &store.inner.commit_log;
    let file_size = log.file_size() as i64;
    let base = offset - offset.rem_euclid(file_size.max(1));
    log.read_record(base)
        .and_then(|bytes| MessageRecord::decode(&bytes, false).ok())
        .map_or(0, |(record, _)| (record.head.store_timestamp - 1).max(0))
}
