//! IndexFiles (protocol.md 6.4): a hash index from `topic#key` to physical offsets.
//!
//! Layout: a 40-byte header (beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset,
//! hashSlotCount, indexCount), `maxHashSlotNum` 4-byte slots holding the number of the latest
//! entry in that slot, then `maxIndexNum` 20-byte entries
//! `keyHash (4) | phyOffset (8) | timeDiff seconds (4) | previous entry (4)`.
//! Entry 0 is never used, so `indexCount` starts at 1 and 0 means "none".
//!
//! Example: keys A and B both hash to slot 7. Putting A writes entry 1 (prev 0) and sets
//! slot 7 = 1; putting B writes entry 2 (prev 1) and sets slot 7 = 2. A lookup of A starts at
//! slot 7 -> entry 2 (hash differs, skip) -> entry 1 (match) -> prev 0, done.
//!
//! Every access goes through aligned atomic 32-bit words, since lookups walk the chains while
//! the dispatcher appends; big-endian on disk like Java's.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::RwLock;
use stellmq_protocol::message::{java_string_hash_continued, UtcTime};

use crate::error::{IoContext, StoreError};
use crate::mapped_file::MappedFile;

const HEADER_SIZE: usize = 40;
const SLOT_SIZE: usize = 4;
const ENTRY_SIZE: usize = 20;

const BEGIN_TIMESTAMP: usize = 0;
const END_TIMESTAMP: usize = 8;
const BEGIN_PHY_OFFSET: usize = 16;
const END_PHY_OFFSET: usize = 24;
const HASH_SLOT_COUNT: usize = 32;
const INDEX_COUNT: usize = 36;

/// The slot hash of the index key `topic#key`: `abs(String.hashCode())` of the joined key, 0
/// when the absolute value overflows (Java's rule).
pub fn index_key_hash(topic: &str, key: &str) -> u32 {
    IndexKeyHasher::new(topic).hash(key)
}

/// Hashes the index keys of one topic without building `topic#key` strings.
#[derive(Debug, Clone, Copy)]
pub struct IndexKeyHasher {
    /// The hash of `topic#`.
    prefix: i32,
}

impl IndexKeyHasher {
    pub fn new(topic: &str) -> Self {
        Self {
            prefix: java_string_hash_continued(java_string_hash_continued(0, topic), "#"),
        }
    }

    pub fn hash(&self, key: &str) -> u32 {
        let h = java_string_hash_continued(self.prefix, key);
        if h == i32::MIN {
            0
        } else {
            h.unsigned_abs()
        }
    }
}

/// One index entry to write: a key's hash and the message it points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub key_hash: u32,
    pub phys_offset: i64,
    pub store_timestamp: i64,
}

/// One index file.
pub struct IndexFile {
    file: MappedFile,
    slots: u32,
    max_entries: u32,
}

impl IndexFile {
    fn open(path: &Path, slots: u32, max_entries: u32) -> Result<Self, StoreError> {
        let size = HEADER_SIZE + slots as usize * SLOT_SIZE + max_entries as usize * ENTRY_SIZE;
        let file = MappedFile::open(path, 0, size)?;
        let index = Self {
            file,
            slots,
            max_entries,
        };
        if index.u32_at(INDEX_COUNT) == 0 {
            index.set_u32(INDEX_COUNT, 1);
        }
        Ok(index)
    }

    fn u32_at(&self, pos: usize) -> u32 {
        self.file
            .atomic_u32(pos)
            .map_or(0, |a| u32::from_be(a.load(Ordering::Acquire)))
    }

    fn set_u32(&self, pos: usize, value: u32) {
        if let Some(a) = self.file.atomic_u32(pos) {
            a.store(value.to_be(), Ordering::Release);
        }
    }

    fn i64_at(&self, pos: usize) -> i64 {
        self.file
            .atomic_u64(pos)
            .map_or(0, |a| u64::from_be(a.load(Ordering::Acquire)) as i64)
    }

    fn set_i64(&self, pos: usize, value: i64) {
        if let Some(a) = self.file.atomic_u64(pos) {
            a.store((value as u64).to_be(), Ordering::Release);
        }
    }

    /// An 8-byte value at a 4-aligned position, as two words.
    fn i64_words_at(&self, pos: usize) -> i64 {
        (i64::from(self.u32_at(pos)) << 32) | i64::from(self.u32_at(pos + 4))
    }

