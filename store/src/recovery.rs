//! Recovery of the CommitLog at startup (protocol.md 6.2).
//!
//! After a clean stop (no `abort` file) the last three segments are validated; after a
//! crash, validation starts at the newest segment whose first message is older than the
//! checkpoint (minus 3 s of slack). Every record is checked before any of its fields is
//! used (magic, a length that fits the segment, its own physical offset, then a full decode
//! with the body CRC when configured); the first invalid one marks the valid end.
//!
//! What lies beyond the valid end is not thrown away: the rest of that segment (up to its
//! zero tail) and every later segment are moved to `<commitlog>/dropped-<ms>/` for an
//! operator to inspect, the segment is zeroed from the valid end, and the outcome says how
//! much was dropped. The caller then truncates ConsumeQueues and the index to the same end.

use std::path::{Path, PathBuf};
use std::time::Instant;

use bytes::Bytes;
use stellmq_protocol::error::RecordError;
use stellmq_protocol::message::record::{
    self, BLANK_MAGIC, MAGIC_V1, MAGIC_V2, PHYSICAL_OFFSET_POS,
};
use stellmq_protocol::message::MessageRecord;

use crate::commitlog::{now_ms, CommitLog};
use crate::error::{IoContext, StoreError};
use crate::mapped_file::{MappedFile, PAGE_SIZE};

/// The smallest possible record: IPv4 hosts, empty body, topic and properties.
pub const MIN_RECORD_LEN: usize = 91;

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryOutcome {
    /// Offset just past the last valid record.
    pub valid_end: i64,
    /// Where validation started (re-dispatch must not start later than this after a crash).
    pub scan_start: i64,
    /// Whether non-zero bytes (a torn or corrupt tail) followed the valid end.
    pub torn_tail: bool,
    /// Why validation stopped where it did, when it stopped before the written end.
    pub stopped_by: Option<Damage>,
    /// Non-zero bytes after the valid end in its segment, plus whole later segments.
    pub dropped_bytes: u64,
    pub dropped_segments: usize,
    /// Where the dropped bytes were saved.
    pub dropped_to: Option<PathBuf>,
}

/// What is wrong with the bytes where recovery stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Damage {
    #[error("end-of-file blank of {total} bytes does not reach the segment end ({left} left)")]
    ShortBlank { total: i32, left: usize },
    #[error("bad magic {0:#010x}")]
    BadMagic(u32),
    #[error("record size {total} outside {MIN_RECORD_LEN}..={left}")]
    BadSize { total: i32, left: usize },
    #[error("record says it lives at {stored}, found at {expected}")]
    WrongOffset { stored: i64, expected: i64 },
    #[error("undecodable record: {0}")]
    Undecodable(#[source] RecordError),
}

/// The result of validating one segment's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentScan {
    /// The segment ends with an end-of-file blank.
    Complete,
    /// Valid data ends at this position; `reason` says why the next bytes are not a record
    /// (`None` for zeros: simply nothing written there).
    EndsAt { pos: usize, reason: Option<Damage> },
}

/// Validates the records of one segment held in `bytes`, whose first byte is at global
/// offset `base`. Pure: any byte sequence gives an answer, never a panic.
pub fn scan_segment_bytes(bytes: &[u8], base: i64, check_crc: bool) -> SegmentScan {
    let mut pos = 0usize;
    loop {
        match check_record_at(bytes, pos, base, check_crc) {
            Ok(Next::Record(total)) => pos += total,
            Ok(Next::Blank) => return SegmentScan::Complete,
            Ok(Next::Nothing) => return SegmentScan::EndsAt { pos, reason: None },
            Err(reason) => {
                return SegmentScan::EndsAt {
                    pos,
                    reason: Some(reason),
                }
            }
        }
    }
}

/// What lies at a position of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// A valid record of this many bytes.
    Record(usize),
    /// The end-of-file blank, reaching the segment end.
    Blank,
    /// Nothing written (zeros, or too few bytes left for a header).
    Nothing,
}

