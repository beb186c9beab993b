//! Every ConsumeQueue in one file (`consumequeue.summary` beside the `consumequeue`
//! directory), so that a start opens none of their files: with a million queues, reading
//! one file instead of a million directories. Two kinds:
//!
//! - A clean stop's summary: the queues exactly as they were left. Used only by a start
//!   after a clean stop.
//! - A running store's snapshot (every `consumeQueueSnapshotInterval`): each queue as far
//!   as it was flushed, taken after every message below `redispatch_from` was dispatched.
//!   A start after a crash uses it: the queues start from the snapshot (a queue's files are
//!   cut back to the snapshot's end when it is next opened) and the CommitLog is
//!   re-dispatched from `redispatch_from`, which rewrites every later entry.
//!
//! The summary is removed as it is read, so a later crash cannot find a stale one.
//!
//! Layout (StellMQ's own, little-endian): `SMQCQS02`, `redispatch_from` (i64, -1 for a
//! clean stop's summary), the queue count (u64), then per queue the topic's length (u16)
//! and bytes, the queue id (i32) and six i64 (min logical offset, max physical end, first
//! and write byte positions, the min entry's physical offset, the first file's physical
//! end), and last a CRC-32C of everything before it. `SMQCQS01` (the same without
//! `redispatch_from`) is a clean stop's summary of StellMQ before snapshots.

use std::path::{Path, PathBuf};

use stellmq_protocol::names;

use super::Closed;
use crate::error::{IoContext, StoreError};

const MAGIC: &[u8; 8] = b"SMQCQS02";
const MAGIC_V1: &[u8; 8] = b"SMQCQS01";

/// The queues of a summary, and where a start after a crash re-dispatches from (`None`:
/// a clean stop's summary, never used after a crash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub redispatch_from: Option<i64>,
    pub queues: Vec<QueueSummary>,
}

/// One queue as a clean stop left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSummary {
    pub topic: String,
    pub queue_id: i32,
    pub min_logical: i64,
    pub max_phys: i64,
    pub(super) closed: Closed,
}

/// Where the summary of the queues under `dir` is kept.
pub fn path_of(dir: &Path) -> PathBuf {
    dir.with_extension("summary")
}

pub fn encode(redispatch_from: Option<i64>, queues: &[QueueSummary]) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + queues.len() * 72);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&redispatch_from.unwrap_or(-1).to_le_bytes());
    out.extend_from_slice(&(queues.len() as u64).to_le_bytes());
    for q in queues {
        let topic = q.topic.as_bytes();
        out.extend_from_slice(&(topic.len() as u16).to_le_bytes());
        out.extend_from_slice(topic);
        out.extend_from_slice(&q.queue_id.to_le_bytes());
        for n in [
            q.min_logical,
            q.max_phys,
            q.closed.min_bytes,
            q.closed.max_bytes,
            q.closed.min_entry_phys,
            q.closed.first_file_end_phys,
        ] {
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads bytes from the front of a buffer.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn i64(&mut self) -> Option<i64> {
        self.array().map(i64::from_le_bytes)
    }
}

/// A summary; `None` for anything damaged (the caller then reads the files).
pub fn decode(bytes: &[u8]) -> Option<Summary> {
    let (body, crc) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32c::crc32c(body).to_le_bytes() != crc {
        return None;
    }
    let mut c = Cursor(body);
    let redispatch_from = match c.take(MAGIC.len())? {
        magic if magic == MAGIC => Some(c.i64()?).filter(|from| *from >= 0),
        magic if magic == MAGIC_V1 => None,
        _ => return None,
    };
    let count = u64::from_le_bytes(c.array()?);
    let mut queues = Vec::with_capacity(count.min(1 << 24) as usize);
    for _ in 0..count {
        let len = u16::from_le_bytes(c.array()?) as usize;
        let topic = std::str::from_utf8(c.take(len)?).ok()?.to_owned();
        let queue_id = i32::from_le_bytes(c.array()?);
        // Names become directories: the same rule as for a queue created by a write.
        if !names::is_safe_file_name(&topic) || queue_id < 0 {
            return None;
        }
        queues.push(QueueSummary {
            topic,
            queue_id,
            min_logical: c.i64()?,
            max_phys: c.i64()?,
            closed: Closed {
                min_bytes: c.i64()?,
                max_bytes: c.i64()?,
                min_entry_phys: c.i64()?,
                first_file_end_phys: c.i64()?,
            },
        });
    }
    c.0.is_empty().then_some(Summary {
        redispatch_from,
        queues,
    })
}

/// Writes the summary durably (a temporary file, synced, then renamed over).
pub fn write(
    path: &Path,
    redispatch_from: Option<i64>,
    queues: &[QueueSummary],
) -> Result<(), StoreError> {
    stellmq_config::write_atomically(path, &encode(redispatch_from, queues)).at(path)
}

/// Reads and removes the summary; `None` when there is none or it is damaged.
pub fn take(path: &Path) -> Option<Summary> {
    let bytes = std::fs::read(path).ok()?;
    if let Err(e) = std::fs::remove_file(path) {
        tracing::warn!(file = %path.display(), error = %e, "cannot remove the ConsumeQueue summary; reading the queues' files instead");
        return None;
    }
    let queues = decode(&bytes);
    if queues.is_none() {
        tracing::warn!(file = %path.display(), "the ConsumeQueue summary is damaged; reading the queues' files instead");
    }
    queues
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<QueueSummary> {
        (0..3)
            .map(|i| QueueSummary {
                topic: format!("T{i}"),
                queue_id: i,
                min_logical: i64::from(i),
                max_phys: 1000 + i64::from(i),
                closed: Closed {
                    min_bytes: 0,
                    max_bytes: 60,
                    min_entry_phys: 7,
                    first_file_end_phys: i64::MAX,
                },
            })
            .collect()
    }

    fn clean(queues: Vec<QueueSummary>) -> Option<Summary> {
        Some(Summary {
            redispatch_from: None,
            queues,
        })
    }

    #[test]
    fn a_snapshot_keeps_where_to_redispatch_from() {
        let bytes = encode(Some(4096), &sample());
        let summary = decode(&bytes).expect("a summary");
        assert_eq!(summary.redispatch_from, Some(4096));
        assert_eq!(summary.queues, sample());
    }

    #[test]
    fn a_summary_round_trips_and_any_damage_is_refused() {
        let bytes = encode(None, &sample());
        assert_eq!(decode(&bytes), clean(sample()));
        for at in [0, 9, 20, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 1;
            assert_eq!(decode(&bad), None, "flipped byte {at}");
        }
        assert_eq!(decode(&bytes[..bytes.len() - 5]), None, "truncated");
        let mut escaping = sample();
        escaping[1].topic = "../outside".into();
        assert_eq!(
            decode(&encode(None, &escaping)),
            None,
            "a name that leaves the store"
        );
        assert_eq!(decode(&[]), None);
    }
}
