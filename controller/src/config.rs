//! Controller configuration: RocketMQ 5's `ControllerConfig` keys and the peer list.

use std::net::SocketAddr;
use std::path::PathBuf;

use stellmq_config::{properties_config, ConfigError};

fn default_store_path() -> PathBuf {
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join("DledgerController")
}

properties_config! {
    /// Keys and defaults as RocketMQ 5's `ControllerConfig`; unknown keys are ignored.
    pub struct ControllerConfig {
        /// Port of the remoting server when `controllerDLegerPeers` is empty (a single
        /// controller); with peers, the controller listens on its own peer address's port.
        listen_port: u16 = "listenPort" => 9878,
        /// Address to bind.
        bind_address: String = "bindAddress" => "0.0.0.0".to_owned(),
        /// Name of the controller group (shown by getControllerMetaData).
        controller_dleger_group: String = "controllerDLegerGroup" => "group1".to_owned(),
        /// The controllers, `id-host:port` separated by `;` (e.g.
        /// `n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858`). Every controller of a
        /// group must list the same peers in the same order.
        controller_dleger_peers: String = "controllerDLegerPeers" => String::new(),
        /// This controller's id among the peers (e.g. `n0`).
        controller_dleger_self_id: String = "controllerDLegerSelfId" => "n0".to_owned(),
        /// Directory of the Raft log, vote and snapshots.
        controller_store_path: PathBuf = "controllerStorePath" => default_store_path(),
        /// Kept for compatibility (`DLedger` or `jRaft`); StellMQ always runs openraft.
        controller_type: String = "controllerType" => "DLedger".to_owned(),
        /// Allow electing a replica outside the SyncStateSet (may lose acknowledged messages).
        enable_elect_unclean_master: bool = "enableElectUncleanMaster" => false,
        /// Send NOTIFY_BROKER_ROLE_CHANGED to every broker of a set whose master changed.
        notify_broker_role_changed: bool = "notifyBrokerRoleChanged" => true,
        /// How often (ms) the leader looks for masters whose heartbeats stopped.
        scan_not_active_broker_interval: u64 = "scanNotActiveBrokerInterval" => 5_000,
        /// How many times an election the controller starts itself is retried.
        elect_master_max_retry_count: u32 = "electMasterMaxRetryCount" => 3,
        /// Kept for compatibility: RocketMQ's DLedger segment size; the log here is one file.
        mapped_file_size: u64 = "mappedFileSize" => 1024 * 1024 * 1024,
        /// Answer read requests through Raft (always linearizable here); kept for compatibility.
        is_process_read_event: bool = "isProcessReadEvent" => false,
        /// Raft log entries after which a snapshot is taken (StellMQ key).
        snapshot_every_entries: u64 = "controllerSnapshotEveryEntries" => 1_000,
        /// A secret every controller of the group shares: Raft RPCs are signed with it and
        /// only signed ones are answered (StellMQ key; empty: unauthenticated, as RocketMQ).
        /// Never shown by GET_CONTROLLER_CONFIG.
        controller_raft_auth_secret: String = "controllerRaftAuthSecret" => String::new(),
        /// ACL 2.0: every controller request must be signed by an enabled super user
        /// (brokers sign with their innerClientAuthenticationCredentials).
        authentication_enabled: bool = "authenticationEnabled" => false,
        /// ACL 2.0, as authenticationEnabled (either turns the check on).
        authorization_enabled: bool = "authorizationEnabled" => false,
        /// A super user known to the controller itself: `{"username":"...","password":"..."}`.
        /// Never shown by GET_CONTROLLER_CONFIG.
        init_authentication_user: String = "initAuthenticationUser" => String::new(),
        /// A super user known to the controller itself, who also signs its lookups of users
        /// on the brokers: `{"accessKey":"...","secretKey":"..."}`. Never shown.
        inner_client_authentication_credentials: String = "innerClientAuthenticationCredentials" => String::new(),
        /// Keys UPDATE_CONTROLLER_CONFIG may not change, `;`-separated.
        config_black_list: String = "configBlackList" => "configBlackList;configStorePath;controllerStorePath;controllerDLegerPeers;controllerDLegerSelfId;controllerDLegerGroup;listenPort;bindAddress;controllerRaftAuthSecret;authenticationEnabled;authorizationEnabled;initAuthenticationUser;innerClientAuthenticationCredentials".to_owned(),
    }
}

/// Keys GET_CONTROLLER_CONFIG never shows.
pub const SECRET_KEYS: &[&str] = &[
    "controllerRaftAuthSecret",
    "initAuthenticationUser",
    "innerClientAuthenticationCredentials",
];

