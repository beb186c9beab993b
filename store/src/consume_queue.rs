//! ConsumeQueues (protocol.md 6.3): per topic and queue id, 20-byte entries
//! `physical offset (8) | size (4) | tags code (8)`, 300,000 per file by default.
//! Only the dispatcher writes them; pulls read them concurrently.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use crate::error::StoreError;
use crate::mapped_file::PendingDirSyncs;
use crate::segments::SegmentQueue;

pub const ENTRY_SIZE: usize = 20;

/// A blank entry fills positions below a queue's first real entry (size = i32::MAX).
const BLANK_SIZE: i32 = i32::MAX;

/// One decoded entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqEntry {
    pub phys_offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

impl CqEntry {
    /// Decodes the 20 bytes at the start of `raw` (shorter input reads as zeros).
    pub fn decode(raw: &[u8]) -> Self {
        let mut padded = [0u8; ENTRY_SIZE];
        for (to, from) in padded.iter_mut().zip(raw) {
            *to = *from;
        }
        let raw = &padded;
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&raw[0..8]);
        let mut size = [0u8; 4];
        size.copy_from_slice(&raw[8..12]);
        let mut tags = [0u8; 8];
        tags.copy_from_slice(&raw[12..20]);
        Self {
            phys_offset: i64::from_be_bytes(offset),
            size: i32::from_be_bytes(size),
            tags_code: i64::from_be_bytes(tags),
        }
    }

    fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut out = [0u8; ENTRY_SIZE];
        out[0..8].copy_from_slice(&self.phys_offset.to_be_bytes());
        out[8..12].copy_from_slice(&self.size.to_be_bytes());
        out[12..20].copy_from_slice(&self.tags_code.to_be_bytes());
        out
    }

    pub fn is_blank(&self) -> bool {
        self.size == BLANK_SIZE && self.phys_offset == 0
    }

    /// Written entries have a positive size; zeros mean never written.
    pub fn is_valid(&self) -> bool {
        self.phys_offset >= 0 && self.size > 0
    }
}

pub struct ConsumeQueue {
    topic: String,
    queue_id: i32,
    dir: PathBuf,
    file_size: usize,
    /// Where new files note the directories to sync (the store's, shared).
    dir_syncs: Arc<PendingDirSyncs>,
    /// Queues of the store with open files (this one counts while its are).
    open_queues: Arc<AtomicUsize>,
    /// The queue's files while they are open; an idle queue's are closed (unmapped, their
    /// descriptors released) and reopened at the next use ([`ConsumeQueue::close_if_idle`]).
    state: RwLock<State>,
    /// Smallest logical offset whose message is still in the CommitLog.
    min_logical: AtomicI64,
    /// Physical end (offset + size) of the last entry written.
    max_phys: AtomicI64,
    /// When the files were last used ([`monotonic_ms`]).
    last_used: AtomicI64,
    /// Set for a queue a crash start took from a running store's snapshot: its files may
    /// hold entries written after the snapshot, cut when they are first opened.
    cut_on_reopen: AtomicBool,
}

enum State {
    Open(Arc<SegmentQueue>),
    Closed(Closed),
}

/// What a closed queue answers without its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Closed {
    /// Byte offsets of the first file's start and of the write position.
    min_bytes: i64,
    max_bytes: i64,
    /// Physical offset of the entry at the min offset (`i64::MAX` when there is none):
    /// retention that stays at or below it does not move the min offset.
    min_entry_phys: i64,
    /// Physical end of the first file's last entry when there are later files (else
    /// `i64::MAX`): retention below it deletes no file.
    first_file_end_phys: i64,
}

impl Closed {
    /// Whether retention up to `commit_log_min` leaves the queue as it is.
    fn unchanged_by_retention(&self, commit_log_min: i64) -> bool {
        commit_log_min <= self.min_entry_phys && commit_log_min < self.first_file_end_phys
    }
}

/// Milliseconds on a process-wide monotonic clock.
fn monotonic_ms() -> i64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as i64
}

/// [`monotonic_ms`] as of the flush service's last pass (about every second): what a use
/// notes, so appends and reads read no clock and write the use only once per pass.
static COARSE_NOW_MS: AtomicI64 = AtomicI64::new(0);

