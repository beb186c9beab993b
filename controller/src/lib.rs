//! StellMQ's controller: RocketMQ 5's controller mode on Raft (openraft).
//!
//! A group of controllers replicates, for every broker set, its members and their ids, the
//! master, the master epoch and the SyncStateSet ([`state`]). Brokers and tools talk to it
//! with RocketMQ's controller requests ([`processor`]); the controllers talk Raft to each
//! other over the same port ([`network`]). The log and snapshots are on disk ([`store`]).
//! The leader keeps broker heartbeats ([`liveness`]) and elects a new master when one dies
//! ([`elect`], [`tasks`]).
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod auth;
pub mod config;
pub mod elect;
pub mod liveness;
pub mod network;
pub mod node;
pub mod peer_auth;
pub mod processor;
pub mod raft_types;
pub mod state;
pub mod state_machine;
pub mod store;
pub mod tasks;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use openraft::{BasicNode, SnapshotPolicy};
use parking_lot::RwLock;
use stellmq_remoting::net::{
    ClientConfig, RemotingClient, RemotingServer, ServerConfig, ServerHandle,
};
use thiserror::Error;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::ControllerConfig;
pub use node::ControllerNode;

#[derive(Debug, Error)]
pub enum ControllerError {
    #[error("controller config: {0}")]
    Config(#[from] stellmq_config::ConfigError),
    #[error("controller store {path}: {source}")]
    Store {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("raft: {0}")]
    Raft(String),
}

/// A running controller; [`ControllerHandle::shutdown`] stops it.
pub struct ControllerHandle {
    server: ServerHandle,
    node: Arc<ControllerNode>,
    stop: CancellationToken,
}

impl ControllerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    pub fn node(&self) -> &Arc<ControllerNode> {
        &self.node
    }

    /// Stops serving, stops Raft and closes connections.
    pub async fn shutdown(self) {
        self.stop.cancel();
        self.server.shutdown().await;
        if let Err(e) = self.node.raft.shutdown().await {
            tracing::warn!(error = %e, "raft shutdown");
        }
        self.node.client.shutdown().await;
        tracing::info!(node = %self.node.self_peer.name, "CONTROLLER_STOPPED");
    }
}

fn raft_config(config: &ControllerConfig) -> Result<openraft::Config, ControllerError> {
    let raft = openraft::Config {
        cluster_name: config.controller_dleger_group.clone(),
        heartbeat_interval: 250,
        election_timeout_min: 1_000,
        election_timeout_max: 2_000,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(config.snapshot_every_entries.max(1)),
        max_in_snapshot_log_to_keep: 0,
        snapshot_max_chunk_size: 512 * 1024,
        ..Default::default()
    };
    raft.validate()
        .map_err(|e| ControllerError::Raft(e.to_string()))
}

/// Starts a controller listening on its own peer address (`bindAddress` and the port of
/// `controllerDLegerSelfId` in `controllerDLegerPeers`).
pub async fn start(config: ControllerConfig) -> Result<ControllerHandle, ControllerError> {
    config.validate()?;
    let port = config
        .self_peer()?
        .addr
        .rsplit(':')
        .next()
        .unwrap_or("0")
        .to_owned();
    let addr = format!("{}:{port}", config.bind_address);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|source| ControllerError::Bind { addr, source })?;
    start_on(config, listener).await
}

