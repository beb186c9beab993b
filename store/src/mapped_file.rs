//! One memory-mapped segment file.
//!
//! This is the only module with `unsafe`. The concurrency contract that makes it sound:
//!
//! * Bytes below the *wrote position* are published: they are never written again while the
//!   file is served, and readers may read them (as slices or zero-copy [`Bytes`]).
//! * Bytes at or above the wrote position are private to the single writer, which holds
//!   `write_lock` while it fills them and then advances the position with `Release` ordering;
//!   readers load it with `Acquire`.
//! * [`MappedFile::truncate_to`] moves the position back; it is only used by recovery and
//!   replication before the truncated range has been handed to readers.
//! * Index files use [`MappedFile::atomic_u32`] / [`MappedFile::atomic_u64`] for every access
//!   instead, since their slots are rewritten while readers walk them.
//!
//! The mapping lives as long as any `Arc<MappedFile>` (and any `Bytes` made from it), so a
//! file deleted by retention stays readable for readers that still hold it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use memmap2::MmapMut;
use parking_lot::Mutex;

use crate::error::{open_read_write, IoContext, StoreError};

/// OS page size assumed for pre-faulting and flush accounting.
pub const PAGE_SIZE: usize = 4096;

/// Bytes [`MappedFile::warm`] writes per `pwrite`: it bounds how long one call holds a core
/// where fresh memory is slow, and how long an append waits for the lock; 16,384 calls per
/// GiB. 256 KiB chunks measured the same tail and a slower sync row.
const WARM_CHUNK: usize = 64 * 1024;
static WARM_ZEROS: [u8; WARM_CHUNK] = [0; WARM_CHUNK];

/// Disk reserved at a time ahead of the writes of a file opened with
/// [`MappedFile::open_sparse`]: one page, so an idle or nearly empty queue costs a page.
pub const RESERVE_CHUNK: usize = PAGE_SIZE;

pub struct MappedFile {
    path: PathBuf,
    /// Global offset of the file's first byte (its name).
    base: i64,
    size: usize,
    map: MmapMut,
    /// The mapped file, for warming with `pwrite` (see [`Self::warm`]). A sparse file
    /// (a ConsumeQueue's) keeps no descriptor once mapped: a million queues must not hold a
    /// million descriptors; it opens its file only to reserve blocks ahead of its writes.
    file: Option<std::fs::File>,
    ptr: *mut u8,
    wrote: AtomicUsize,
    flushed: AtomicUsize,
    /// Store timestamp of the last record appended (for the checkpoint).
    last_store_timestamp: AtomicI64,
    write_lock: Mutex<()>,
    /// Set by atomic-word writers (index files) so flush knows there is work.
    dirty: AtomicBool,
    /// Where the reserved disk blocks end: the whole file, except for a sparse file, which
    /// reserves from its write position ahead of its writes ([`Self::try_append_bytes`];
    /// nothing below the write position is written again).
    reserved: AtomicUsize,
}

// SAFETY: `ptr` points into `map`, which lives as long as `self`. Access to the memory
// follows the contract in the module docs: writes only to unpublished ranges under
// `write_lock`, reads only of published ranges, or atomic accesses.
unsafe impl Send for MappedFile {}
// SAFETY: see `Send`.
unsafe impl Sync for MappedFile {}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("path", &self.path)
            .field("base", &self.base)
            .field("wrote", &self.wrote_position())
            .finish()
    }
}

/// Syncs a directory, making the entries created in it durable.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// `create_dir_all`, then syncs the parent of every directory it created, so a new queue's
/// directories survive a crash along with the files written into them.
pub fn create_dir_all_durably(dir: &Path) -> Result<(), StoreError> {
    create_dir_all_syncing(dir, DirSync::Now)
}

/// When the entries a new file or directory adds to its parent become durable.
#[derive(Clone, Copy)]
pub enum DirSync<'a> {
    /// At once (an fsync per directory changed).
    Now,
    /// At the next [`PendingDirSyncs::sync_all`], before anything that relies on them is
    /// claimed durable (ConsumeQueues: the flush service syncs them before each checkpoint,
    /// so creating a queue costs the dispatcher no fsync).
    Later(&'a PendingDirSyncs),
}

