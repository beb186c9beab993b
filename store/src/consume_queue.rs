//! ConsumeQueues (protocol.md 6.3): per topic and queue id, 20-byte entries
//! `physical offset (8) | size (4) | tags code (8)`, 300,000 per file by default.
//! Only the dispatcher writes them; pulls read them concurrently.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use stellmq_protocol::names;

use crate::error::{IoContext, StoreError};
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
    segments: SegmentQueue,
    /// Smallest logical offset whose message is still in the CommitLog.
    min_logical: AtomicI64,
    /// Physical end (offset + size) of the last entry written.
    max_phys: AtomicI64,
}

impl ConsumeQueue {
    fn open(dir: &Path, topic: &str, queue_id: i32, file_size: usize) -> Result<Self, StoreError> {
        let segments = SegmentQueue::load_sparse(dir, file_size)?;
        Ok(Self {
            topic: topic.to_owned(),
            queue_id,
            min_logical: AtomicI64::new(segments.min_offset() / ENTRY_SIZE as i64),
            max_phys: AtomicI64::new(0),
            segments,
        })
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }

    /// The next logical offset to be written.
    pub fn max_offset(&self) -> i64 {
        self.segments.max_offset() / ENTRY_SIZE as i64
    }

    pub fn min_offset(&self) -> i64 {
        self.min_logical
            .load(Ordering::Acquire)
            .max(self.segments.min_offset() / ENTRY_SIZE as i64)
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
        let current = self.max_offset();
        if logical < current {
            return Ok(());
        }
        if current == 0 && self.segments.is_empty() && logical > 0 {
            // First file created for a non-zero offset: start at its file boundary.
            let per_file = (self.segments.file_size() / ENTRY_SIZE) as i64;
            let base = (logical / per_file) * per_file * ENTRY_SIZE as i64;
            self.segments.create_next(base)?;
            self.min_logical.store(logical, Ordering::Release);
        }
        let mut next = self.max_offset();
        if logical > next {
            tracing::warn!(topic = %self.topic, queue = self.queue_id, expected = next, got = logical, "consume queue gap filled with blanks");
        }
        while next < logical {
            self.append_entry(CqEntry {
                phys_offset: 0,
                size: BLANK_SIZE,
                tags_code: 0,
            })?;
            next += 1;
        }
        self.append_entry(CqEntry {
            phys_offset,
            size,
            tags_code,
        })?;
        self.max_phys
            .store(phys_offset + i64::from(size), Ordering::Release);
        Ok(())
    }

    fn append_entry(&self, entry: CqEntry) -> Result<(), StoreError> {
        let file = match self.segments.last() {
            Some(f) if !f.is_full() => f,
            Some(f) => self.segments.create_next(f.end())?,
            None => self.segments.create_next(0)?,
        };
        file.try_append_bytes(&entry.encode())?
            .ok_or_else(|| StoreError::Corrupt {
                path: file.path().to_owned(),
                reason: "consume queue file not aligned to 20-byte entries".into(),
            })?;
        Ok(())
    }

    /// The entry at `logical`, if written.
    pub fn entry(&self, logical: i64) -> Option<CqEntry> {
        let pos = logical.checked_mul(ENTRY_SIZE as i64)?;
        let file = self.segments.find(pos)?;
        let raw = file.read((pos - file.base()) as usize, ENTRY_SIZE)?;
        Some(CqEntry::decode(raw))
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
        let file = self.segments.find(pos)?;
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
        let per_file = (self.segments.file_size() / ENTRY_SIZE) as i64;
        logical + per_file - logical % per_file
    }

    /// Recovery: finds the written end by scanning the last files, then drops every entry
    /// at the end that points beyond the CommitLog's valid end (however far recovery cut
    /// the log back), so the queue and the log agree.
    pub fn recover(&self, commit_log_end: i64) -> Result<(), StoreError> {
        let files = self.segments.files();
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
            let Some(entry) = self.raw_entry_at(end - ENTRY_SIZE as i64) else {
                break;
            };
            if !entry.is_blank() && entry.phys_offset + i64::from(entry.size) <= commit_log_end {
                break;
            }
            end -= ENTRY_SIZE as i64;
        }
        self.segments.truncate(end)?;
        let last_real = (0..self.max_offset())
            .rev()
            .take(4096)
            .filter_map(|o| self.entry(o))
            .find(|e| !e.is_blank());
        self.max_phys.store(
            last_real.map_or(0, |e| e.phys_offset + i64::from(e.size)),
            Ordering::Release,
        );
        Ok(())
    }

    /// The entry at a byte position, written or not (recovery, before serving).
    fn raw_entry_at(&self, pos: i64) -> Option<CqEntry> {
        let file = self.segments.find(pos)?;
        let raw = file.read_unpublished((pos - file.base()) as usize, ENTRY_SIZE)?;
        Some(CqEntry::decode(raw))
    }

    /// Moves the min offset to the first entry whose message is still in the CommitLog.
    pub fn correct_min_offset(&self, commit_log_min: i64) {
        let mut logical = self.min_offset();
        let max = self.max_offset();
        while logical < max {
            match self.entry(logical) {
                Some(e) if e.is_blank() || e.phys_offset < commit_log_min => logical += 1,
                _ => break,
            }
        }
        self.min_logical.store(logical, Ordering::Release);
    }

    /// Deletes files whose every entry points below `commit_log_min` (never the last file).
    pub fn delete_expired(&self, commit_log_min: i64) -> usize {
        let removed = self.segments.remove_front(usize::MAX, |file| {
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
        self.correct_min_offset(commit_log_min);
        removed.len()
    }

    pub fn flush(&self) -> std::io::Result<()> {
        self.segments.flush().map(|_| ())
    }

    pub fn unflushed(&self) -> usize {
        self.segments.unflushed()
    }

    fn destroy(&self) -> Result<(), StoreError> {
        self.segments.destroy()
    }
}

/// All ConsumeQueues of a store, under `consumequeue/<topic>/<queueId>/`.
pub struct ConsumeQueueStore {
    dir: PathBuf,
    file_size: usize,
    queues: RwLock<HashMap<String, HashMap<i32, Arc<ConsumeQueue>>>>,
}

impl ConsumeQueueStore {
    /// Opens every queue found on disk.
    pub fn load(dir: &Path, file_size: usize) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).at(dir)?;
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
                let cq = ConsumeQueue::open(&queue_entry.path(), &topic, queue_id, file_size)?;
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
        let mut queues = self.queues.write();
        let by_id = queues.entry(topic.to_owned()).or_default();
        if let Some(cq) = by_id.get(&queue_id) {
            return Ok(cq.clone());
        }
        let dir = self.dir.join(topic).join(queue_id.to_string());
        let cq = Arc::new(ConsumeQueue::open(&dir, topic, queue_id, self.file_size)?);
        by_id.insert(queue_id, cq.clone());
        Ok(cq)
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
        let store = ConsumeQueueStore::load(dir.path(), FILE).expect("load");
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
}