/// Starts a controller on an already bound listener (tests bind port 0 first).
pub async fn start_on(
    config: ControllerConfig,
    listener: TcpListener,
) -> Result<ControllerHandle, ControllerError> {
    config.validate()?;
    let peers = config.peers()?;
    let self_peer = config.self_peer()?;
    let dir = config.store_dir().join("raft");
    let store_error = |source| ControllerError::Store {
        path: dir.display().to_string(),
        source,
    };
    let log = store::log::LogStore::open(&dir).map_err(store_error)?;
    let machine = state_machine::StateMachineStore::open(store::snapshot::SnapshotStore::new(&dir))
        .map_err(store_error)?;
    let state = machine.shared_state();
    let client = Arc::new(RemotingClient::new(ClientConfig::default()));
    let peer_auth = Arc::new(peer_auth::PeerAuth::new(
        &config.controller_raft_auth_secret,
    ));
    if peers.len() > 1 && !peer_auth.enabled() {
        tracing::warn!(
            "controllerRaftAuthSecret is not set: any host that reaches this port can take part in the controllers' Raft group"
        );
    }
    let raft = openraft::Raft::new(
        self_peer.node_id,
        Arc::new(raft_config(&config)?),
        network::Network::new(client.clone(), self_peer.node_id, peer_auth.clone()),
        log,
        machine,
    )
    .await
    .map_err(|e| ControllerError::Raft(e.to_string()))?;
    initialize(&raft, &peers).await?;
    let node = Arc::new(ControllerNode {
        raft,
        peer_auth,
        state,
        config: RwLock::new(config),
        peers,
        self_peer,
        liveness: liveness::Liveness::default(),
        client,
        write_lock: tokio::sync::Mutex::new(()),
        scan_now: tokio::sync::Notify::new(),
    });
    let mut server = RemotingServer::new(ServerConfig {
        max_frame_size: network::MAX_RAFT_BODY + 1024 * 1024,
        idle_timeout: Duration::from_secs(120),
        ..ServerConfig::default()
    });
    let auth = controller_auth(&node)?;
    processor::register(&mut server, &node, auth);
    server.add_listener(Arc::new(tasks::BrokerChannelWatch(node.clone())));
    let server = server
        .start_on(listener)
        .map_err(|source| ControllerError::Bind {
            addr: node.self_peer.addr.clone(),
            source,
        })?;
    let stop = CancellationToken::new();
    tokio::spawn(tasks::follow_leadership(node.clone(), stop.clone()));
    tokio::spawn(tasks::scan_inactive_masters(node.clone(), stop.clone()));
    tracing::info!(node = %node.self_peer.name, addr = %server.local_addr(), peers = %node.config.read().peers_text(), "CONTROLLER_STARTED");
    Ok(ControllerHandle { server, node, stop })
}

/// ACL 2.0's check of the controller's requests, when authenticationEnabled or
/// authorizationEnabled.
fn controller_auth(
    node: &Arc<ControllerNode>,
) -> Result<Option<Arc<auth::ControllerAuth>>, ControllerError> {
    let config = node.config.read().clone();
    if !(config.authentication_enabled || config.authorization_enabled) {
        return Ok(None);
    }
    let inner =
        config
            .inner_credentials()
            .map_err(|reason| stellmq_config::ConfigError::Rejected {
                key: "innerClientAuthenticationCredentials".into(),
                reason,
            })?;
    let auth =
        auth::ControllerAuth::new(&config.init_authentication_user, inner, node.state.clone())
            .map_err(|reason| stellmq_config::ConfigError::Rejected {
                key: "initAuthenticationUser".into(),
                reason,
            })?;
    tracing::info!(
        event = "AUTH_ENABLED",
        "controller requests need a signed ACL 2.0 super user"
    );
    Ok(Some(Arc::new(auth)))
}

/// A fresh store joins the configured group; a store that has a membership keeps it.
async fn initialize(
    raft: &raft_types::Raft,
    peers: &[config::Peer],
) -> Result<(), ControllerError> {
    if raft
        .is_initialized()
        .await
        .map_err(|e| ControllerError::Raft(e.to_string()))?
    {
        return Ok(());
    }
    let members: BTreeMap<u64, BasicNode> = peers
        .iter()
        .map(|p| (p.node_id, BasicNode::new(&p.addr)))
        .collect();
    match raft.initialize(members).await {
        Ok(()) => Ok(()),
        Err(e) if e.api_error().is_some() => {
            tracing::debug!(error = %e, "raft already initialized");
            Ok(())
        }
        Err(e) => Err(ControllerError::Raft(e.to_string())),
    }
}