impl DirSync<'_> {
    fn sync(self, dir: &Path) -> Result<(), StoreError> {
        match self {
            DirSync::Now => sync_dir(dir),
            DirSync::Later(pending) => {
                pending.note(dir);
                Ok(())
            }
        }
    }
}

/// Directories with new entries not yet synced (see [`DirSync::Later`]).
#[derive(Debug, Default)]
pub struct PendingDirSyncs(Mutex<std::collections::BTreeSet<PathBuf>>);

impl PendingDirSyncs {
    pub fn note(&self, dir: &Path) {
        self.0.lock().insert(dir.to_owned());
    }

    /// The directories noted and not synced yet.
    pub fn pending(&self) -> std::collections::BTreeSet<PathBuf> {
        self.0.lock().clone()
    }

    /// Syncs every noted directory (one deleted since, with its queue or topic, needs
    /// none); on a failure the ones not synced stay noted. Past [`SYNCFS_BEYOND`] of them,
    /// one `syncfs` of their file system does it in one call (a burst of new queues noted
    /// thousands).
    pub fn sync_all(&self) -> Result<(), StoreError> {
        let dirs = std::mem::take(&mut *self.0.lock());
        if dirs.len() > SYNCFS_BEYOND && sync_file_system_of(&dirs) {
            return Ok(());
        }
        let mut left = dirs.into_iter();
        while let Some(dir) = left.next() {
            match std::fs::File::open(&dir).and_then(|d| d.sync_all()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    let mut pending = self.0.lock();
                    pending.insert(dir.clone());
                    pending.extend(left);
                    return Err(StoreError::io(&dir, e));
                }
            }
        }
        Ok(())
    }
}

/// Noted directories beyond which [`PendingDirSyncs::sync_all`] syncs their file system.
const SYNCFS_BEYOND: usize = 64;

/// `syncfs` of the file system holding the first of `dirs` that still exists (they are
/// all under one store root); false when none exists or the call failed.
fn sync_file_system_of(dirs: &std::collections::BTreeSet<PathBuf>) -> bool {
    let Some(dir) = dirs.iter().find_map(|d| std::fs::File::open(d).ok()) else {
        return false;
    };
    match rustix::fs::syncfs(&dir) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "syncfs failed; syncing the directories one by one");
            false
        }
    }
}

/// Creates `dir` and its missing parents, making each new entry durable as `sync` says.
pub fn create_dir_all_syncing(dir: &Path, sync: DirSync<'_>) -> Result<(), StoreError> {
    let mut missing = Vec::new();
    let mut cursor = Some(dir);
    while let Some(d) = cursor.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        missing.push(d);
        cursor = d.parent();
    }
    if missing.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).at(dir)?;
    for created in missing.iter().rev() {
        if let Some(parent) = created.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync.sync(parent)?;
        }
    }
    Ok(())
}