/// Checks the record at `pos` of a segment starting at `base`: every field is checked before
/// it is used (what recovery and `storeinspect` read segments with).
pub fn check_record_at(
    bytes: &[u8],
    pos: usize,
    base: i64,
    check_crc: bool,
) -> Result<Next, Damage> {
    let rest = bytes.get(pos..).unwrap_or(&[]);
    let Ok((total, magic)) = record::peek(rest) else {
        return Ok(Next::Nothing);
    };
    if total == 0 && magic == 0 {
        return Ok(Next::Nothing);
    }
    if magic == BLANK_MAGIC {
        if usize::try_from(total).ok() == Some(rest.len()) && total >= 8 {
            return Ok(Next::Blank);
        }
        return Err(Damage::ShortBlank {
            total,
            left: rest.len(),
        });
    }
    if magic != MAGIC_V1 && magic != MAGIC_V2 {
        return Err(Damage::BadMagic(magic));
    }
    let bad_size = Damage::BadSize {
        total,
        left: rest.len(),
    };
    let total = usize::try_from(total)
        .ok()
        .filter(|t| *t >= MIN_RECORD_LEN)
        .ok_or(bad_size.clone())?;
    let raw = rest.get(..total).ok_or(bad_size)?;
    let expected = base + pos as i64;
    let stored = raw
        .get(PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8)
        .and_then(|b| b.try_into().ok())
        .map(i64::from_be_bytes)
        .ok_or(Damage::BadSize {
            total: total as i32,
            left: rest.len(),
        })?;
    if stored != expected {
        return Err(Damage::WrongOffset { stored, expected });
    }
    MessageRecord::decode(&Bytes::copy_from_slice(raw), check_crc).map_err(Damage::Undecodable)?;
    Ok(Next::Record(total))
}

fn scan_segment(file: &MappedFile, check_crc: bool) -> SegmentScan {
    match file.read_unpublished(0, file.size()) {
        Some(bytes) => scan_segment_bytes(bytes, file.base(), check_crc),
        None => SegmentScan::EndsAt {
            pos: 0,
            reason: Some(Damage::BadSize {
                total: 0,
                left: file.size(),
            }),
        },
    }
}

/// Store timestamp of a segment's first record, if it has one.
fn first_store_timestamp(file: &MappedFile) -> Option<i64> {
    let bytes = file.read_unpublished(0, file.size())?;
    match check_record_at(bytes, 0, file.base(), false) {
        Ok(Next::Record(total)) => {
            MessageRecord::decode(&Bytes::copy_from_slice(bytes.get(..total)?), false)
                .ok()
                .map(|(r, _)| r.head.store_timestamp)
        }
        _ => None,
    }
}

/// End of the non-zero bytes after `pos`: the first all-zero page (what truncation zeroes).
fn non_zero_end(bytes: &[u8], pos: usize) -> usize {
    let mut cursor = pos;
    while let Some(rest) = bytes.get(cursor..).filter(|rest| !rest.is_empty()) {
        let page_left = PAGE_SIZE - cursor % PAGE_SIZE;
        let page = rest.get(..page_left).unwrap_or(rest);
        if page.iter().all(|b| *b == 0) {
            break;
        }
        cursor += page.len();
    }
    cursor
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
    let mut outcome = RecoveryOutcome {
        valid_end: 0,
        scan_start: 0,
        torn_tail: false,
        stopped_by: None,
        dropped_bytes: 0,
        dropped_segments: 0,
        dropped_to: None,
    };
    if files.is_empty() {
        return Ok(outcome);
    }
    let start = if crashed {
        files
            .iter()
            .rposition(|f| first_store_timestamp(f).is_some_and(|ts| ts <= checkpoint_min - 3_000))
            .unwrap_or(0)
    } else {
        files.len().saturating_sub(3)
    };
    outcome.scan_start = files.get(start).map_or(0, |f| f.base());
    outcome.valid_end = files.last().map_or(0, |f| f.end());
    let mut cut = None;
    for (i, file) in files.iter().enumerate().skip(start) {
        if let SegmentScan::EndsAt { pos, reason } = scan_segment(file, check_crc) {
            cut = Some((i, pos, reason));
            break;
        }
    }
    if let Some((file, later, pos, reason)) = cut.and_then(|(i, pos, reason)| {
        let (file, later) = files.get(i..)?.split_first()?;
        Some((file, later, pos, reason))
    }) {
        outcome.valid_end = file.base() + pos as i64;
        let bytes = file.read_unpublished(0, file.size()).unwrap_or(&[]);
        let tail_end = non_zero_end(bytes, pos);
        outcome.torn_tail = tail_end > pos;
        outcome.dropped_bytes = (tail_end - pos) as u64;
        outcome.dropped_segments = later.len();
        outcome.dropped_bytes += later.iter().map(|f| f.size() as u64).sum::<u64>();
        outcome.stopped_by = reason.filter(|_| outcome.dropped_bytes > 0);
        if outcome.dropped_bytes > 0 {
            let tail = bytes.get(pos..tail_end).unwrap_or_default();
            outcome.dropped_to = save_dropped(log.segments().dir(), file, pos, tail, later);
        }
    }
    log.truncate(outcome.valid_end)?;
    if outcome.dropped_bytes > 0 {
        tracing::warn!(
            event = "COMMITLOG_TRUNCATED",
            valid_end = outcome.valid_end,
            reason = %outcome.stopped_by.as_ref().map_or("torn write".to_owned(), ToString::to_string),
            dropped_bytes = outcome.dropped_bytes,
            dropped_segments = outcome.dropped_segments,
            saved_to = %outcome.dropped_to.as_deref().map_or("(not saved)".into(), |p| p.display().to_string()),
            "CommitLog data after the valid end was dropped"
        );
    }
    tracing::info!(
        event = "COMMITLOG_RECOVERED",
        crashed,
        valid_end = outcome.valid_end,
        scan_start = outcome.scan_start,
        torn_tail = outcome.torn_tail,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "CommitLog recovered"
    );
    Ok(outcome)
}