impl ControllerConfig {
    /// `innerClientAuthenticationCredentials`, parsed; `None` when not set.
    pub fn inner_credentials(
        &self,
    ) -> Result<Option<stellmq_remoting::protocol::signature::SessionCredentials>, String> {
        stellmq_remoting::protocol::signature::parse_inner_credentials(
            &self.inner_client_authentication_credentials,
        )
        .map_err(|reason| format!("innerClientAuthenticationCredentials: {reason}"))
    }
}

/// One controller of the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The configured id (`n0`).
    pub name: String,
    /// Raft node id: the position in the peer list.
    pub node_id: u64,
    /// `host:port` of its remoting server.
    pub addr: String,
}

impl ControllerConfig {
    /// Whether a runtime config update may change `key`.
    pub fn is_blacklisted(&self, key: &str) -> bool {
        self.config_black_list.split(';').any(|k| k.trim() == key)
    }

    /// `controllerStorePath` with a leading `~/` as the user's home (as the conf samples use).
    pub fn store_dir(&self) -> PathBuf {
        let path = &self.controller_store_path;
        match (path.strip_prefix("~"), std::env::var_os("HOME")) {
            (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
            _ => path.clone(),
        }
    }

    /// The peers, or this controller alone on `listenPort` when none are configured.
    pub fn peers(&self) -> Result<Vec<Peer>, ConfigError> {
        if self.controller_dleger_peers.trim().is_empty() {
            return Ok(vec![Peer {
                name: self.controller_dleger_self_id.clone(),
                node_id: 0,
                addr: format!("127.0.0.1:{}", self.listen_port),
            }]);
        }
        let mut peers: Vec<Peer> = Vec::new();
        for (index, item) in self
            .controller_dleger_peers
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .enumerate()
        {
            let (name, addr) = item
                .split_once('-')
                .ok_or_else(|| peer_error(format!("peer '{item}' is not id-host:port")))?;
            if addr.parse::<SocketAddr>().is_err() {
                return Err(peer_error(format!("peer '{item}' has no valid ip:port")));
            }
            if peers.iter().any(|p| p.name == name) {
                return Err(peer_error(format!("peer id '{name}' appears twice")));
            }
            peers.push(Peer {
                name: name.to_owned(),
                node_id: index as u64,
                addr: addr.to_owned(),
            });
        }
        Ok(peers)
    }

    /// This controller among the peers.
    pub fn self_peer(&self) -> Result<Peer, ConfigError> {
        self.peers()?
            .into_iter()
            .find(|p| p.name == self.controller_dleger_self_id)
            .ok_or_else(|| {
                peer_error(format!(
                    "controllerDLegerSelfId '{}' is not among the peers",
                    self.controller_dleger_self_id
                ))
            })
    }

    /// The peers as `id-host:port;...`, as getControllerMetaData shows them.
    pub fn peers_text(&self) -> String {
        self.peers()
            .map(|peers| {
                peers
                    .iter()
                    .map(|p| format!("{}-{}", p.name, p.addr))
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .unwrap_or_default()
    }

    /// Checks what start needs.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.self_peer()?;
        if self.scan_not_active_broker_interval == 0 {
            return Err(ConfigError::Rejected {
                key: "scanNotActiveBrokerInterval".into(),
                reason: "must be positive".into(),
            });
        }
        Ok(())
    }
}

fn peer_error(reason: String) -> ConfigError {
    ConfigError::Rejected {
        key: "controllerDLegerPeers".into(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_in_order() {
        let config = ControllerConfig {
            controller_dleger_peers: "n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858".into(),
            controller_dleger_self_id: "n1".into(),
            ..ControllerConfig::default()
        };
        let me = config.self_peer().expect("self");
        assert_eq!((me.node_id, me.addr.as_str()), (1, "127.0.0.1:9868"));
        assert_eq!(config.peers().expect("peers").len(), 3);
        assert!(config.validate().is_ok());
    }

    #[test]
    fn bad_peers_are_rejected() {
        for peers in [
            "n0:127.0.0.1:1",
            "n0-nothing",
            "n0-127.0.0.1:1;n0-127.0.0.1:2",
        ] {
            let config = ControllerConfig {
                controller_dleger_peers: peers.into(),
                ..ControllerConfig::default()
            };
            assert!(config.validate().is_err(), "{peers}");
        }
        let config = ControllerConfig {
            controller_dleger_peers: "n0-127.0.0.1:1".into(),
            controller_dleger_self_id: "n5".into(),
            ..ControllerConfig::default()
        };
        assert!(config.validate().is_err());
    }
}