/// Allocates the disk blocks of `len` bytes at `offset` of `file` (its size unchanged when
/// within it); file systems without `fallocate` are left to allocate on write.
fn reserve_blocks(file: &std::fs::File, offset: usize, len: usize) -> std::io::Result<()> {
    match rustix::fs::fallocate(
        file,
        rustix::fs::FallocateFlags::empty(),
        offset as u64,
        len as u64,
    ) {
        Ok(()) | Err(rustix::io::Errno::OPNOTSUPP) => Ok(()),
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// The 20-digit zero-padded file name of a segment starting at `base`.
pub fn segment_name(base: i64) -> String {
    format!("{base:020}")
}

impl MappedFile {
    /// Creates (or reopens) a file of exactly `size` bytes, its disk blocks reserved, and
    /// maps it.
    pub fn open(path: &Path, base: i64, size: usize) -> Result<Self, StoreError> {
        Self::open_with(path, base, size, true, DirSync::Now)
    }

    /// Like [`Self::open`], but the file takes disk only as it is written (a reopened one
    /// reserves from its write position on):
    /// [`Self::try_append_bytes`] reserves [`RESERVE_CHUNK`] at a time ahead of its writes
    /// (a full disk then fails that call, never a page fault). For ConsumeQueue files, most
    /// of which stay nearly empty (RocketMQ's are sparse too).
    /// A new file's directory entry becomes durable as `sync` says.
    pub fn open_sparse(
        path: &Path,
        base: i64,
        size: usize,
        sync: DirSync<'_>,
    ) -> Result<Self, StoreError> {
        Self::open_with(path, base, size, false, sync)
    }

    fn open_with(
        path: &Path,
        base: i64,
        size: usize,
        reserve: bool,
        sync: DirSync<'_>,
    ) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent() {
            create_dir_all_syncing(dir, sync)?;
        }
        let file = open_read_write(path)?;
        let len = file.metadata().at(path)?.len();
        if len != size as u64 {
            if len != 0 && len > size as u64 {
                return Err(StoreError::Corrupt {
                    path: path.to_owned(),
                    reason: format!("file has {len} bytes, expected {size}"),
                });
            }
            file.set_len(size as u64).at(path)?;
            // Reserve the blocks now: a full disk then fails this call cleanly, instead of
            // killing the process with SIGBUS when a later page fault finds no space.
            if reserve {
                if let Err(e) = reserve_blocks(&file, 0, size) {
                    let _ = std::fs::remove_file(path);
                    return Err(StoreError::io(path, e));
                }
            }
            if len == 0 {
                // A new file's name only survives a crash once its directory is synced.
                if let Some(dir) = path.parent() {
                    sync.sync(dir)?;
                }
            }
        }
        // SAFETY: the file is opened read-write and sized; StellMQ's store lock keeps other
        // processes from mapping it. Truncation by another process would be a bug elsewhere.
        let mut map = unsafe { MmapMut::map_mut(&file) }.at(path)?;
        if !reserve {
            // No read-around: a fault in a sparse file would otherwise fill a large folio
            // of its holes with zeros (up to megabytes, at fresh-memory speed), which made
            // a new queue's first entry and a restart's scan of nearly empty queues cost
            // milliseconds each. A fault now brings in the one page it needs.
            map.advise(memmap2::Advice::Random).at(path)?;
        }
        let ptr = map.as_mut_ptr();
        Ok(Self {
            path: path.to_owned(),
            base,
            size,
            map,
            // The mapping stays valid without the descriptor.
            file: reserve.then_some(file),
            ptr,
            wrote: AtomicUsize::new(0),
            flushed: AtomicUsize::new(0),
            last_store_timestamp: AtomicI64::new(0),
            write_lock: Mutex::new(()),
            dirty: AtomicBool::new(false),
            // A reopened sparse file reserves from its write position on (see
            // `try_append_bytes`).
            reserved: AtomicUsize::new(if reserve { size } else { 0 }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn base(&self) -> i64 {
        self.base
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Global offset just past this file.
    pub fn end(&self) -> i64 {
        self.base + self.size as i64
    }

    pub fn wrote_position(&self) -> usize {
        self.wrote.load(Ordering::Acquire)
    }

    pub fn flushed_position(&self) -> usize {
        self.flushed.load(Ordering::Acquire)
    }

    pub fn remaining(&self) -> usize {
        self.size - self.wrote_position()
    }

    pub fn is_full(&self) -> bool {
        self.wrote_position() >= self.size
    }

    pub fn last_store_timestamp(&self) -> i64 {
        self.last_store_timestamp.load(Ordering::Acquire)
    }

    pub fn set_last_store_timestamp(&self, ts: i64) {
        self.last_store_timestamp.store(ts, Ordering::Release);
    }

    /// Appends `len` bytes written by `fill` at the wrote position; returns the position, or
    /// `None` if they do not fit.
    pub fn append(&self, len: usize, fill: impl FnOnce(&mut [u8])) -> Option<usize> {
        let _guard = self.write_lock.lock();
        let pos = self.wrote.load(Ordering::Acquire);
        if pos.checked_add(len)? > self.size {
            return None;
        }
        // SAFETY: [pos, pos + len) is within the map and at or above the wrote position,
        // so no reader can see it, and `write_lock` excludes other writers.
        let region = unsafe { std::slice::from_raw_parts_mut(self.ptr.add(pos), len) };
        fill(region);
        self.wrote.store(pos + len, Ordering::Release);
        Some(pos)
    }

    /// Appends raw bytes.
    pub fn append_bytes(&self, data: &[u8]) -> Option<usize> {
        self.append(data.len(), |dst| dst.copy_from_slice(data))
    }

    /// [`Self::append_bytes`] that first reserves disk for them where the file has none
    /// reserved yet (a sparse file); an error when the disk is full.
    pub fn try_append_bytes(&self, data: &[u8]) -> Result<Option<usize>, StoreError> {
        let pos = self.wrote_position();
        let end = pos.saturating_add(data.len());
        if end > self.reserved.load(Ordering::Acquire) && end <= self.size {
            let _guard = self.write_lock.lock();
            // Below the write position everything is written or meant to stay empty.
            let page_start = pos / RESERVE_CHUNK * RESERVE_CHUNK;
            let from = self.reserved.load(Ordering::Acquire).max(page_start);
            let to = end
                .div_ceil(RESERVE_CHUNK)
                .saturating_mul(RESERVE_CHUNK)
                .min(self.size);
            if to > from {
                let reserved = match &self.file {
                    Some(file) => reserve_blocks(file, from, to - from),
                    None => std::fs::OpenOptions::new()
                        .write(true)
                        .open(&self.path)
                        .and_then(|file| reserve_blocks(&file, from, to - from)),
                };
                reserved.at(&self.path)?;
                self.reserved.store(to, Ordering::Release);
            }
        }
        Ok(self.append_bytes(data))
    }

    /// Where the reserved disk blocks end (see the field).
    pub fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Acquire)
    }

    /// Marks the rest of the file as written (after an end-of-file blank).
    pub fn fill_to_end(&self) {
        let _guard = self.write_lock.lock();
        self.wrote.store(self.size, Ordering::Release);
    }

    /// A published range.
    pub fn read(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.wrote_position() {
            return None;
        }
        // SAFETY: the range is published (below the wrote position), hence immutable.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(pos), len) })
    }

    /// A published range as zero-copy `Bytes` that keep the mapping alive.
    pub fn bytes(self: &Arc<Self>, pos: usize, len: usize) -> Option<Bytes> {
        self.read(pos, len)?;
        Some(Bytes::from_owner(MappedSlice {
            file: self.clone(),
            pos,
            len,
        }))
    }

    /// Reads any range regardless of the wrote position (recovery scans, before serving).
    pub fn read_unpublished(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.size {
            return None;
        }
        // SAFETY: only recovery calls this, before any writer or reader exists.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(pos), len) })
    }

    /// Sets the wrote and flushed positions after recovery found valid data up to `pos`, and
    /// zeroes the torn tail after it (up to the first all-zero page), so a later crash can
    /// never mistake old bytes for new records.
    pub fn truncate_to(&self, pos: usize) {
        let _guard = self.write_lock.lock();
        let pos = pos.min(self.size);
        let mut cursor = pos;
        while cursor < self.size {
            let page_end = ((cursor / PAGE_SIZE) + 1) * PAGE_SIZE;
            let end = page_end.min(self.size);
            // SAFETY: beyond the new wrote position, under the write lock, before serving.
            let region =
                unsafe { std::slice::from_raw_parts_mut(self.ptr.add(cursor), end - cursor) };
            if region.iter().all(|b| *b == 0) {
                break;
            }
            region.fill(0);
            cursor = end;
        }
        self.wrote.store(pos, Ordering::Release);
        self.flushed.store(pos, Ordering::Release);
    }

    /// Sets the positions of a file recovery found complete.
    pub fn set_positions(&self, wrote: usize) {
        let _guard = self.write_lock.lock();
        self.wrote.store(wrote.min(self.size), Ordering::Release);
        self.flushed.store(wrote.min(self.size), Ordering::Release);
    }

    /// Pre-faults every page above the wrote position by writing zeros into it, so appends
    /// run at memory speed instead of faulting in fresh pages (0.2-0.5 GB/s vs ~4.7 GB/s on
    /// these machines). It holds the write lock for one [`WARM_CHUNK`] at a time, so the file
    /// can already be in use: the writer waits at most one chunk, the two never touch the
    /// same bytes, and a writer that overtakes the warmer makes it skip ahead.
    ///
    /// The zeros go in with `pwrite`, a chunk per call, not by touching the mapping: a
    /// fault's read-around fills a large folio at once, and on a VM whose host backs fresh
    /// memory lazily one such fault held a core for up to 19 ms, unpreemptible, while the
    /// dispatcher waited behind it (`perf sched timehist`). A chunk bounds that stall.
    pub fn warm(&self) {
        let Some(file) = &self.file else {
            return; // a sparse file is never warmed
        };
        let mut pos = 0;
        while pos < self.size {
            let guard = self.write_lock.lock();
            let wrote = self.wrote.load(Ordering::Acquire);
            pos = pos.max(wrote.div_ceil(PAGE_SIZE) * PAGE_SIZE);
            if pos >= self.size {
                break;
            }
            let zeros = WARM_ZEROS.get(..self.size - pos).unwrap_or(&WARM_ZEROS);
            let len = zeros.len();
            // Unpublished range (at or above the wrote position), under the write lock.
            let written = std::os::unix::fs::FileExt::write_all_at(file, zeros, pos as u64);
            // Hand the lock to a waiting writer instead of barging back in.
            parking_lot::MutexGuard::unlock_fair(guard);
            if let Err(e) = written {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot pre-fault a segment; appends will fault its pages in");
                return;
            }
            pos += len;
        }
    }

    /// Bytes written but not flushed.
    pub fn unflushed(&self) -> usize {
        self.wrote_position()
            .saturating_sub(self.flushed_position())
    }

    /// Flushes the written, unflushed range (msync). Returns the new flushed position.
    pub fn flush(&self) -> std::io::Result<usize> {
        let wrote = self.wrote_position();
        let flushed = self.flushed_position();
        if wrote > flushed {
            self.map.flush_range(flushed, wrote - flushed)?;
            self.flushed.fetch_max(wrote, Ordering::AcqRel);
        }
        if self.dirty.swap(false, Ordering::AcqRel) {
            self.map.flush()?;
        }
        Ok(self.flushed_position())
    }

    /// An aligned 32-bit word for lock-free shared access (index files).
    pub fn atomic_u32(&self, pos: usize) -> Option<&AtomicU32> {
        if !pos.is_multiple_of(4) || pos.checked_add(4)? > self.size {
            return None;
        }
        // SAFETY: in bounds and 4-aligned (the map is page aligned); AtomicU32 has the same
        // layout as u32, and this memory is only ever accessed atomically.
        Some(unsafe { &*(self.ptr.add(pos) as *const AtomicU32) })
    }

    /// An aligned 64-bit word for lock-free shared access (index file headers).
    pub fn atomic_u64(&self, pos: usize) -> Option<&AtomicU64> {
        if !pos.is_multiple_of(8) || pos.checked_add(8)? > self.size {
            return None;
        }
        // SAFETY: as for `atomic_u32`, with 8-byte alignment.
        Some(unsafe { &*(self.ptr.add(pos) as *const AtomicU64) })
    }

    /// Notes an atomic-word write so the next flush syncs the file.
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// Deletes the file from disk; readers holding it keep their mapping.
    pub fn destroy(&self) -> std::io::Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Owner of a zero-copy `Bytes` view into a mapped file.
struct MappedSlice {
    file: Arc<MappedFile>,
    pos: usize,
    len: usize,
}

impl AsRef<[u8]> for MappedSlice {
    fn as_ref(&self) -> &[u8] {
        // The range was published (checked) when the slice was made, and the mapping lives as
        // long as `self.file`.
        self.file
            .read_unpublished(self.pos, self.len)
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests;
