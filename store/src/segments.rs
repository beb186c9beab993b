//! A directory of equally sized segment files named by their starting offset
//! (Java's `MappedFileQueue`), used by the CommitLog and by each ConsumeQueue.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::allocator::{Allocator, Taken};
use crate::error::{IoContext, StoreError};
use crate::mapped_file::{
    create_dir_all_syncing, segment_name, DirSync, MappedFile, PendingDirSyncs,
};

pub struct SegmentQueue {
    dir: PathBuf,
    file_size: usize,
    files: RwLock<Vec<Arc<MappedFile>>>,
    allocator: Option<Arc<Allocator>>,
    /// New segments take disk only as they are written ([`MappedFile::open_sparse`]); the
    /// directory entries they add are synced later, through these.
    sparse: Option<Arc<PendingDirSyncs>>,
}

impl SegmentQueue {
    /// Opens every segment in `dir` (created if missing). Loaded files count as full until
    /// recovery sets the positions of the last ones.
    pub fn load(
        dir: &Path,
        file_size: usize,
        allocator: Option<Arc<Allocator>>,
    ) -> Result<Self, StoreError> {
        Self::load_with(dir, file_size, allocator, None)
    }

    /// [`Self::load`] for a queue of sparse segments: they take disk as they are written
    /// (every append goes through [`MappedFile::try_append_bytes`]), new ones and reopened
    /// ones alike. The directory entries of new ones (and of `dir` itself) are noted in
    /// `dir_syncs` for a later sync ([`DirSync::Later`]).
    pub fn load_sparse(
        dir: &Path,
        file_size: usize,
        dir_syncs: Arc<PendingDirSyncs>,
    ) -> Result<Self, StoreError> {
        Self::load_with(dir, file_size, None, Some(dir_syncs))
    }