impl ConsumeQueue {
    fn open(
        dir: &Path,
        topic: &str,
        queue_id: i32,
        file_size: usize,
        dir_syncs: Arc<PendingDirSyncs>,
        open_queues: Arc<AtomicUsize>,
    ) -> Result<Self, StoreError> {
        let segments = SegmentQueue::load_sparse(dir, file_size, dir_syncs.clone())?;
        open_queues.fetch_add(1, Ordering::AcqRel);
        Ok(Self {
            open_queues,
            topic: topic.to_owned(),
            queue_id,
            dir: dir.to_owned(),
            file_size,
            dir_syncs,
            min_logical: AtomicI64::new(segments.min_offset() / ENTRY_SIZE as i64),
            max_phys: AtomicI64::new(0),
            state: RwLock::new(State::Open(Arc::new(segments))),
            last_used: AtomicI64::new(monotonic_ms()),
            cut_on_reopen: AtomicBool::new(false),
        })
    }

    /// A queue as a clean stop summarized it: closed, its files untouched until used.
    fn from_summary(
        summary: QueueSummary,
        from_snapshot: bool,
        dir: &Path,
        file_size: usize,
        dir_syncs: Arc<PendingDirSyncs>,
        open_queues: Arc<AtomicUsize>,
    ) -> Self {
        Self {
            open_queues,
            dir: dir.join(&summary.topic).join(summary.queue_id.to_string()),
            topic: summary.topic,
            queue_id: summary.queue_id,
            file_size,
            dir_syncs,
            min_logical: AtomicI64::new(summary.min_logical),
            max_phys: AtomicI64::new(summary.max_phys),
            state: RwLock::new(State::Closed(summary.closed)),
            last_used: AtomicI64::new(monotonic_ms()),
            cut_on_reopen: AtomicBool::new(from_snapshot),
        }
    }

    /// The queue as the next start needs it, its files closed first; `None` when they
    /// cannot close (in use, or not flushed).
    fn summary(&self) -> Option<QueueSummary> {
        self.close_if_idle(Duration::ZERO);
        let State::Closed(closed) = &*self.state.read() else {
            return None;
        };
        Some(QueueSummary {
            topic: self.topic.clone(),
            queue_id: self.queue_id,
            min_logical: self.min_logical.load(Ordering::Acquire),
            max_phys: self.max_phys_offset(),
            closed: *closed,
        })
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }

    /// The queue's files, reopened if it was closed; notes the use.
    fn segments(&self) -> Result<Arc<SegmentQueue>, StoreError> {
        let now = COARSE_NOW_MS.load(Ordering::Relaxed);
        if now > self.last_used.load(Ordering::Relaxed) {
            self.last_used.store(now, Ordering::Relaxed);
        }
        if let State::Open(segments) = &*self.state.read() {
            return Ok(segments.clone());
        }
        let mut state = self.state.write();
        let closed = match &*state {
            State::Open(segments) => return Ok(segments.clone()),
            State::Closed(closed) => *closed,
        };
        let segments = Arc::new(SegmentQueue::load_sparse(
            &self.dir,
            self.file_size,
            self.dir_syncs.clone(),
        )?);
        if self.cut_on_reopen.swap(false, Ordering::AcqRel) {
            // Entries written after the snapshot (the crash start re-dispatches them) go,
            // later files too, so the queue continues exactly where the snapshot left it.
            segments.truncate(closed.max_bytes)?;
        } else if let Some(last) = segments.last() {
            last.set_positions((closed.max_bytes - last.base()).max(0) as usize);
        }
        *state = State::Open(segments.clone());
        self.open_queues.fetch_add(1, Ordering::AcqRel);
        Ok(segments)
    }

    /// The open files, without reopening closed ones.
    fn open_segments(&self) -> Option<Arc<SegmentQueue>> {
        match &*self.state.read() {
            State::Open(segments) => Some(segments.clone()),
            State::Closed(_) => None,
        }
    }

    /// [`Self::segments`] for readers, which answer "nothing" when the files cannot be
    /// reopened.
    fn segments_to_read(&self) -> Option<Arc<SegmentQueue>> {
        self.segments()
            .inspect_err(|e| tracing::warn!(topic = %self.topic, queue = self.queue_id, error = %e, "cannot reopen a consume queue"))
            .ok()
    }

    /// The write position and first file's start, in bytes.
    fn bounds_bytes(&self) -> (i64, i64) {
        match &*self.state.read() {
            State::Open(segments) => (segments.min_offset(), segments.max_offset()),
            State::Closed(closed) => (closed.min_bytes, closed.max_bytes),
        }
    }

