//! Registration with every name server: at start, every `registerNameServerPeriod` (30 s),
//! at once after topic changes, and unregistration at shutdown (protocol.md 13.1).
//!
//! What is sent follows what changed (issue #38): after topic changes a master sends the
//! changed topics only, to each name server that still holds its last registration; the
//! periodic round sends the whole table (`forceRegister=true`, RocketMQ's default) or,
//! with `forceRegister=false`, asks each name server for the version it holds and sends
//! the table only where it differs, so a broker with 100,000 unchanged topics does not
//! resend them every 30 s.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::{
    fastjson, DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, QueryDataVersionRequestHeader, RegisterBrokerRequestHeader,
    UnregisterBrokerRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use tokio_util::sync::CancellationToken;

use crate::context::BrokerIdentity;
use crate::ha::HaSlave;
use crate::settings::LiveConfig;
use crate::topic::TopicConfigManager;

pub struct Registrar {
    client: RemotingClient,
    identity: Arc<BrokerIdentity>,
    config: Arc<LiveConfig>,
    topics: Arc<TopicConfigManager>,
    /// On a slave: told the master's HA address each name server reports.
    ha_slave: Option<Arc<HaSlave>>,
    /// On a slave: the master's main address, for metadata sync.
    master_addr: RwLock<Option<String>>,
    /// Per name server, the data version it last accepted from this broker (forgotten
    /// when a registration there fails).
    accepted: Mutex<HashMap<String, DataVersion>>,
}

/// What one round of registration sends.
enum Round {
    /// The whole table everywhere.
    Full,
    /// This registration of the changed topics where the name server holds the rest;
    /// elsewhere the whole table.
    Changes(RemotingCommand, DataVersion),
    /// The whole table where the name server does not hold the current version.
    IfChanged,
}

impl Registrar {
    /// `client`: settings of the connections to the name servers (TLS among them).
    pub fn new(
        client: ClientConfig,
        identity: Arc<BrokerIdentity>,
        config: Arc<LiveConfig>,
        topics: Arc<TopicConfigManager>,
        ha_slave: Option<Arc<HaSlave>>,
    ) -> Self {
        Self {
            client: RemotingClient::new(client),
            identity,
            config,
            topics,
            ha_slave,
            master_addr: RwLock::new(None),
            accepted: Mutex::new(HashMap::new()),
        }
    }

    /// The version name servers get: in controller mode the state version is the master
    /// epoch (RocketMQ 5's rule), so name servers keep the route of the newest master when
    /// a deposed one still registers.
    fn registered_version(&self, mut version: DataVersion) -> DataVersion {
        let role = &self.identity.role;
        if role.controller_mode() {
            version.state_version = i64::from(role.master_epoch().max(0));
        }
        version
    }

    /// REGISTER_BROKER with `topics`, and the version it carries.
    fn request(&self, mut topics: TopicConfigSerializeWrapper) -> (RemotingCommand, DataVersion) {
        let compressed = self.config.read().compressed_register;
        topics.data_version = self.registered_version(topics.data_version);
        let version = topics.data_version;
        let body = RegisterBrokerBody {
            topic_config_serialize_wrapper: topics,
            filter_server_list: Vec::new(),
        };
        let bytes = if compressed {
            body.encode_compressed()
        } else {
            fastjson::encode(&body)
        };
        let header = RegisterBrokerRequestHeader {
            broker_name: self.identity.broker_name.clone(),
            broker_addr: self.identity.broker_addr.clone(),
            cluster_name: self.identity.cluster_name.clone(),
            ha_server_addr: self.identity.ha_server_addr.clone(),
            broker_id: self.identity.broker_id(),
            compressed: Some(compressed),
            body_crc32: Some((crc32(&bytes) & 0x7FFF_FFFF) as i32),
            heartbeat_timeout_millis: None,
            enable_acting_master: None,
        };
        let request =
            RemotingCommand::request(RequestCode::REGISTER_BROKER, header.to_ext_fields())
                .with_body(bytes);
        (request, version)
    }

