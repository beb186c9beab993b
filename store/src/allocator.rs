//! Background allocation of CommitLog segments (Java's `AllocateMappedFileService`).
//!
//! The allocator's thread is the only place a CommitLog segment is created and mapped:
//! creating (fallocate), syncing the directory and pre-faulting a 1 GiB file are slow, and
//! must never happen under the append lock or on an async worker. Writers ask for a file
//! without blocking ([`Allocator::try_take`]); when it is not ready they release the lock
//! and wait asynchronously ([`Allocator::wait_ready`]). There is never a second mapping of
//! a file: a writer that finds it late waits for the allocator's, it never maps its own
//! (two mappings warmed and written independently would overwrite each other's bytes).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::mapped_file::MappedFile;

enum Slot {
    Pending,
    Ready(Result<Arc<MappedFile>, String>),
}

/// What [`Allocator::try_take`] found.
pub enum Taken {
    Ready(Arc<MappedFile>),
    /// Being prepared (now requested, if it was not yet).
    Pending,
    /// Preparation failed; the next call asks again.
    Failed(String),
}

struct Request {
    path: PathBuf,
    base: i64,
    size: usize,
}

struct Shared {
    slots: Mutex<HashMap<PathBuf, Slot>>,
    /// Bumped whenever a slot becomes ready.
    finished: watch::Sender<u64>,
}

pub struct Allocator {
    shared: Arc<Shared>,
    tx: Mutex<Option<mpsc::Sender<Request>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl Allocator {
    pub fn start(warm: bool) -> Arc<Self> {
        let shared = Arc::new(Shared {
            slots: Mutex::new(HashMap::new()),
            finished: watch::Sender::new(0),
        });
        let (tx, rx) = mpsc::channel::<Request>();
        let worker_shared = shared.clone();
        let worker = std::thread::Builder::new()
            .name("stellmq-allocator".into())
            .spawn(move || {
                for req in rx {
                    prepare_one(&worker_shared, req, warm);
                }
            })
            .map_err(|e| tracing::error!(error = %e, "cannot start the segment allocator"))
            .ok();
        Arc::new(Self {
            shared,
            tx: Mutex::new(Some(tx)),
            worker: Mutex::new(worker),
        })
    }

    /// Asks for a file to be prepared in the background (no-op if it already is).
    pub fn prepare(&self, path: PathBuf, base: i64, size: usize) {
        let mut slots = self.shared.slots.lock();
        if slots.contains_key(&path) {
            return;
        }
        let sent = self.tx.lock().as_ref().is_some_and(|tx| {
            tx.send(Request {
                path: path.clone(),
                base,
                size,
            })
            .is_ok()
        });
        if sent {
            slots.insert(path, Slot::Pending);
        }
    }

    /// The prepared file at `path`, without waiting; asks for it if nobody has.
    pub fn try_take(&self, path: &Path, base: i64, size: usize) -> Taken {
        let mut slots = self.shared.slots.lock();
        match slots.remove(path) {
            Some(Slot::Ready(Ok(file))) => Taken::Ready(file),
            Some(Slot::Ready(Err(reason))) => Taken::Failed(reason),
            Some(Slot::Pending) => {
                slots.insert(path.to_owned(), Slot::Pending);
                Taken::Pending
            }
            None => {
                drop(slots);
                self.prepare(path.to_owned(), base, size);
                Taken::Pending
            }
        }
    }

    /// Waits until the file at `path` is no longer being prepared; false on timeout.
    pub async fn wait_ready(&self, path: &Path, timeout: Duration) -> bool {
        let mut finished = self.shared.finished.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if !matches!(self.shared.slots.lock().get(path), Some(Slot::Pending)) {
                return true;
            }
            match tokio::time::timeout_at(deadline, finished.changed()).await {
                Ok(Ok(())) => {}
                // Timed out, or the allocator is gone.
                _ => return false,
            }
        }
    }

    /// Deletes the files prepared for segments past `next_base` (the CommitLog was cut
    /// back; on disk they would leave a gap recovery refuses). Waits (blocking, at most a
    /// few seconds) for such files still being prepared.
    pub fn discard_after(&self, next_base: i64) {
        let beyond = |path: &Path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.parse::<i64>().ok())
                .is_some_and(|base| base > next_base)
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut slots = self.shared.slots.lock();
            let paths: Vec<PathBuf> = slots.keys().filter(|p| beyond(p)).cloned().collect();
            let pending = paths
                .iter()
                .any(|p| matches!(slots.get(p), Some(Slot::Pending)));
            if pending && Instant::now() < deadline {
                drop(slots);
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            for path in paths {
                if let Some(Slot::Ready(Ok(file))) = slots.remove(&path) {
                    if let Err(e) = file.destroy() {
                        tracing::warn!(path = %path.display(), error = %e, "cannot delete a prepared segment past the cut");
                    }
                }
            }
            return;
        }
    }

    pub fn shutdown(&self) {
        self.tx.lock().take();
        if let Some(worker) = self.worker.lock().take() {
            let _ = worker.join();
        }
    }
}

/// Creates and maps one file, hands it over, then pre-faults it.
fn prepare_one(shared: &Shared, req: Request, warm: bool) {
    let started = Instant::now();
    let result = MappedFile::open(&req.path, req.base, req.size).map(Arc::new);
    if let Err(e) = &result {
        tracing::error!(path = %req.path.display(), error = %e, "cannot create a CommitLog segment");
    }
    let created = result.as_ref().ok().cloned();
    shared.slots.lock().insert(
        req.path.clone(),
        Slot::Ready(result.map_err(|e| e.to_string())),
    );
    shared.finished.send_modify(|n| *n += 1);
    // Warm after handing the file over: the writer may start on it at once; warming skips
    // whatever the writer has already written (the same mapping, under its write lock).
    if let (true, Some(file)) = (warm, created) {
        file.warm();
    }
    tracing::debug!(path = %req.path.display(), elapsed = ?started.elapsed(), "segment prepared");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_are_prepared_once_and_taken_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let allocator = Allocator::start(true);
        let path = dir.path().join(crate::mapped_file::segment_name(0));
        assert!(matches!(
            allocator.try_take(&path, 0, 64 * 1024),
            Taken::Pending
        ));
        assert!(allocator.wait_ready(&path, Duration::from_secs(5)).await);
        let Taken::Ready(file) = allocator.try_take(&path, 0, 64 * 1024) else {
            panic!("ready after waiting");
        };
        assert_eq!(file.size(), 64 * 1024);
        // A failure is reported once, then asked again.
        let bad = dir.path().join("missing-dir-is-a-file");
        std::fs::write(&bad, b"x").expect("file");
        let under_file = bad.join(crate::mapped_file::segment_name(0));
        assert!(matches!(
            allocator.try_take(&under_file, 0, 4096),
            Taken::Pending
        ));
        assert!(
            allocator
                .wait_ready(&under_file, Duration::from_secs(5))
                .await
        );
        assert!(matches!(
            allocator.try_take(&under_file, 0, 4096),
            Taken::Failed(_)
        ));
        allocator.shutdown();
    }
}
