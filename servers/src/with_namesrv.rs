//! `mqbroker --with-namesrv`: a name server and a broker in one process, for laptops and CI.
//!
//! The name server listens on the broker's `bindAddress` (port [`WithNamesrvOptions::namesrv_port`])
//! and keeps its files under `<storePathRootDir>/namesrv/`; the broker registers with it, and
//! also with any name server its `namesrvAddr` lists. Without a `storePathRootDir`, both store
//! in a temporary directory that [`WithNamesrv::shutdown`] removes.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use stellmq_namesrv::{NamesrvConfig, NamesrvError, NamesrvHandle};
use thiserror::Error;

use stellmq_broker::{BrokerError, BrokerHandle, BrokerStartConfig};

/// RocketMQ's name server port, the in-process name server's default.
pub const DEFAULT_NAMESRV_PORT: u16 = 9876;

/// `mappedFileSizeCommitLog` of `mqbroker --with-namesrv`'s temporary store when its
/// configuration sets none (temporary directories are often in memory).
pub const TEMP_STORE_COMMIT_LOG_FILE_SIZE: usize = 64 * 1024 * 1024;

/// How the in-process name server and the store are set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WithNamesrvOptions {
    /// The name server's port (0: any free port, reported in the boot line).
    pub namesrv_port: u16,
    /// Store in a temporary directory removed at shutdown (no `storePathRootDir` was given).
    pub temp_store: bool,
}

impl Default for WithNamesrvOptions {
    fn default() -> Self {
        Self {
            namesrv_port: DEFAULT_NAMESRV_PORT,
            temp_store: true,
        }
    }
}

#[derive(Debug, Error)]
pub enum WithNamesrvError {
    #[error("cannot create a temporary store: {0}")]
    TempStore(#[source] std::io::Error),
    #[error("name server: {0}")]
    Namesrv(#[from] NamesrvError),
    #[error(transparent)]
    Broker(#[from] BrokerError),
}

/// A running name server and broker (see the module documentation).
pub struct WithNamesrv {
    broker: BrokerHandle,
    namesrv: NamesrvHandle,
    namesrv_addr: String,
    temp_store: Option<tempfile::TempDir>,
}

/// Starts the name server, then the broker registering with it.
pub async fn start(
    mut config: BrokerStartConfig,
    options: WithNamesrvOptions,
) -> Result<WithNamesrv, WithNamesrvError> {
    let temp_store = if options.temp_store {
        let dir = tempfile::Builder::new()
            .prefix("stellmq-store-")
            .tempdir()
            .map_err(WithNamesrvError::TempStore)?;
        tracing::info!(
            store = %dir.path().display(),
            "no storePathRootDir given: storing in a temporary directory, removed at exit"
        );
        config.store.store_path_root_dir = dir.path().to_owned();
        Some(dir)
    } else {
        None
    };
    let namesrv_config = namesrv_config(&config, options.namesrv_port);
    let namesrv = stellmq_namesrv::start_with_tls(namesrv_config, config.tls.clone()).await?;
    let namesrv_addr = registration_addr(namesrv.local_addr());
    tracing::info!(
        "The Name Server boot success. serializeType=JSON, address {}",
        namesrv.local_addr()
    );
    config.broker.namesrv_addr = with_own_namesrv(&config.broker.namesrv_addr, &namesrv_addr);
    let broker = match stellmq_broker::start(config).await {
        Ok(broker) => broker,
        Err(e) => {
            namesrv.shutdown().await;
            return Err(e.into());
        }
    };
    Ok(WithNamesrv {
        broker,
        namesrv,
        namesrv_addr,
        temp_store,
    })
}

impl WithNamesrv {
    pub fn broker(&self) -> &BrokerHandle {
        &self.broker
    }

    /// The in-process name server's address, as the broker registers with it and clients dial it.
    pub fn namesrv_addr(&self) -> &str {
        &self.namesrv_addr
    }

    /// The temporary store directory, if one is used.
    pub fn temp_store(&self) -> Option<&Path> {
        self.temp_store.as_ref().map(|dir| dir.path())
    }

    /// Stops the broker (it unregisters and closes its store), then the name server, then
    /// removes the temporary store.
    pub async fn shutdown(self) {
        self.broker.shutdown().await;
        self.namesrv.shutdown().await;
        if let Some(dir) = self.temp_store {
            let path = dir.path().to_owned();
            match dir.close() {
                Ok(()) => tracing::info!(store = %path.display(), "temporary store removed"),
                Err(e) => tracing::warn!(
                    store = %path.display(),
                    error = %e,
                    "cannot remove the temporary store"
                ),
            }
        }
    }
}

/// The name server's configuration: the broker's bind address, `port`, files under
/// `<storePathRootDir>/namesrv/`.
fn namesrv_config(config: &BrokerStartConfig, port: u16) -> NamesrvConfig {
    let dir: PathBuf = config.store.store_path_root_dir.join("namesrv");
    NamesrvConfig {
        listen_port: port,
        bind_address: config.broker.bind_address.clone(),
        kv_config_path: dir.join("kvConfig.json"),
        config_store_path: dir.join("namesrv.properties"),
        ..NamesrvConfig::default()
    }
}

/// The address to dial a server listening on `local`: loopback when it listens on every
/// interface.
fn registration_addr(local: SocketAddr) -> String {
    let ip = if local.ip().is_unspecified() {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        local.ip()
    };
    SocketAddr::new(ip, local.port()).to_string()
}

/// `namesrvAddr` with `own` first, unless it is already listed.
fn with_own_namesrv(namesrv_addr: &str, own: &str) -> String {
    let others: Vec<&str> = namesrv_addr
        .split(';')
        .map(str::trim)
        .filter(|addr| !addr.is_empty() && *addr != own)
        .collect();
    std::iter::once(own)
        .chain(others)
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_name_server_comes_first_once() {
        assert_eq!(with_own_namesrv("", "127.0.0.1:9876"), "127.0.0.1:9876");
        assert_eq!(
            with_own_namesrv("10.0.0.1:9876; 127.0.0.1:9876;", "127.0.0.1:9876"),
            "127.0.0.1:9876;10.0.0.1:9876"
        );
    }

    #[test]
    fn wildcard_listeners_are_dialled_on_loopback() {
        let any: SocketAddr = "0.0.0.0:9876".parse().expect("address");
        assert_eq!(registration_addr(any), "127.0.0.1:9876");
        let one: SocketAddr = "10.1.2.3:9877".parse().expect("address");
        assert_eq!(registration_addr(one), "10.1.2.3:9877");
    }
}