    /// Whether its files are open and were not used for `idle`.
    fn is_idle(&self, idle: Duration) -> bool {
        let unused_for = monotonic_ms() - self.last_used.load(Ordering::Relaxed);
        unused_for >= idle.as_millis() as i64 && self.is_open()
    }

    /// Whether it has files (open ones).
    fn has_files(&self) -> bool {
        self.open_segments().is_some_and(|s| !s.is_empty())
    }

    /// Whether its files are open (mapped).
    pub fn is_open(&self) -> bool {
        matches!(&*self.state.read(), State::Open(_))
    }

    /// Closes the files when the queue has not been used for `idle`, nobody uses it now
    /// and everything in it is flushed; true if it closed them. Never waits for a user.
    pub fn close_if_idle(&self, idle: Duration) -> bool {
        if !self.is_idle(idle) {
            return false;
        }
        let Some(mut state) = self.state.try_write() else {
            return false;
        };
        let State::Open(segments) = &*state else {
            return false;
        };
        // Users clone the files under the read lock: one reference left (ours) under the
        // write lock means no append or read is under way and none can start.
        if Arc::strong_count(segments) > 1 || segments.unflushed() > 0 {
            return false;
        }
        *state = State::Closed(self.closed_state(segments, segments.max_offset()));
        self.open_queues.fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// What the queue answers without its files, as of write position `max_bytes`.
    fn closed_state(&self, segments: &SegmentQueue, max_bytes: i64) -> Closed {
        let min_logical = self.min_logical_in(segments);
        let min_entry_phys =
            if min_logical * (ENTRY_SIZE as i64) < max_bytes {
                entry_in(segments, min_logical).map_or(0, |e| {
                    if e.is_blank() {
                        0
                    } else {
                        e.phys_offset
                    }
                })
            } else {
                i64::MAX
            };
        let files = segments.files();
        let first_file_end_phys = files
            .first()
            .filter(|_| files.len() > 1)
            .and_then(|first| {
                let last = first.wrote_position().checked_sub(ENTRY_SIZE)?;
                first.read(last, ENTRY_SIZE).map(CqEntry::decode)
            })
            .map_or(i64::MAX, |e| e.phys_offset + i64::from(e.size));
        Closed {
            min_bytes: segments.min_offset(),
            max_bytes,
            min_entry_phys,
            first_file_end_phys,
        }
    }

    /// The queue as far as it is flushed, for a running store's snapshot (see
    /// [`summary`]): a closed queue as it is, an open one up to its flushed position.
    fn snapshot(&self) -> QueueSummary {
        let state = self.state.read();
        let (closed, max_phys) = match &*state {
            State::Closed(closed) => (*closed, self.max_phys_offset()),
            State::Open(segments) => {
                let flushed = segments.flushed_offset().min(segments.max_offset());
                let closed = self.closed_state(segments, flushed);
                (closed, last_phys_end(segments, flushed / ENTRY_SIZE as i64))
            }
        };
        QueueSummary {
            topic: self.topic.clone(),
            queue_id: self.queue_id,
            min_logical: self.min_logical.load(Ordering::Acquire),
            max_phys,
            closed,
        }
    }

    /// The next logical offset to be written.
    pub fn max_offset(&self) -> i64 {
        self.bounds_bytes().1 / ENTRY_SIZE as i64
    }

    pub fn min_offset(&self) -> i64 {
        self.min_logical
            .load(Ordering::Acquire)
            .max(self.bounds_bytes().0 / ENTRY_SIZE as i64)
    }

    fn min_logical_in(&self, segments: &SegmentQueue) -> i64 {
        self.min_logical
            .load(Ordering::Acquire)
            .max(segments.min_offset() / ENTRY_SIZE as i64)
    }

    /// Physical end of the last entry (0 if none).
    pub fn max_phys_offset(&self) -> i64 {
        self.max_phys.load(Ordering::Acquire)
    }

    /// Writes the entry for `logical`; entries already present are skipped (re-dispatch after
    /// recovery), a gap is filled with blanks so positions stay `offset * 20`.
    pub fn put(
        &self,
        logical: i64,
        phys_offset: i64,
        size: i32,
        tags_code: i64,
    ) -> Result<(), StoreError> {
        let segments = self.segments()?;
        let current = segments.max_offset() / ENTRY_SIZE as i64;
        if logical < current {
            return Ok(());
        }
        if current == 0 && segments.is_empty() && logical > 0 {
            // First file created for a non-zero offset: start at its file boundary.
            let per_file = (segments.file_size() / ENTRY_SIZE) as i64;
            let base = (logical / per_file) * per_file * ENTRY_SIZE as i64;
            segments.create_next(base)?;
            self.min_logical.store(logical, Ordering::Release);
        }
        let mut next = segments.max_offset() / ENTRY_SIZE as i64;
        if logical > next {
            tracing::warn!(topic = %self.topic, queue = self.queue_id, expected = next, got = logical, "consume queue gap filled with blanks");
        }
        while next < logical {
            append_entry(
                &segments,
                CqEntry {
                    phys_offset: 0,
                    size: BLANK_SIZE,
                    tags_code: 0,
                },
            )?;
            next += 1;
        }
        append_entry(
            &segments,
            CqEntry {
                phys_offset,
                size,
                tags_code,
            },
        )?;
        self.max_phys
            .store(phys_offset + i64::from(size), Ordering::Release);
        Ok(())
    }

    /// The entry at `logical`, if written.
    pub fn entry(&self, logical: i64) -> Option<CqEntry> {
        entry_in(&*self.segments_to_read()?, logical)
    }

    /// Hands `visit` the entries from `logical` on, up to `max_bytes / 20` of them and never
    /// past the end of its file, decoded as they are read (a pull scans up to 16,000 bytes
    /// for a filter but mostly stops after 32 entries). `None` when the file holding
    /// `logical` is gone.
    pub fn visit_entries_from<R>(
        &self,
        logical: i64,
        max_bytes: usize,
        visit: impl FnOnce(&mut dyn Iterator<Item = CqEntry>) -> R,
    ) -> Option<R> {
        let pos = logical.checked_mul(ENTRY_SIZE as i64)?;
        let file = self.segments_to_read()?.find(pos)?;
        let start = (pos - file.base()) as usize;
        let available = file.wrote_position().saturating_sub(start);
        let len = (available.min(max_bytes) / ENTRY_SIZE) * ENTRY_SIZE;
        let raw = file.read(start, len)?;
        Some(visit(
            &mut raw.chunks_exact(ENTRY_SIZE).map(CqEntry::decode),
        ))
    }

    /// Start of the file after the one holding `logical` (for OFFSET_FOUND_NULL).
    pub fn roll_next_file(&self, logical: i64) -> i64 {
        let per_file = (self.file_size / ENTRY_SIZE) as i64;
        logical + per_file - logical % per_file
    }

    /// Recovery: finds the written end by scanning the last files, then drops every entry
    /// at the end that points beyond the CommitLog's valid end (however far recovery cut
    /// the log back), so the queue and the log agree. A closed queue whose entries all end
    /// within the log stays closed.
    pub fn recover(&self, commit_log_end: i64) -> Result<(), StoreError> {
        if !self.is_open() && self.max_phys_offset() <= commit_log_end {
            return Ok(());
        }
        let segments = self.segments()?;
        let files = segments.files();
        let start = files.len().saturating_sub(3);
        let mut end = files.last().map_or(0, |f| f.end());
        for file in files.iter().skip(start) {
            let mut pos = 0;
            while pos + ENTRY_SIZE <= file.size() {
                let raw = file
                    .read_unpublished(pos, ENTRY_SIZE)
                    .unwrap_or(&[0; ENTRY_SIZE]);
                if !CqEntry::decode(raw).is_valid() {
                    break;
                }
                pos += ENTRY_SIZE;
            }
            if pos < file.size() {
                end = file.base() + pos as i64;
                break;
            }
        }
        let first = files.first().map_or(0, |f| f.base());
        while end > first {
            let Some(entry) = raw_entry_at(&segments, end - ENTRY_SIZE as i64) else {
                break;
            };
            if !entry.is_blank() && entry.phys_offset + i64::from(entry.size) <= commit_log_end {
                break;
            }
            end -= ENTRY_SIZE as i64;
        }
        segments.truncate(end)?;
        let max = segments.max_offset() / ENTRY_SIZE as i64;
        self.max_phys
            .store(last_phys_end(&segments, max), Ordering::Release);
        Ok(())
    }

    /// Moves the min offset to the first entry whose message is still in the CommitLog
    /// (a closed queue whose first entry is still there stays closed).
    pub fn correct_min_offset(&self, commit_log_min: i64) {
        if let State::Closed(closed) = &*self.state.read() {
            if closed.unchanged_by_retention(commit_log_min) {
                return;
            }
        }
        if let Some(segments) = self.segments_to_read() {
            self.correct_min_in(&segments, commit_log_min);
        }
    }

    fn correct_min_in(&self, segments: &SegmentQueue, commit_log_min: i64) {
        let mut logical = self.min_logical_in(segments);
        let max = segments.max_offset() / ENTRY_SIZE as i64;
        while logical < max {
            match entry_in(segments, logical) {
                Some(e) if e.is_blank() || e.phys_offset < commit_log_min => logical += 1,
                _ => break,
            }
        }
        self.min_logical.store(logical, Ordering::Release);
    }

    /// Deletes files whose every entry points below `commit_log_min` (never the last file).
    /// A closed queue that retention cannot change stays closed.
    pub fn delete_expired(&self, commit_log_min: i64) -> usize {
        if let State::Closed(closed) = &*self.state.read() {
            if closed.unchanged_by_retention(commit_log_min) {
                return 0;
            }
        }
        let Some(segments) = self.segments_to_read() else {
            return 0;
        };
        let removed = segments.remove_front(usize::MAX, |file| {
            let last = file.wrote_position();
            if last < ENTRY_SIZE {
                return false;
            }
            file.read(last - ENTRY_SIZE, ENTRY_SIZE)
                .map(CqEntry::decode)
                .is_some_and(|e| e.phys_offset + i64::from(e.size) <= commit_log_min)
        });
        for f in &removed {
            if let Err(e) = f.destroy() {
                tracing::warn!(file = %f.path().display(), error = %e, "cannot delete consume queue file");
            }
        }
        self.correct_min_in(&segments, commit_log_min);
        removed.len()
    }

    /// Flushes what is written (nothing to do for a closed queue).
    pub fn flush(&self) -> std::io::Result<()> {
        match self.open_segments() {
            Some(segments) => segments.flush().map(|_| ()),
            None => Ok(()),
        }
    }

    pub fn unflushed(&self) -> usize {
        self.open_segments().map_or(0, |s| s.unflushed())
    }

    fn destroy(&self) -> Result<(), StoreError> {
        self.segments()?.destroy()
    }
}

impl Drop for ConsumeQueue {
    fn drop(&mut self) {
        if self.is_open() {
            self.open_queues.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn append_entry(segments: &SegmentQueue, entry: CqEntry) -> Result<(), StoreError> {
    let file = match segments.last() {
        Some(f) if !f.is_full() => f,
        Some(f) => segments.create_next(f.end())?,
        None => segments.create_next(0)?,
    };
    file.try_append_bytes(&entry.encode())?
        .ok_or_else(|| StoreError::Corrupt {
            path: file.path().to_owned(),
            reason: "consume queue file not aligned to 20-byte entries".into(),
        })?;
    Ok(())
}

/// The entry at `logical` in `segments`, if written.
fn entry_in(segments: &SegmentQueue, logical: i64) -> Option<CqEntry> {
    let pos = logical.checked_mul(ENTRY_SIZE as i64)?;
    let file = segments.find(pos)?;
    let raw = file.read((pos - file.base()) as usize, ENTRY_SIZE)?;
    Some(CqEntry::decode(raw))
}

/// The entry at a byte position, written or not (recovery, before serving).
fn raw_entry_at(segments: &SegmentQueue, pos: i64) -> Option<CqEntry> {
    let file = segments.find(pos)?;
    let raw = file.read_unpublished((pos - file.base()) as usize, ENTRY_SIZE)?;
    Some(CqEntry::decode(raw))
}

pub(crate) mod summary;
mod table;
use summary::QueueSummary;

/// Physical end of the last real (not blank) entry below logical `max`, looking back at
/// most 4,096 entries (0 if none).
fn last_phys_end(segments: &SegmentQueue, max: i64) -> i64 {
    (0..max)
        .rev()
        .take(4096)
        .filter_map(|o| entry_in(segments, o))
        .find(|e| !e.is_blank())
        .map_or(0, |e| e.phys_offset + i64::from(e.size))
}
pub use table::ConsumeQueueStore;

#[cfg(test)]
mod tests;
