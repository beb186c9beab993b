//! Certificate reload: the server's certificate, key and client CA files are polled (size,
//! modification time, inode); when one changes the configuration is rebuilt for new
//! connections. A file that does not load keeps the last good configuration, and says why.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::acceptor::ServerTls;

/// What a file looked like: `(len, mtime s, mtime ns, inode)`, `None` if unreadable.
type Fingerprint = Option<(u64, i64, i64, u64)>;

/// The fingerprints of the watched files, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fingerprints(Vec<Fingerprint>);

impl Fingerprints {
    /// Blocking (metadata calls): for start-up and for `spawn_blocking`.
    pub fn of(paths: &[&Path]) -> Self {
        Self(
            paths
                .iter()
                .map(|path| {
                    std::fs::metadata(path)
                        .ok()
                        .map(|m| (m.len(), m.mtime(), m.mtime_nsec(), m.ino()))
                })
                .collect(),
        )
    }
}

impl ServerTls {
    /// Polls the files until `stop`, rebuilding the configuration when they change.
    pub fn spawn_reloader(&self, stop: CancellationToken) -> JoinHandle<()> {
        let tls = self.clone();
        tokio::spawn(async move {
            let mut seen = tls.inner.loaded_from.clone();
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(tls.inner.reload_interval) => {}
                }
                let now = match tls.fingerprints().await {
                    Some(now) if now != seen => now,
                    _ => continue,
                };
                // Taken before the files are read: a write that lands during the rebuild
                // changes them again, and the next poll rebuilds once more.
                seen = now;
                tls.reload().await;
            }
        })
    }

    async fn fingerprints(&self) -> Option<Fingerprints> {
        let files = self.inner.files.clone();
        tokio::task::spawn_blocking(move || Fingerprints::of(&files.paths()))
            .await
            .ok()
    }

    async fn reload(&self) {
        let files = self.inner.files.clone();
        match tokio::task::spawn_blocking(move || files.build()).await {
            Ok(Ok(config)) => {
                *self.inner.current.write() = TlsAcceptor::from(config);
                tracing::info!(
                    event = "TLS_CERTIFICATE_RELOADED",
                    cert = %self.inner.files.cert.display(),
                    "TLS files changed; new connections use them"
                );
            }
            Ok(Err(e)) => tracing::warn!(
                error = %e,
                "TLS files changed but do not load; keeping the last good certificate"
            ),
            Err(e) => tracing::warn!(error = %e, "TLS reload task failed"),
        }
    }
}
