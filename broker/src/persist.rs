//! The broker's JSON config files under `storePathRootDir/config` (fastjson's pretty
//! dialect, written atomically with a `.bak`, read back with either dialect), and the
//! write-behind of the tables clients change, which live in the [`MetadataStore`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use stellmq_config::write_atomically;
use stellmq_remoting::protocol::body::fastjson;

use parking_lot::Mutex;
#[cfg(doc)]
use stellmq_metadata::MetadataStore;
use stellmq_metadata::{Changes, MetadataError};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

pub fn config_path(store_root: &Path, name: &str) -> PathBuf {
    store_root.join("config").join(name)
}

/// Loads a config file (or its backup); `None` when neither exists or parses.
pub use stellmq_metadata::load_json as load;

/// Writes a config file atomically (blocking: call it from a blocking thread).
pub fn store<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let text = fastjson::encode_with(value, fastjson::Style::FastjsonPretty);
    write_atomically(path, text.as_bytes())
}

/// Changes of one metadata table on their way to the [`MetadataStore`]: a change queues
/// its key and bumps a generation; the writer ([`run_writer`]) commits what is queued in
/// one transaction on a blocking thread, so no request does file I/O on the runtime, a
/// burst of changes costs one commit, and a commit costs what changed, not the table.
/// Callers that answer "created" wait for their generation ([`WriteBehind::written`]).
pub struct WriteBehind<V> {
    name: &'static str,
    /// Keys changed since the last commit: the new value, or `None` when removed.
    pending: Mutex<BTreeMap<String, Option<V>>>,
    /// Generation of the latest change.
    changed: AtomicU64,
    /// Generation known to be committed.
    written: watch::Sender<u64>,
    wake: Notify,
}

impl<V> WriteBehind<V> {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            pending: Mutex::new(BTreeMap::new()),
            changed: AtomicU64::new(0),
            written: watch::Sender::new(0),
            wake: Notify::new(),
        }
    }

    /// Queues `key`'s new value (`None`: removed); returns the change's generation.
    pub fn changed(&self, key: String, value: Option<V>) -> u64 {
        // Queued before the generation moves, so the writer that sees the generation
        // also finds the change.
        self.pending.lock().insert(key, value);
        let generation = self.changed.fetch_add(1, Ordering::AcqRel) + 1;
        self.wake.notify_one();
        generation
    }

    /// The latest change's generation.
    pub fn generation(&self) -> u64 {
        self.changed.load(Ordering::Acquire)
    }

    /// Takes every queued change, for one commit.
    pub fn take(&self) -> Changes<V> {
        std::mem::take(&mut *self.pending.lock())
            .into_iter()
            .collect()
    }

    /// Queues again changes whose commit failed, unless the key changed since.
    pub fn restore(&self, changes: Changes<V>) {
        let mut pending = self.pending.lock();
        for (key, value) in changes {
            pending.entry(key).or_insert(value);
        }
    }

    /// Waits until generation `generation` is committed; false after `timeout` (the change
    /// stays in memory and the writer keeps trying).
    pub async fn written(&self, generation: u64, timeout: Duration) -> bool {
        let mut rx = self.written.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|w| *w >= generation))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Commits what is queued with `commit` (blocking), queueing it again if that fails.
    pub fn commit_with(
        &self,
        commit: impl FnOnce(&[(String, Option<V>)]) -> Result<(), MetadataError>,
    ) -> Result<(), MetadataError> {
        let changes = self.take();
        if changes.is_empty() {
            return Ok(());
        }
        match commit(&changes) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.restore(changes);
                Err(e)
            }
        }
    }
}

/// The changes that turn `old` into `new`.
pub fn diff<V: PartialEq + Clone>(
    old: &BTreeMap<String, V>,
    new: &BTreeMap<String, V>,
) -> Changes<V> {
    let removed = old
        .keys()
        .filter(|key| !new.contains_key(*key))
        .map(|key| (key.clone(), None));
    let changed = new
        .iter()
        .filter(|(key, value)| old.get(*key) != Some(*value))
        .map(|(key, value)| (key.clone(), Some(value.clone())));
    removed.chain(changed).collect()
}

/// The writer's view of a [`WriteBehind`], whatever its values.
pub trait Generations: Send + Sync {
    fn name(&self) -> &'static str;
    fn pending(&self) -> Option<u64>;
    fn mark_written(&self, generation: u64);
    fn notified(&self) -> tokio::sync::futures::Notified<'_>;
}

