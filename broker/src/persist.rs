//! The broker's JSON config files under `storePathRootDir/config`: fastjson's pretty dialect,
//! written atomically with a `.bak`, read back with either dialect.
//!
//! Tables that clients can change (topics, groups) are written by a background writer
//! ([`run_writer`]): a change only bumps a generation, and the writer serializes and writes
//! the file on a blocking thread, so no request ever does file I/O on the async runtime and
//! a burst of changes costs one write. Callers that answer "created" wait for their
//! generation to be on disk ([`ConfigFile::written`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use stellmq_config::{read_with_backup, write_atomically};
use stellmq_remoting::protocol::body::fastjson;
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

pub fn config_path(store_root: &Path, name: &str) -> PathBuf {
    store_root.join("config").join(name)
}

/// Loads a config file (or its backup); `None` when neither exists or parses.
pub fn load<T: DeserializeOwned>(path: &Path) -> std::io::Result<Option<T>> {
    read_with_backup(path, |bytes| match fastjson::decode::<T>(bytes) {
        Ok(value) => Some(value),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot parse config file");
            None
        }
    })
}

/// Writes a config file atomically (blocking: call it from a blocking thread).
pub fn store<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let text = fastjson::encode_with(value, fastjson::Style::FastjsonPretty);
    write_atomically(path, text.as_bytes())
}

/// A config file kept up to date by a background writer.
pub struct ConfigFile {
    path: PathBuf,
    /// Generation of the latest change.
    changed: AtomicU64,
    /// Generation known to be on disk.
    written: watch::Sender<u64>,
    wake: Notify,
}

impl ConfigFile {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            changed: AtomicU64::new(0),
            written: watch::Sender::new(0),
            wake: Notify::new(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Notes a change for the writer; returns its generation.
    pub fn mark_changed(&self) -> u64 {
        let generation = self.changed.fetch_add(1, Ordering::AcqRel) + 1;
        self.wake.notify_one();
        generation
    }

    /// The latest change's generation.
    pub fn generation(&self) -> u64 {
        self.changed.load(Ordering::Acquire)
    }

    /// Waits until generation `generation` is on disk; false after `timeout` (the change
    /// stays in memory and the writer keeps trying).
    pub async fn written(&self, generation: u64, timeout: Duration) -> bool {
        let mut rx = self.written.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|w| *w >= generation))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    fn pending(&self) -> Option<u64> {
        let changed = self.generation();
        (changed > *self.written.borrow()).then_some(changed)
    }

    fn mark_written(&self, generation: u64) {
        self.written.send_if_modified(|w| {
            let newer = generation > *w;
            if newer {
                *w = generation;
            }
            newer
        });
    }
}

/// A table with a [`ConfigFile`].
pub trait Persisted: Send + Sync + 'static {
    fn config_file(&self) -> &ConfigFile;
    /// Writes the current state to the file (blocking).
    fn write_file(&self) -> std::io::Result<()>;

    /// Writes the file now, logging a failure (blocking; shutdown).
    fn persist(&self) {
        if let Err(e) = self.write_file() {
            tracing::error!(file = %self.config_file().path().display(), error = %e, "cannot write config file");
        }
    }
}

/// How long callers wait for their change to reach the disk before answering anyway.
pub const WRITE_WAIT: Duration = Duration::from_secs(5);

/// Writes `table`'s file in the background whenever it changed, until `stop`; then once
/// more if anything is left.
pub async fn run_writer<T: Persisted>(table: Arc<T>, stop: CancellationToken) {
    loop {
        let woken = table.config_file().wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if let Some(generation) = table.config_file().pending() {
            if !write_once(&table, generation).await {
                // A failing disk: try again in a second, not in a tight loop.
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
            continue;
        }
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = woken => {}
        }
    }
    if let Some(generation) = table.config_file().pending() {
        write_once(&table, generation).await;
    }
}

async fn write_once<T: Persisted>(table: &Arc<T>, generation: u64) -> bool {
    let owner = table.clone();
    let path = table.config_file().path().to_owned();
    match tokio::task::spawn_blocking(move || owner.write_file()).await {
        Ok(Ok(())) => {
            table.config_file().mark_written(generation);
            true
        }
        Ok(Err(e)) => {
            tracing::error!(file = %path.display(), error = %e, "cannot write config file; retrying");
            false
        }
        Err(e) => {
            tracing::error!(file = %path.display(), error = %e, "config file writer failed");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    struct Table {
        file: ConfigFile,
        value: Mutex<u32>,
        writes: AtomicU64,
    }

    impl Persisted for Table {
        fn config_file(&self) -> &ConfigFile {
            &self.file
        }
        fn write_file(&self) -> std::io::Result<()> {
            self.writes.fetch_add(1, Ordering::Relaxed);
            store(self.file.path(), &*self.value.lock())
        }
    }

    #[tokio::test]
    async fn changes_are_written_in_the_background_and_awaited() {
        let dir = tempfile::tempdir().expect("tempdir");
        let table = Arc::new(Table {
            file: ConfigFile::new(dir.path().join("config").join("t.json")),
            value: Mutex::new(1),
            writes: AtomicU64::new(0),
        });
        let stop = CancellationToken::new();
        let writer = tokio::spawn(run_writer(table.clone(), stop.clone()));
        *table.value.lock() = 7;
        let generation = table.file.mark_changed();
        assert!(table.file.written(generation, WRITE_WAIT).await);
        let back: Option<u32> = load(table.file.path()).expect("read");
        assert_eq!(back, Some(7));
        *table.value.lock() = 9;
        table.file.mark_changed();
        stop.cancel();
        writer.await.expect("writer");
        let back: Option<u32> = load(table.file.path()).expect("read");
        assert_eq!(back, Some(9), "the last change is written at stop");
        assert!(table.writes.load(Ordering::Relaxed) >= 2);
    }
}
