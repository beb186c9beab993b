//! ConsumeQueues (protocol.md 6.3): per topic and queue id, 20-byte entries
//! `physical offset (8) | size (4) | tags code (8)`, 300,000 per file by default.
//! Only the dispatcher writes them; pulls read them concurrently.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use stellmq_protocol::names;

use crate::error::{IoContext, StoreError};
use crate::mapped_file::{create_dir_all_syncing, DirSync, PendingDirSyncs};
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
}

enum State {
    Open(Arc<SegmentQueue>),
    Closed(Closed),
}

/// What a closed queue answers without its files.
#[derive(Debug, Clone, Copy)]
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
        if let Some(last) = segments.last() {
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
        let min_logical = self.min_logical_in(segments);
        let max_bytes = segments.max_offset();
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
        *state = State::Closed(Closed {
            min_bytes: segments.min_offset(),
            max_bytes,
            min_entry_phys,
            first_file_end_phys,
        });
        self.open_queues.fetch_sub(1, Ordering::AcqRel);
        true
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
        let last_real = (0..max)
            .rev()
            .take(4096)
            .filter_map(|o| entry_in(&segments, o))
            .find(|e| !e.is_blank());
        self.max_phys.store(
            last_real.map_or(0, |e| e.phys_offset + i64::from(e.size)),
            Ordering::Release,
        );
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

/// All ConsumeQueues of a store, under `consumequeue/<topic>/<queueId>/`.
pub struct ConsumeQueueStore {
    dir: PathBuf,
    file_size: usize,
    queues: RwLock<HashMap<String, HashMap<i32, Arc<ConsumeQueue>>>>,
    /// Directories that new queues and files added entries to, synced by
    /// [`ConsumeQueueStore::sync_new_dirs`] before each checkpoint.
    dir_syncs: Arc<PendingDirSyncs>,
    /// Queues with open files.
    open_queues: Arc<AtomicUsize>,
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
        })
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
        let cq = Arc::new(ConsumeQueue::open(
            &dir,
            topic,
            queue_id,
            self.file_size,
            self.dir_syncs.clone(),
            self.open_queues.clone(),
        )?);
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

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: usize = ENTRY_SIZE * 4;

    #[test]
    fn entries_fill_files_in_order_and_gaps_are_blanks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
        let cq = store.find_or_create("T", 0).expect("queue");
        // Across a file roll (4 entries per file), then a gap of two.
        for logical in 0..6 {
            cq.put(logical, logical * 100, 100, 7).expect("put");
        }
        cq.put(8, 800, 100, 7).expect("put past a gap");
        cq.put(3, 999, 1, 1).expect("an old offset is ignored");
        assert_eq!(cq.max_offset(), 9);
        assert_eq!(cq.entry(3).map(|e| e.phys_offset), Some(300));
        assert_eq!(cq.entry(5).map(|e| e.phys_offset), Some(500));
        assert_eq!(cq.entry(6).map(|e| e.size), Some(BLANK_SIZE));
        assert_eq!(cq.entry(8).map(|e| e.phys_offset), Some(800));
    }

    fn put_all(cq: &ConsumeQueue, logicals: std::ops::Range<i64>) {
        for logical in logicals {
            cq.put(logical, 1_000 + logical * 100, 100, logical)
                .expect("put");
        }
    }

    fn phys(cq: &ConsumeQueue, logical: i64) -> Option<i64> {
        cq.entry(logical).map(|e| e.phys_offset)
    }

    #[test]
    fn an_idle_queue_closes_answers_its_bounds_closed_and_reopens_where_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
        let cq = store.find_or_create("T", 0).expect("queue");
        put_all(&cq, 0..6);
        cq.flush().expect("flush");
        assert!(!cq.close_if_idle(Duration::from_secs(60)), "just used");
        assert!(cq.close_if_idle(Duration::ZERO));
        assert_eq!(store.open_count(), (0, 1));
        assert_eq!((cq.min_offset(), cq.max_offset()), (0, 6));
        assert!(!cq.is_open(), "bounds are answered without the files");
        assert_eq!(cq.unflushed(), 0);

        put_all(&cq, 6..9);
        assert!(cq.is_open(), "an append reopens it");
        assert_eq!(store.open_count(), (1, 1));
        for logical in 0..9 {
            assert_eq!(
                phys(&cq, logical),
                Some(1_000 + logical * 100),
                "entry {logical}"
            );
        }
        assert_eq!(cq.max_offset(), 9);

        cq.flush().expect("flush");
        assert!(cq.close_if_idle(Duration::ZERO));
        assert_eq!(phys(&cq, 7), Some(1_700), "a read reopens it too");
    }

    #[test]
    fn a_queue_in_use_or_not_flushed_stays_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
        let cq = store.find_or_create("T", 0).expect("queue");
        put_all(&cq, 0..2);
        assert!(!cq.close_if_idle(Duration::ZERO), "unflushed entries");
        cq.flush().expect("flush");
        let in_use = cq.segments().expect("open");
        assert!(!cq.close_if_idle(Duration::ZERO), "a user holds the files");
        drop(in_use);
        assert!(cq.close_if_idle(Duration::ZERO));
    }

    #[test]
    fn a_loaded_store_has_every_queue_closed_recovered_and_retention_leaves_them_closed() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
            for queue in 0..3 {
                let cq = store.find_or_create("T", queue).expect("queue");
                put_all(&cq, 0..6);
                cq.flush().expect("flush");
            }
        }
        // The CommitLog's valid range ends inside entry 5 of every queue.
        let store = ConsumeQueueStore::load(dir.path(), FILE, 0..1_550).expect("reload");
        assert_eq!(store.open_count(), (0, 3));
        let cq = store.find("T", 1).expect("queue");
        assert_eq!(cq.max_offset(), 5, "entry 5 ends beyond the log and is cut");
        assert_eq!(cq.max_phys_offset(), 1_500);

        // Retention below the first entry changes nothing and opens nothing.
        cq.correct_min_offset(1_000);
        assert_eq!(cq.delete_expired(1_000), 0);
        assert!(!cq.is_open());
        // Past the first three entries, the queue opens to move its min offset.
        assert_eq!(cq.delete_expired(1_250), 0);
        assert_eq!(cq.min_offset(), 3);
        assert_eq!(phys(&cq, 3), Some(1_300));
        // Past the first file (entries 0-3), closed again: the file goes.
        cq.flush().expect("flush");
        assert!(cq.close_if_idle(Duration::ZERO));
        assert_eq!(cq.delete_expired(1_400), 1);
        assert_eq!(cq.min_offset(), 4);
    }

    #[test]
    fn closing_while_the_dispatcher_appends_and_readers_read_loses_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = ENTRY_SIZE * 1024;
        let store = ConsumeQueueStore::load(dir.path(), file, 0..i64::MAX).expect("load");
        let cq = store.find_or_create("T", 0).expect("queue");
        let closes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let closer = {
            let (cq, stop, closes) = (cq.clone(), stop.clone(), closes.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let _ = cq.flush();
                    if cq.close_if_idle(Duration::ZERO) {
                        closes.fetch_add(1, Ordering::AcqRel);
                    }
                    std::thread::yield_now();
                }
            })
        };
        let reader = {
            let (cq, stop) = (cq.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let max = cq.max_offset();
                    if max > 0 {
                        let logical = max - 1;
                        let entry = cq.entry(logical).expect("a written entry is readable");
                        assert_eq!(entry.phys_offset, 1_000 + logical * 100);
                    }
                }
            })
        };
        // Bursts of appends, each followed by a close (readers keep reading throughout).
        let mut written = 0;
        for round in 1..=50 {
            put_all(&cq, written..written + 100);
            written += 100;
            let deadline = Instant::now() + Duration::from_secs(5);
            while closes.load(Ordering::Acquire) < round && Instant::now() < deadline {
                std::thread::yield_now();
            }
        }
        stop.store(true, Ordering::Release);
        closer.join().expect("closer");
        reader.join().expect("reader");
        assert!(
            closes.load(Ordering::Acquire) >= 50,
            "closed {closes:?} times"
        );
        assert_eq!(cq.max_offset(), written);
        for logical in 0..written {
            assert_eq!(
                phys(&cq, logical),
                Some(1_000 + logical * 100),
                "entry {logical}"
            );
        }
    }

    #[test]
    fn a_new_queue_leaves_its_directory_syncs_to_the_flush() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
        store.sync_new_dirs().expect("sync");
        let cq = store.find_or_create("Fresh", 3).expect("queue");
        put_all(&cq, 0..1);
        let pending = store.dir_syncs.pending();
        let expected = [
            dir.path().to_owned(),
            dir.path().join("Fresh"),
            dir.path().join("Fresh/3"),
        ];
        assert_eq!(
            pending,
            expected.into_iter().collect(),
            "the new entries of each directory"
        );
        store.sync_new_dirs().expect("sync");
        assert!(store.dir_syncs.pending().is_empty());
    }

    #[test]
    fn a_queue_deleted_before_the_flush_leaves_nothing_to_sync_and_no_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
        let cq = store.find_or_create("Brief", 0).expect("queue");
        put_all(&cq, 0..1);
        drop(cq);
        store.delete_topic("Brief").expect("deleted");
        store
            .sync_new_dirs()
            .expect("a vanished directory is not an error");
        assert!(store.dir_syncs.pending().is_empty());
    }

    #[test]
    fn a_burst_of_new_queues_is_synced_in_one_pass() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
        store.sync_new_dirs().expect("sync");
        for queue in 0..100 {
            put_all(&store.find_or_create("Burst", queue).expect("queue"), 0..1);
        }
        assert!(store.dir_syncs.pending().len() > 100);
        store.sync_new_dirs().expect("one syncfs");
        assert!(store.dir_syncs.pending().is_empty());
    }
}
