//! Durable Raft storage under `controllerStorePath`: the log and vote file, and snapshots.

pub mod log;
pub mod records;
pub mod snapshot;

/// An I/O job run on tokio's blocking pool, never on a runtime worker.
pub(crate) async fn blocking<T, F>(job: F) -> std::io::Result<T>
where
    F: FnOnce() -> std::io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| std::io::Error::other(format!("storage task failed: {e}")))?
}