    fn set_i64_words(&self, pos: usize, value: i64) {
        self.set_u32(pos, (value >> 32) as u32);
        self.set_u32(pos + 4, value as u32);
    }

    fn entry_pos(&self, n: u32) -> usize {
        HEADER_SIZE + self.slots as usize * SLOT_SIZE + n as usize * ENTRY_SIZE
    }

    pub fn index_count(&self) -> u32 {
        self.u32_at(INDEX_COUNT)
    }

    pub fn is_full(&self) -> bool {
        self.index_count() >= self.max_entries
    }

    pub fn begin_timestamp(&self) -> i64 {
        self.i64_at(BEGIN_TIMESTAMP)
    }

    pub fn end_timestamp(&self) -> i64 {
        self.i64_at(END_TIMESTAMP)
    }

    pub fn end_phy_offset(&self) -> i64 {
        self.i64_at(END_PHY_OFFSET)
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Adds the entry; false when the file is full.
    fn put(&self, entry: &IndexEntry) -> bool {
        let count = self.index_count();
        if count >= self.max_entries {
            return false;
        }
        let IndexEntry {
            key_hash: hash,
            phys_offset: phy,
            store_timestamp,
        } = *entry;
        let slot_pos = HEADER_SIZE + (hash % self.slots) as usize * SLOT_SIZE;
        let mut prev = self.u32_at(slot_pos);
        if prev >= count {
            prev = 0;
        }
        let begin = self.begin_timestamp();
        let time_diff = if begin <= 0 {
            0
        } else {
            ((store_timestamp - begin) / 1000).clamp(0, i64::from(i32::MAX)) as u32
        };
        let pos = self.entry_pos(count);
        self.set_u32(pos, hash);
        self.set_i64_words(pos + 4, phy);
        self.set_u32(pos + 12, time_diff);
        self.set_u32(pos + 16, prev);
        // Publish: the slot points at the finished entry, then the count moves on.
        self.set_u32(slot_pos, count);
        if count <= 1 {
            self.set_i64(BEGIN_PHY_OFFSET, phy);
            self.set_i64(BEGIN_TIMESTAMP, store_timestamp);
        }
        if prev == 0 {
            self.set_u32(HASH_SLOT_COUNT, self.u32_at(HASH_SLOT_COUNT) + 1);
        }
        self.set_u32(INDEX_COUNT, count + 1);
        self.set_i64(END_PHY_OFFSET, phy);
        self.set_i64(END_TIMESTAMP, store_timestamp);
        self.file.mark_dirty();
        true
    }

    /// Physical offsets of the key hashing to `hash` stored within `[begin, end]` (ms),
    /// newest first.
    fn query(&self, hash: u32, max: usize, begin: i64, end: i64, out: &mut Vec<i64>) {
        let count = self.index_count();
        let mut cur = self.u32_at(HEADER_SIZE + (hash % self.slots) as usize * SLOT_SIZE);
        let file_begin = self.begin_timestamp();
        while cur > 0 && cur < count && out.len() < max {
            let pos = self.entry_pos(cur);
            let entry_hash = self.u32_at(pos);
            let phy = self.i64_words_at(pos + 4);
            let time = file_begin + i64::from(self.u32_at(pos + 12)) * 1000;
            let prev = self.u32_at(pos + 16);
            if entry_hash == hash && time >= begin && time <= end {
                out.push(phy);
            }
            if prev == 0 || prev >= cur || time < begin {
                break;
            }
            cur = prev;
        }
    }

    /// Forgets the entries for records at or beyond `valid_end` (recovery cut the CommitLog
    /// there). Entries are in CommitLog order, so they are a suffix: the count moves back,
    /// and chains that still point past it are cut by the `< count` checks of `put` and
    /// `query`. Returns how many entries remain.
    fn truncate(&self, valid_end: i64) -> u32 {
        let count = self.index_count();
        let mut keep = count;
        while keep > 1 && self.i64_words_at(self.entry_pos(keep - 1) + 4) >= valid_end {
            keep -= 1;
        }
        if keep < count {
            self.set_u32(INDEX_COUNT, keep);
            let (phy, ts) = if keep > 1 {
                let pos = self.entry_pos(keep - 1);
                let diff = i64::from(self.u32_at(pos + 12));
                (
                    self.i64_words_at(pos + 4),
                    self.begin_timestamp() + diff * 1000,
                )
            } else {
                (0, self.begin_timestamp())
            };
            self.set_i64(END_PHY_OFFSET, phy);
            self.set_i64(END_TIMESTAMP, ts);
            self.file.mark_dirty();
        }
        keep
    }

    fn overlaps(&self, begin: i64, end: i64) -> bool {
        self.index_count() > 1 && self.begin_timestamp() <= end && self.end_timestamp() >= begin
    }
}

/// Every index file of a store, oldest first.
pub struct IndexService {
    dir: PathBuf,
    slots: u32,
    max_entries: u32,
    files: RwLock<Vec<Arc<IndexFile>>>,
    /// Records below this physical offset are already indexed (re-dispatch after recovery).
    resume_from: std::sync::atomic::AtomicI64,
}

impl IndexService {
    pub fn load(dir: &Path, slots: u32, max_entries: u32) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).at(dir)?;
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .at(dir)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.len() == 17 && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .collect();
        names.sort();
        let mut files = Vec::with_capacity(names.len());
        for path in names {
            files.push(Arc::new(IndexFile::open(&path, slots, max_entries)?));
        }
        Ok(Self {
            dir: dir.to_owned(),
            slots,
            max_entries,
            files: RwLock::new(files),
            resume_from: std::sync::atomic::AtomicI64::new(0),
        })
    }

    /// After recovery cut the CommitLog at `valid_end`: drops index entries for records at
    /// or beyond it (whole files when nothing is left in them), so no entry points at bytes
    /// a later record will reuse.
    pub fn truncate(&self, valid_end: i64) -> Result<(), StoreError> {
        let mut files = self.files.write();
        // Newest first: once a file keeps entries, every older one is wholly before the end.
        while let Some(last) = files.last() {
            if last.truncate(valid_end) > 1 {
                break;
            }
            tracing::warn!(file = %last.path().display(), "index file beyond the recovered CommitLog deleted");
            last.file.destroy().at(last.path())?;
            files.pop();
        }
        Ok(())
    }

    /// After recovery: entries below `min(last indexed + 1, commit_log_end)` exist already.
    pub fn set_resume_point(&self, commit_log_end: i64) {
        let last = self.files.read().last().map_or(-1, |f| f.end_phy_offset());
        self.resume_from
            .store((last + 1).min(commit_log_end), Ordering::Release);
    }

    /// Where indexing continues after recovery; `None` when there is no index file yet.
    pub fn resume_point(&self) -> Option<i64> {
        (!self.files.read().is_empty()).then(|| self.resume_from.load(Ordering::Acquire))
    }

    /// Writes index entries in order (entries below the resume point exist already).
    pub fn put(&self, entries: &[IndexEntry]) -> Result<(), StoreError> {
        let resume_from = self.resume_from.load(Ordering::Acquire);
        let mut file: Option<Arc<IndexFile>> = None;
        for entry in entries.iter().filter(|e| e.phys_offset >= resume_from) {
            let current = match &file {
                Some(f) => f,
                None => file.insert(self.writable_file(entry.store_timestamp)?),
            };
            if !current.put(entry) {
                let next = file.insert(self.writable_file(entry.store_timestamp)?);
                next.put(entry);
            }
        }
        Ok(())
    }

    fn writable_file(&self, now: i64) -> Result<Arc<IndexFile>, StoreError> {
        if let Some(last) = self.files.read().last().filter(|f| !f.is_full()) {
            return Ok(last.clone());
        }
        let mut files = self.files.write();
        if let Some(last) = files.last().filter(|f| !f.is_full()) {
            return Ok(last.clone());
        }
        let mut name = index_file_name(now);
        if let Some(last) = files.last() {
            // Names must sort in creation order.
            let last_name = last
                .path()
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("");
            if name.as_str() <= last_name {
                name = format!("{:017}", last_name.parse::<u64>().unwrap_or(0) + 1);
            }
        }
        let file = Arc::new(IndexFile::open(
            &self.dir.join(&name),
            self.slots,
            self.max_entries,
        )?);
        tracing::info!(event = "INDEX_FILE_CREATED", file = %name, "new index file");
        files.push(file.clone());
        Ok(file)
    }

    /// Physical offsets of `topic#key` within `[begin, end]`, newest files first, and the
    /// newest file's end timestamp and end offset.
    pub fn query(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin: i64,
        end: i64,
    ) -> (Vec<i64>, i64, i64) {
        let hash = index_key_hash(topic, key);
        let files = self.files.read().clone();
        let mut out = Vec::new();
        for f in files.iter().rev() {
            if out.len() >= max {
                break;
            }
            if f.overlaps(begin, end) {
                f.query(hash, max, begin, end, &mut out);
            }
        }
        out.sort_unstable();
        out.dedup();
        out.reverse();
        let (last_ts, last_phy) = files
            .last()
            .map_or((0, 0), |f| (f.end_timestamp(), f.end_phy_offset()));
        (out, last_ts, last_phy)
    }

    pub fn flush(&self) -> std::io::Result<()> {
        for f in self.files.read().iter() {
            f.file.flush()?;
        }
        Ok(())
    }

    /// Deletes files whose entries all point below `commit_log_min` (never the last one).
    pub fn delete_expired(&self, commit_log_min: i64) -> usize {
        let mut files = self.files.write();
        let all_below = |f: &&Arc<IndexFile>| f.end_phy_offset() < commit_log_min;
        let n = files
            .iter()
            .take_while(all_below)
            .count()
            .min(files.len().saturating_sub(1));
        for f in files.drain(..n) {
            if let Err(e) = f.file.destroy() {
                tracing::warn!(file = %f.path().display(), error = %e, "cannot delete index file");
            }
        }
        n
    }

    pub fn file_count(&self) -> usize {
        self.files.read().len()
    }
}

