//! An in-process name server on an ephemeral loopback port, keeping its files in a
//! temporary directory of its own.

use std::path::Path;

use stellmq_namesrv::{NamesrvConfig, NamesrvHandle};
use stellmq_remoting::net::tls::TlsConfig;

/// A name server configuration on `127.0.0.1`, port 0 (chosen by the system), with its KV
/// and config files in `dir`.
pub fn namesrv_config(dir: &Path) -> NamesrvConfig {
    NamesrvConfig {
        listen_port: 0,
        bind_address: "127.0.0.1".into(),
        kv_config_path: dir.join("kvConfig.json"),
        config_store_path: dir.join("namesrv.properties"),
        ..Default::default()
    }
}

/// A running in-process name server. Dropping it without [`NameServer::shutdown`] leaves it
/// serving until the tokio runtime ends; its directory is removed on drop.
pub struct NameServer {
    handle: Option<NamesrvHandle>,
    addr: String,
    config: NamesrvConfig,
    tls: TlsConfig,
    dir: tempfile::TempDir,
}

impl NameServer {
    /// Starts a name server with [`namesrv_config`].
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a name server with [`namesrv_config`] changed by `tweak`.
    pub async fn start_with(tweak: impl FnOnce(&mut NamesrvConfig)) -> Self {
        Self::start_configured(tweak, TlsConfig::default()).await
    }

    /// Starts a name server with [`namesrv_config`] and the TLS settings `tls`.
    pub async fn start_with_tls(tls: TlsConfig) -> Self {
        Self::start_configured(|_| {}, tls).await
    }

    async fn start_configured(tweak: impl FnOnce(&mut NamesrvConfig), tls: TlsConfig) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory for the name server");
        let mut config = namesrv_config(dir.path());
        tweak(&mut config);
        let handle = stellmq_namesrv::start_with_tls(config.clone(), tls.clone())
            .await
            .expect("the name server starts");
        Self {
            addr: handle.local_addr().to_string(),
            handle: Some(handle),
            config,
            tls,
            dir,
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn handle(&self) -> &NamesrvHandle {
        self.handle.as_ref().expect("the name server is running")
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &NamesrvConfig {
        &self.config
    }

    /// Its temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops it and starts a new one on the same configuration and files (on a new port).
    pub async fn restart(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.shutdown().await;
        }
        let handle = stellmq_namesrv::start_with_tls(self.config.clone(), self.tls.clone())
            .await
            .expect("the name server restarts");
        self.addr = handle.local_addr().to_string();
        self.handle = Some(handle);
    }

    /// Stops serving and removes its directory.
    pub async fn shutdown(mut self) {
        if let Some(handle) = self.handle.take() {
            handle.shutdown().await;
        }
    }
}
