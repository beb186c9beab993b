//! Registration with every name server: at start, every `registerNameServerPeriod` (30 s),
//! at once after topic changes, and unregistration at shutdown (protocol.md 13.1).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::{fastjson, RegisterBrokerBody};
use stellmq_remoting::protocol::headers::{
    CommandHeader, RegisterBrokerRequestHeader, UnregisterBrokerRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use tokio_util::sync::CancellationToken;

use crate::config::BrokerConfig;
use crate::context::BrokerIdentity;
use crate::ha::HaSlave;
use crate::topic::TopicConfigManager;

pub struct Registrar {
    client: RemotingClient,
    identity: Arc<BrokerIdentity>,
    config: Arc<RwLock<BrokerConfig>>,
    topics: Arc<TopicConfigManager>,
    /// On a slave: told the master's HA address each name server reports.
    ha_slave: Option<Arc<HaSlave>>,
    /// On a slave: the master's main address, for metadata sync.
    master_addr: RwLock<Option<String>>,
}

impl Registrar {
    /// `client`: settings of the connections to the name servers (TLS among them).
    pub fn new(
        client: ClientConfig,
        identity: Arc<BrokerIdentity>,
        config: Arc<RwLock<BrokerConfig>>,
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
        }
    }

    fn request(&self) -> RemotingCommand {
        let config = self.config.read();
        let mut topics = self.topics.wrapper(Some(config.broker_permission));
        let role = &self.identity.role;
        if role.controller_mode() {
            // RocketMQ 5's rule: the state version is the master epoch, so name servers keep
            // the route of the newest master when a deposed one still registers.
            topics.data_version.state_version = i64::from(role.master_epoch().max(0));
        }
        let body = RegisterBrokerBody {
            topic_config_serialize_wrapper: topics,
            filter_server_list: Vec::new(),
        };
        let bytes = if config.compressed_register {
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
            compressed: Some(config.compressed_register),
            body_crc32: Some((crc32(&bytes) & 0x7FFF_FFFF) as i32),
            heartbeat_timeout_millis: None,
            enable_acting_master: None,
        };
        RemotingCommand::request(RequestCode::REGISTER_BROKER, header.to_ext_fields())
            .with_body(bytes)
    }

    /// Controller mode: the master's main address (for metadata sync), as the controller
    /// named it.
    pub fn set_master_addr(&self, addr: Option<String>) {
        *self.master_addr.write() = addr;
    }

    /// Registers with every name server; returns how many accepted. A controller-mode
    /// broker without a role yet registers nowhere (RocketMQ 5 waits for the controller too).
    pub async fn register_all(&self) -> usize {
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
        let mut ok = 0;
        let mut ha_master = None;
        for ns in servers {
            match self.client.invoke_ok(&ns, self.request(), timeout).await {
                Ok(response) => {
                    ok += 1;
                    if let Some(addr) = self.learn_master(&response) {
                        ha_master.get_or_insert(addr);
                    }
                    tracing::debug!(event = "BROKER_REGISTERED", namesrv = %ns, "registered with name server");
                }
                Err(e) => {
                    tracing::warn!(namesrv = %ns, error = %e, "registration with name server failed")
                }
            }
        }
        if ok > 0 {
            self.follow_ha_master(ha_master);
        }
        ok
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
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(period) => {}
                _ = self.topics.register_now.notified() => {}
            }
            // A stop does not wait for name servers that do not answer.
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.register_all() => {}
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