/// Saves what recovery drops: the tail of the segment where validation stopped and every
/// later segment (moved, not copied). Failure to save is logged, never fatal: recovery must
/// be able to start the store on a full disk.
fn save_dropped(
    dir: &Path,
    file: &MappedFile,
    pos: usize,
    tail: &[u8],
    later: &[std::sync::Arc<MappedFile>],
) -> Option<PathBuf> {
    let target = dir.join(format!("dropped-{}", now_ms()));
    let saved = (|| -> Result<(), StoreError> {
        std::fs::create_dir_all(&target).at(&target)?;
        if !tail.is_empty() {
            let name = file
                .path()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let path = target.join(format!("{name}.from-{pos}"));
            std::fs::write(&path, tail).at(&path)?;
        }
        for f in later {
            if let Some(name) = f.path().file_name() {
                let to = target.join(name);
                std::fs::rename(f.path(), &to).at(f.path())?;
            }
        }
        Ok(())
    })();
    match saved {
        Ok(()) => Some(target),
        Err(e) => {
            tracing::error!(error = %e, "cannot save the dropped CommitLog data; it is discarded");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arbitrary_bytes_never_panic_and_stop_at_the_first_bad_record() {
        let mut bytes = vec![0u8; 4096];
        assert_eq!(
            scan_segment_bytes(&bytes, 0, true),
            SegmentScan::EndsAt {
                pos: 0,
                reason: None
            }
        );
        // Valid magic with every short TOTALSIZE.
        for total in 1..(MIN_RECORD_LEN as i32) {
            bytes[..4].copy_from_slice(&total.to_be_bytes());
            bytes[4..8].copy_from_slice(&MAGIC_V1.to_be_bytes());
            match scan_segment_bytes(&bytes, 0, true) {
                SegmentScan::EndsAt {
                    pos: 0,
                    reason: Some(Damage::BadSize { .. }),
                } => {}
                other => panic!("{total}: {other:?}"),
            }
        }
        for total in [i32::MIN, -1, 4097, i32::MAX] {
            bytes[..4].copy_from_slice(&total.to_be_bytes());
            assert!(matches!(
                scan_segment_bytes(&bytes, 0, true),
                SegmentScan::EndsAt {
                    pos: 0,
                    reason: Some(_)
                }
            ));
        }
        // A blank must reach the end.
        bytes[..4].copy_from_slice(&4096i32.to_be_bytes());
        bytes[4..8].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
        assert_eq!(scan_segment_bytes(&bytes, 0, true), SegmentScan::Complete);
        bytes[..4].copy_from_slice(&100i32.to_be_bytes());
        assert!(matches!(
            scan_segment_bytes(&bytes, 0, true),
            SegmentScan::EndsAt {
                pos: 0,
                reason: Some(_)
            }
        ));
        // Short buffers.
        for len in 0..12 {
            let _ = scan_segment_bytes(&bytes[..len], 0, true);
        }
    }
}