    /// The whole table, as registered.
    fn full_request(&self) -> (RemotingCommand, DataVersion) {
        let perm = self.config.read().broker_permission;
        self.request(self.topics.wrapper(Some(perm)))
    }

    /// Controller mode: the master's main address (for metadata sync), as the controller
    /// named it.
    pub fn set_master_addr(&self, addr: Option<String>) {
        *self.master_addr.write() = addr;
    }

    /// Registers the whole table with every name server; returns how many accepted. A
    /// controller-mode broker without a role yet registers nowhere (RocketMQ 5 waits for
    /// the controller too).
    pub async fn register_all(&self) -> usize {
        self.register(Round::Full).await
    }

    /// After topic changes: a master sends only the changed topics to each name server
    /// that holds everything up to its last registration (RocketMQ's incremental
    /// registration); the rest get the whole table.
    async fn register_changes(&self) -> usize {
        match self.topics.take_unregistered() {
            (Some(topics), version) if !topics.is_empty() && self.identity.broker_id() == 0 => {
                let perm = self.config.read().broker_permission;
                let (request, version) =
                    self.request(self.topics.wrapper_of(version, &topics, Some(perm)));
                self.register(Round::Changes(request, version)).await
            }
            _ => self.register(Round::Full).await,
        }
    }

    /// Every `registerNameServerPeriod`: with `forceRegister` (RocketMQ's default) the
    /// whole table; without, a master asks each name server for the version it holds
    /// (QUERY_DATA_VERSION, which also keeps the broker alive there) and registers only
    /// where it differs. Slaves always register in full.
    pub async fn register_periodically(&self) -> usize {
        let force = self.config.read().force_register;
        if force || self.identity.broker_id() != 0 {
            self.register(Round::Full).await
        } else {
            self.register(Round::IfChanged).await
        }
    }

    async fn register(&self, round: Round) -> usize {
        if !self.identity.role.is_assigned() {
            return 0;
        }
        let (servers, timeout) = {
            let c = self.config.read();
            (
                c.namesrv_list(),
                Duration::from_millis(c.register_broker_timeout_mills),
            )
        };
        let mut full: Option<(RemotingCommand, DataVersion)> = None;
        let mut ok = 0;
        let mut ha_master = None;
        for ns in servers {
            let in_sync = match (&round, self.accepted.lock().get(&ns).copied()) {
                (Round::Full, _) | (_, None) => None,
                (Round::Changes(..), Some(held)) => Some(held),
                (Round::IfChanged, Some(held)) => {
                    let current = self.registered_version(self.topics.data_version());
                    (held == current).then_some(held)
                }
            };
            let in_sync = match in_sync {
                Some(held) => self.holds(&ns, held, timeout).await,
                None => false,
            };
            let (request, version) = match &round {
                Round::IfChanged if in_sync => {
                    ok += 1;
                    continue;
                }
                Round::Changes(request, version) if in_sync => (request.clone(), *version),
                _ => full.get_or_insert_with(|| self.full_request()).clone(),
            };
            match self.client.invoke_ok(&ns, request, timeout).await {
                Ok(response) => {
                    ok += 1;
                    self.accepted.lock().insert(ns.clone(), version);
                    if let Some(addr) = self.learn_master(&response) {
                        ha_master.get_or_insert(addr);
                    }
                    tracing::debug!(event = "BROKER_REGISTERED", namesrv = %ns, "registered with name server");
                }
                Err(e) => {
                    self.accepted.lock().remove(&ns);
                    tracing::warn!(namesrv = %ns, error = %e, "registration with name server failed")
                }
            }
        }
        if ok > 0 {
            self.follow_ha_master(ha_master);
        }
        ok
    }

    /// Whether name server `ns` holds exactly `version` of this broker (QUERY_DATA_VERSION;
    /// a name server that restarted or dropped the broker does not).
    async fn holds(&self, ns: &str, version: DataVersion, timeout: Duration) -> bool {
        let header = QueryDataVersionRequestHeader {
            broker_name: self.identity.broker_name.clone(),
            broker_addr: self.identity.broker_addr.clone(),
            cluster_name: self.identity.cluster_name.clone(),
            broker_id: self.identity.broker_id(),
        };
        let request =
            RemotingCommand::request(RequestCode::QUERY_DATA_VERSION, header.to_ext_fields())
                .with_body(fastjson::encode(&version));
        match self.client.invoke_ok(ns, request, timeout).await {
            Ok(response) => response.ext_fields.get("changed") == Some("false"),
            Err(e) => {
                tracing::debug!(namesrv = %ns, error = %e, "QUERY_DATA_VERSION failed");
                false
            }
        }
    }