impl<V: Send> Generations for WriteBehind<V> {
    fn name(&self) -> &'static str {
        self.name
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

    fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }
}

/// A table with a [`WriteBehind`].
pub trait Persisted: Send + Sync + 'static {
    fn write_behind(&self) -> &dyn Generations;
    /// Commits the queued changes (blocking).
    fn write_pending(&self) -> Result<(), MetadataError>;

    /// Commits now, logging a failure (blocking; shutdown).
    fn persist(&self) {
        if let Err(e) = self.write_pending() {
            tracing::error!(table = self.write_behind().name(), error = %e, "cannot write metadata");
        }
    }
}

/// How long callers wait for their change to reach the disk before answering anyway.
pub const WRITE_WAIT: Duration = Duration::from_secs(5);

/// Commits `table`'s changes in the background whenever it changed, until `stop`; then
/// once more if anything is left.
pub async fn run_writer<T: Persisted>(table: Arc<T>, stop: CancellationToken) {
    loop {
        let woken = table.write_behind().notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if let Some(generation) = table.write_behind().pending() {
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
    if let Some(generation) = table.write_behind().pending() {
        write_once(&table, generation).await;
    }
}

async fn write_once<T: Persisted>(table: &Arc<T>, generation: u64) -> bool {
    let owner = table.clone();
    let name = table.write_behind().name();
    match tokio::task::spawn_blocking(move || owner.write_pending()).await {
        Ok(Ok(())) => {
            table.write_behind().mark_written(generation);
            true
        }
        Ok(Err(e)) => {
            tracing::error!(table = name, error = %e, "cannot write metadata; retrying");
            false
        }
        Err(e) => {
            tracing::error!(table = name, error = %e, "metadata writer failed");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table whose commits land in a map, and fail while `failing` is set.
    struct Table {
        writes: WriteBehind<u32>,
        committed: Mutex<BTreeMap<String, u32>>,
        commits: AtomicU64,
        failing: std::sync::atomic::AtomicBool,
    }

    impl Persisted for Table {
        fn write_behind(&self) -> &dyn Generations {
            &self.writes
        }
        fn write_pending(&self) -> Result<(), MetadataError> {
            self.writes.commit_with(|changes| {
                if self.failing.load(Ordering::Acquire) {
                    return Err(MetadataError::Closed);
                }
                self.commits.fetch_add(1, Ordering::Relaxed);
                let mut committed = self.committed.lock();
                for (key, value) in changes {
                    match value {
                        Some(value) => committed.insert(key.clone(), *value),
                        None => committed.remove(key),
                    };
                }
                Ok(())
            })
        }
    }

    fn table() -> Arc<Table> {
        Arc::new(Table {
            writes: WriteBehind::new("t"),
            committed: Mutex::new(BTreeMap::new()),
            commits: AtomicU64::new(0),
            failing: Default::default(),
        })
    }

    #[tokio::test]
    async fn changes_are_committed_in_the_background_and_awaited() {
        let table = table();
        let stop = CancellationToken::new();
        let writer = tokio::spawn(run_writer(table.clone(), stop.clone()));
        let generation = table.writes.changed("a".into(), Some(7));
        assert!(table.writes.written(generation, WRITE_WAIT).await);
        assert_eq!(table.committed.lock().get("a"), Some(&7));
        table.writes.changed("b".into(), Some(9));
        table.writes.changed("a".into(), None);
        stop.cancel();
        writer.await.expect("writer");
        let committed = table.committed.lock().clone();
        assert_eq!(
            committed,
            BTreeMap::from([("b".to_owned(), 9)]),
            "the last changes are committed at stop"
        );
    }

    #[test]
    fn a_failed_commit_keeps_its_changes_but_not_over_newer_ones() {
        let table = table();
        table.writes.changed("a".into(), Some(1));
        table.writes.changed("b".into(), Some(1));
        table.failing.store(true, Ordering::Release);
        assert!(table.write_pending().is_err());
        table.writes.changed("a".into(), Some(2));
        table.failing.store(false, Ordering::Release);
        table.write_pending().expect("commit");
        let committed = table.committed.lock().clone();
        assert_eq!(
            committed,
            BTreeMap::from([("a".to_owned(), 2), ("b".to_owned(), 1)])
        );
        table.write_pending().expect("nothing left");
        assert_eq!(
            table.commits.load(Ordering::Relaxed),
            1,
            "an empty queue commits nothing"
        );
    }
}