    fn load_with(
        dir: &Path,
        file_size: usize,
        allocator: Option<Arc<Allocator>>,
        sparse: Option<Arc<PendingDirSyncs>>,
    ) -> Result<Self, StoreError> {
        match &sparse {
            Some(syncs) => create_dir_all_syncing(dir, DirSync::Later(syncs))?,
            None => std::fs::create_dir_all(dir).at(dir)?,
        }
        let mut bases = Vec::new();
        for entry in std::fs::read_dir(dir).at(dir)? {
            let entry = entry.at(dir)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(base) = name.parse::<i64>() {
                    bases.push(base);
                }
            }
        }
        bases.sort_unstable();
        let mut files = Vec::with_capacity(bases.len());
        let mut previous: Option<i64> = None;
        for base in &bases {
            if let Some(previous) = previous.filter(|p| *base != p + file_size as i64) {
                return Err(StoreError::Corrupt {
                    path: dir.join(segment_name(*base)),
                    reason: format!(
                        "segment does not follow {} (size {file_size})",
                        segment_name(previous)
                    ),
                });
            }
            previous = Some(*base);
            let path = dir.join(segment_name(*base));
            let file = if let Some(syncs) = &sparse {
                MappedFile::open_sparse(&path, *base, file_size, DirSync::Later(syncs))?
            } else {
                MappedFile::open(&path, *base, file_size)?
            };
            file.set_positions(file_size);
            files.push(Arc::new(file));
        }
        Ok(Self {
            dir: dir.to_owned(),
            file_size,
            files: RwLock::new(files),
            allocator,
            sparse,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn file_size(&self) -> usize {
        self.file_size
    }

    pub fn files(&self) -> Vec<Arc<MappedFile>> {
        self.files.read().clone()
    }

    pub fn is_empty(&self) -> bool {
        self.files.read().is_empty()
    }

    pub fn first(&self) -> Option<Arc<MappedFile>> {
        self.files.read().first().cloned()
    }

    pub fn last(&self) -> Option<Arc<MappedFile>> {
        self.files.read().last().cloned()
    }

    /// The segment holding global `offset`.
    pub fn find(&self, offset: i64) -> Option<Arc<MappedFile>> {
        let files = self.files.read();
        let first = files.first()?;
        if offset < first.base() {
            return None;
        }
        let index = ((offset - first.base()) / self.file_size as i64) as usize;
        files.get(index).filter(|f| offset < f.end()).cloned()
    }

    /// Smallest offset still stored (the first segment's start), 0 when empty.
    pub fn min_offset(&self) -> i64 {
        self.first().map_or(0, |f| f.base())
    }

    /// Offset just past the last written byte.
    pub fn max_offset(&self) -> i64 {
        self.last()
            .map_or(0, |f| f.base() + f.wrote_position() as i64)
    }

    /// Offset up to which data is flushed.
    pub fn flushed_offset(&self) -> i64 {
        let files = self.files.read();
        // The last segment with flushed bytes, or the first one.
        let flushed = files.iter().rev().find(|f| f.flushed_position() > 0);
        flushed
            .or(files.first())
            .map_or(0, |f| f.base() + f.flushed_position() as i64)
    }

    /// Path of the segment starting at `base`.
    pub fn segment_path(&self, base: i64) -> PathBuf {
        self.dir.join(segment_name(base))
    }

    /// Creates and adds the segment starting at `base` here and now (blocking: only for
    /// queues without an allocator, written from the store's own threads).
    pub fn create_next(&self, base: i64) -> Result<Arc<MappedFile>, StoreError> {
        let path = self.segment_path(base);
        let file = Arc::new(if let Some(syncs) = &self.sparse {
            MappedFile::open_sparse(&path, base, self.file_size, DirSync::Later(syncs))?
        } else {
            MappedFile::open(&path, base, self.file_size)?
        });
        self.push(file.clone())?;
        Ok(file)
    }

    /// Adds the allocator's segment starting at `base` if it is ready, and asks for the one
    /// after it; `Ok(None)` while it is being prepared (wait with [`Allocator::wait_ready`]
    /// on [`SegmentQueue::segment_path`]). Never blocks.
    pub fn try_roll(&self, base: i64) -> Result<Option<Arc<MappedFile>>, StoreError> {
        let Some(allocator) = &self.allocator else {
            return self.create_next(base).map(Some);
        };
        let path = self.segment_path(base);
        match allocator.try_take(&path, base, self.file_size) {
            Taken::Ready(file) => {
                self.push(file.clone())?;
                let next = base + self.file_size as i64;
                allocator.prepare(self.segment_path(next), next, self.file_size);
                Ok(Some(file))
            }
            Taken::Pending => Ok(None),
            Taken::Failed(reason) => Err(StoreError::CreateFile { path, reason }),
        }
    }

    /// The allocator preparing this queue's segments, if any.
    pub fn allocator(&self) -> Option<&Arc<Allocator>> {
        self.allocator.as_ref()
    }

    fn push(&self, file: Arc<MappedFile>) -> Result<(), StoreError> {
        let mut files = self.files.write();
        if let Some(last) = files.last() {
            if last.end() != file.base() {
                return Err(StoreError::Corrupt {
                    path: file.path().to_owned(),
                    reason: format!(
                        "new segment {} does not follow {}",
                        file.base(),
                        last.base()
                    ),
                });
            }
        }
        files.push(file);
        Ok(())
    }

    /// Writes everything written so far to disk; returns the flushed offset.
    pub fn flush(&self) -> std::io::Result<i64> {
        for f in self.files() {
            if f.unflushed() > 0 {
                f.flush()?;
            }
        }
        Ok(self.flushed_offset())
    }

    /// Bytes written but not yet flushed.
    pub fn unflushed(&self) -> usize {
        self.files.read().iter().map(|f| f.unflushed()).sum()
    }

    /// Cuts the queue at `offset`: the segment holding it is truncated there, later
    /// segments are deleted.
    pub fn truncate(&self, offset: i64) -> Result<(), StoreError> {
        let mut files = self.files.write();
        let mut keep = files.len();
        for (i, f) in files.iter().enumerate() {
            if f.base() > offset {
                keep = keep.min(i);
            } else if offset < f.end() {
                f.truncate_to((offset - f.base()) as usize);
            }
        }
        for f in files.drain(keep..) {
            tracing::info!(file = %f.path().display(), "deleting segment beyond the valid end");
            f.destroy().at(f.path())?;
        }
        Ok(())
    }

    /// Removes leading segments while `expired` says so, never the last one, at most `limit`.
    pub fn remove_front(
        &self,
        limit: usize,
        mut expired: impl FnMut(&MappedFile) -> bool,
    ) -> Vec<Arc<MappedFile>> {
        let mut files = self.files.write();
        let removable = files.len().saturating_sub(1).min(limit);
        let n = files
            .iter()
            .take(removable)
            .take_while(|f| expired(f))
            .count();
        files.drain(..n).collect()
    }

    /// Removes every segment (topic deletion).
    pub fn destroy(&self) -> Result<(), StoreError> {
        let mut files = self.files.write();
        for f in files.drain(..) {
            f.destroy().at(f.path())?;
        }
        let _ = std::fs::remove_dir(&self.dir);
        Ok(())
    }
}
