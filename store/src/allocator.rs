//! Background allocation of the next CommitLog segment, created and pre-faulted before the
//! writer needs it (Java's `AllocateMappedFileService`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::StoreError;
use crate::mapped_file::MappedFile;

enum Slot {
    Pending,
    Ready(Result<Arc<MappedFile>, String>),
}

struct Request {
    path: PathBuf,
    base: i64,
    size: usize,
}

struct Shared {
    slots: Mutex<HashMap<PathBuf, Slot>>,
    ready: Condvar,
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
            ready: Condvar::new(),
        });
        let (tx, rx) = mpsc::channel::<Request>();
        let worker_shared = shared.clone();
        let worker = std::thread::Builder::new()
            .name("stellmq-allocator".into())
            .spawn(move || {
                for req in rx {
                    let started = Instant::now();
                    let result = MappedFile::open(&req.path, req.base, req.size).map(Arc::new);
                    let created = result.as_ref().ok().cloned();
                    {
                        let mut slots = worker_shared.slots.lock();
                        slots.insert(req.path.clone(), Slot::Ready(result.map_err(|e| e.to_string())));
                        worker_shared.ready.notify_all();
                    }
                    // Warm after handing the file over: the writer may start on it at once.
                    if let (true, Some(file)) = (warm, created) {
                        file.warm();
                    }
                    tracing::debug!(path = %req.path.display(), elapsed = ?started.elapsed(), "segment pre-allocated");
                }
            })
            .ok();
        Arc::new(Self {
            shared,
            tx: Mutex::new(Some(tx)),
            worker: Mutex::new(worker),
        })
    }

    /// Asks for a file to be prepared in the background.
    pub fn prepare(&self, path: PathBuf, base: i64, size: usize) {
        let mut slots = self.shared.slots.lock();
        if slots.contains_key(&path) || path.exists() {
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

    /// The file at `path`: the prepared one if ready (waiting briefly if it is being
    /// prepared), else created now.
    pub fn take(
        &self,
        path: PathBuf,
        base: i64,
        size: usize,
    ) -> Result<Arc<MappedFile>, StoreError> {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut slots = self.shared.slots.lock();
        loop {
            match slots.remove(&path) {
                Some(Slot::Ready(Ok(file))) => return Ok(file),
                Some(Slot::Ready(Err(reason))) => {
                    tracing::warn!(path = %path.display(), %reason, "background allocation failed, retrying in place");
                    break;
                }
                Some(Slot::Pending) => {
                    slots.insert(path.clone(), Slot::Pending);
                    if self
                        .shared
                        .ready
                        .wait_until(&mut slots, deadline)
                        .timed_out()
                    {
                        slots.remove(&path);
                        break;
                    }
                }
                None => break,
            }
        }
        drop(slots);
        Ok(Arc::new(MappedFile::open(&path, base, size)?))
    }

    pub fn shutdown(&self) {
        self.tx.lock().take();
        if let Some(worker) = self.worker.lock().take() {
            let _ = worker.join();
        }
    }
}