    /// The master's main address as the name server last reported it (slaves only).
    pub fn master_addr(&self) -> Option<String> {
        self.master_addr.read().clone()
    }

    /// Notes the master's main address a registration response names; returns its HA
    /// address (protocol.md 9.1).
    fn learn_master(&self, response: &RemotingCommand) -> Option<String> {
        if let Some(addr) = response.ext_fields.get_non_empty("masterAddr") {
            *self.master_addr.write() = Some(addr.to_owned());
        }
        response
            .ext_fields
            .get_non_empty("haServerAddr")
            .map(str::to_owned)
    }

    /// A slave without `haMasterAddress` follows the master the name servers name. When none
    /// names one the group has no master now: the slave stops dialling the old address
    /// (another broker's master may listen there later) until one is named again.
    fn follow_ha_master(&self, ha_master: Option<String>) {
        let Some(slave) = &self.ha_slave else { return };
        if !self.config.read().ha_master_address.trim().is_empty() {
            return;
        }
        match ha_master {
            Some(addr) => slave.set_master(&addr),
            None => slave.clear_master(),
        }
    }

    pub async fn unregister_all(&self) {
        let servers = self.config.read().namesrv_list();
        let header = UnregisterBrokerRequestHeader {
            broker_name: self.identity.broker_name.clone(),
            broker_addr: self.identity.broker_addr.clone(),
            cluster_name: self.identity.cluster_name.clone(),
            broker_id: self.identity.broker_id(),
        };
        // All at once, briefly: a stop must not wait long on a name server that is gone
        // (its routes expire the broker anyway).
        let unregistrations = servers.into_iter().map(|ns| {
            let request =
                RemotingCommand::request(RequestCode::UNREGISTER_BROKER, header.to_ext_fields());
            async move {
                match self
                    .client
                    .invoke_ok(&ns, request, UNREGISTER_TIMEOUT)
                    .await
                {
                    Ok(_) => {
                        tracing::info!(event = "BROKER_UNREGISTERED", namesrv = %ns, "unregistered from name server")
                    }
                    Err(e) => tracing::warn!(namesrv = %ns, error = %e, "unregistration failed"),
                }
            }
        });
        join_all(unregistrations).await;
        self.client.shutdown().await;
    }

    /// The first registration, done before the broker reports itself started, so clients
    /// find its routes at once.
    pub async fn register_initially(&self) {
        let servers = self.config.read().namesrv_list();
        if servers.is_empty() {
            tracing::warn!(
                "namesrvAddr is empty: the broker will not register with any name server"
            );
        }
        let registered = self.register_all().await;
        tracing::info!(event = "BROKER_REGISTERED", name_servers = registered, of = servers.len(), addr = %self.identity.broker_addr, "initial registration");
    }

    /// Registers periodically and whenever topics change, until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let period = Duration::from_millis(
                self.config
                    .read()
                    .register_name_server_period
                    .clamp(10_000, 60_000),
            );
            let changed = tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(period) => false,
                _ = self.topics.register_now.notified() => true,
            };
            let round = async {
                if changed {
                    self.register_changes().await
                } else {
                    self.register_periodically().await
                }
            };
            // A stop does not wait for name servers that do not answer.
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = round => {}
            }
        }
    }
}

/// How long a stopping broker waits for a name server to take its unregistration.
const UNREGISTER_TIMEOUT: Duration = Duration::from_millis(1500);

/// Runs `futures` concurrently to their ends.
async fn join_all<F: std::future::Future<Output = ()>>(futures: impl Iterator<Item = F>) {
    let mut pending: Vec<_> = futures.map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        pending.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if pending.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(bytes);
    hasher.finalize()
}
