//! Recovery of the CommitLog at startup (spec 6.2).
//!
//! After a clean stop (no `abort` file) the last three segments are validated; after a
//! crash, validation starts at the newest segment whose first message is older than the
//! checkpoint (minus 3 s of slack). Every record is checked (magic, length, its own physical
//! offset, CRC when configured); the first invalid one marks the valid end, the torn tail
//! after it is zeroed and later segments are deleted.

use std::time::Instant;

use bytes::Bytes;
use stellmq_remoting::protocol::message::record::{
    self, BLANK_MAGIC, MAGIC_V1, MAGIC_V2, PHYSICAL_OFFSET_POS,
};
use stellmq_remoting::protocol::message::MessageRecord;

use crate::commitlog::CommitLog;
use crate::error::StoreError;
use crate::mapped_file::MappedFile;

/// What recovery found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryOutcome {
    /// Offset just past the last valid record.
    pub valid_end: i64,
    /// Where validation started (re-dispatch must not start later than this after a crash).
    pub scan_start: i64,
    /// Whether non-zero bytes (a torn or corrupt tail) followed the valid end.
    pub torn_tail: bool,
}

enum Scan {
    /// The segment ended with an end-of-file blank.
    Complete,
    /// Data ends at this position of the segment.
    EndsAt(usize),
}

/// Validates one segment from its start.
fn scan_segment(file: &MappedFile, check_crc: bool) -> Scan {
    let mut pos = 0usize;
    loop {
        let Some(head) = file.read_unpublished(pos, 8) else {
            return Scan::EndsAt(pos);
        };
        let Ok((total, magic)) = record::peek(head) else {
            return Scan::EndsAt(pos);
        };
        if magic == BLANK_MAGIC && total > 0 && pos + total as usize == file.size() {
            return Scan::Complete;
        }
        if (magic != MAGIC_V1 && magic != MAGIC_V2) || total <= 0 {
            return Scan::EndsAt(pos);
        }
        let total = total as usize;
        let Some(raw) = file.read_unpublished(pos, total) else {
            return Scan::EndsAt(pos);
        };
        let mut phys = [0u8; 8];
        phys.copy_from_slice(&raw[PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8]);
        if i64::from_be_bytes(phys) != file.base() + pos as i64 {
            return Scan::EndsAt(pos);
        }
        if MessageRecord::decode(&Bytes::copy_from_slice(raw), check_crc).is_err() {
            return Scan::EndsAt(pos);
        }
        pos += total;
    }
}

/// Store timestamp of a segment's first record, if it has one.
fn first_store_timestamp(file: &MappedFile) -> Option<i64> {
    let head = file.read_unpublished(0, 8)?;
    let (total, magic) = record::peek(head).ok()?;
    if (magic != MAGIC_V1 && magic != MAGIC_V2) || total <= 0 {
        return None;
    }
    let raw = file.read_unpublished(0, total as usize)?;
    MessageRecord::decode(&Bytes::copy_from_slice(raw), false)
        .ok()
        .map(|(r, _)| r.head.store_timestamp)
}

/// Recovers the CommitLog; `checkpoint_min` is used after a crash.
pub fn recover_commit_log(
    log: &CommitLog,
    crashed: bool,
    checkpoint_min: i64,
    check_crc: bool,
) -> Result<RecoveryOutcome, StoreError> {
    let started = Instant::now();
    let files = log.segments().files();
    if files.is_empty() {
        return Ok(RecoveryOutcome {
            valid_end: 0,
            scan_start: 0,
            torn_tail: false,
        });
    }
    let start = if crashed {
        files
            .iter()
            .rposition(|f| first_store_timestamp(f).is_some_and(|ts| ts <= checkpoint_min - 3_000))
            .unwrap_or(0)
    } else {
        files.len().saturating_sub(3)
    };
    let mut valid_end = files.last().map_or(0, |f| f.end());
    let mut torn_tail = false;
    for file in &files[start..] {
        match scan_segment(file, check_crc) {
            Scan::Complete => continue,
            Scan::EndsAt(pos) => {
                valid_end = file.base() + pos as i64;
                torn_tail = file
                    .read_unpublished(pos, 8.min(file.size() - pos))
                    .is_some_and(|b| b.iter().any(|x| *x != 0));
                break;
            }
        }
    }
    log.truncate(valid_end)?;
    let outcome = RecoveryOutcome {
        valid_end,
        scan_start: files[start].base(),
        torn_tail,
    };
    tracing::info!(
        event = "COMMITLOG_RECOVERED",
        crashed,
        valid_end,
        scan_start = outcome.scan_start,
        torn_tail,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "CommitLog recovered"
    );
    Ok(outcome)
}
