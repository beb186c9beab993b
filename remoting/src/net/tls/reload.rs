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

/// What one look at the files did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reload {
    Unchanged,
    /// New connections use the changed files.
    Reloaded,
    /// The changed files do not load: the last good configuration stays.
    KeptLastGood,
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
                tls.reload_if_changed(&mut seen).await;
            }
        })
    }

    /// Rebuilds the configuration when the files no longer look as `seen` says.
    pub(super) async fn reload_if_changed(&self, seen: &mut Fingerprints) -> Reload {
        let now = match self.fingerprints().await {
            Some(now) if now != *seen => now,
            _ => return Reload::Unchanged,
        };
        // Taken before the files are read: a write that lands during the rebuild changes
        // them again, and the next poll rebuilds once more.
        *seen = now;
        self.reload().await
    }

    async fn fingerprints(&self) -> Option<Fingerprints> {
        let files = self.inner.files.clone();
        tokio::task::spawn_blocking(move || Fingerprints::of(&files.paths()))
            .await
            .ok()
    }

    async fn reload(&self) -> Reload {
        let files = self.inner.files.clone();
        match tokio::task::spawn_blocking(move || files.build()).await {
            Ok(Ok(config)) => {
                *self.inner.current.write() = TlsAcceptor::from(config);
                tracing::info!(
                    event = "TLS_CERTIFICATE_RELOADED",
                    cert = %self.inner.files.cert.display(),
                    "TLS files changed; new connections use them"
                );
                Reload::Reloaded
            }
            Ok(Err(e)) => {
                tracing::warn!(
                    error = %e,
                    "TLS files changed but do not load; keeping the last good certificate"
                );
                Reload::KeptLastGood
            }
            Err(e) => {
                tracing::warn!(error = %e, "TLS reload task failed");
                Reload::KeptLastGood
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::net::tls::{TlsConfig, TlsMode};

    fn write_certificate(cert: &Path, key: &Path) {
        let pair = rcgen::KeyPair::generate().expect("key");
        let issued = rcgen::CertificateParams::new(vec!["localhost".into()])
            .expect("params")
            .self_signed(&pair)
            .expect("cert");
        std::fs::write(cert, issued.pem()).expect("write the certificate");
        std::fs::write(key, pair.serialize_pem()).expect("write the key");
    }

    fn serving(tls: &ServerTls) -> Arc<rustls::ServerConfig> {
        tls.inner.current.read().config().clone()
    }

    #[tokio::test]
    async fn a_broken_file_keeps_the_last_good_certificate_and_a_good_one_replaces_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        write_certificate(&cert, &key);
        let tls = ServerTls::from_config(&TlsConfig {
            server_mode: TlsMode::Enforcing,
            server_cert_path: Some(cert.clone()),
            server_key_path: Some(key.clone()),
            ..TlsConfig::default()
        })
        .expect("loads")
        .expect("TLS is on");
        let mut seen = tls.inner.loaded_from.clone();
        let first = serving(&tls);
        assert_eq!(tls.reload_if_changed(&mut seen).await, Reload::Unchanged);

        std::fs::write(&cert, "not a certificate\n").expect("break the file");
        assert_eq!(tls.reload_if_changed(&mut seen).await, Reload::KeptLastGood);
        assert!(
            Arc::ptr_eq(&first, &serving(&tls)),
            "still the last good one"
        );
        assert_eq!(
            tls.reload_if_changed(&mut seen).await,
            Reload::Unchanged,
            "a broken file is not read again until it changes"
        );

        write_certificate(&cert, &key);
        assert_eq!(tls.reload_if_changed(&mut seen).await, Reload::Reloaded);
        assert!(!Arc::ptr_eq(&first, &serving(&tls)));
    }
}