/// `yyyyMMddHHmmssSSS` of a UTC instant.
fn index_file_name(ms: i64) -> String {
    let t = UtcTime::from_ms(ms);
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn entry(
        topic: &str,
        key: &str,
        phys_offset: i64,
        store_timestamp: i64,
    ) -> IndexEntry {
        IndexEntry {
            key_hash: index_key_hash(topic, key),
            phys_offset,
            store_timestamp,
        }
    }

    #[test]
    fn chains_collisions_and_time_windows() {
        let dir = tempfile::tempdir().expect("tempdir");
        // One slot: every key collides, exercising the chains.
        let service = IndexService::load(dir.path(), 1, 100).expect("load");
        let t0 = 1_700_000_000_000;
        service
            .put(&[entry("T", "a", 100, t0), entry("T", "b", 100, t0)])
            .expect("put");
        service
            .put(&[entry("T", "a", 200, t0 + 5_000)])
            .expect("put");
        service
            .put(&[entry("U", "a", 300, t0 + 6_000)])
            .expect("put");
        let (hits, _, last_phy) = service.query("T", "a", 10, 0, i64::MAX);
        assert_eq!(hits, vec![200, 100]);
        assert_eq!(last_phy, 300);
        let (hits, _, _) = service.query("T", "a", 10, t0 + 1_000, i64::MAX);
        assert_eq!(hits, vec![200]);
        let (hits, _, _) = service.query("T", "a", 1, 0, i64::MAX);
        assert_eq!(hits.len(), 1);
        assert_eq!(service.query("T", "b", 10, 0, i64::MAX).0, vec![100]);
        assert!(service.query("T", "zz", 10, 0, i64::MAX).0.is_empty());
    }

    #[test]
    fn full_files_roll_and_reload() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let service = IndexService::load(dir.path(), 7, 4).expect("load");
            for i in 0..10 {
                service
                    .put(&[entry("T", &format!("k{i}"), i * 10, 1_700_000_000_000 + i)])
                    .expect("put");
            }
            assert_eq!(
                service.file_count(),
                4,
                "3 entries per file (entry 0 unused)"
            );
            service.flush().expect("flush");
        }
        let service = IndexService::load(dir.path(), 7, 4).expect("reload");
        assert_eq!(service.query("T", "k9", 10, 0, i64::MAX).0, vec![90]);
        assert_eq!(service.query("T", "k0", 10, 0, i64::MAX).0, vec![0]);
        assert_eq!(service.delete_expired(50), 1);
        assert!(service.query("T", "k0", 10, 0, i64::MAX).0.is_empty());
    }

    #[test]
    fn names_and_hashes() {
        assert_eq!(index_file_name(1_796_220_000_123), "20261202140000123");
        assert_eq!(index_key_hash("TopicTest", "KEY1"), 1_656_969_516);
        // Java: Math.abs("TopicTest#KEY1".hashCode()) and the same for a non-ASCII key.
        assert_eq!(
            index_key_hash("T", "ключ"),
            java_string_hash_continued(0, "T#ключ").unsigned_abs()
        );
    }
}
