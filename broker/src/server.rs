//! Start-up and shutdown: the shared state ([`crate::state`]), the request table
//! ([`crate::routes`]) on the remoting server, then the background services; shutdown
//! stops them in order.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_remoting::net::tls::{ClientTls, ServerTls, TlsError};
use stellmq_remoting::net::{
    Channel, ClientConfig, ConnectionListener, RemotingServer, ServerConfig, ServerHandle,
};
use stellmq_store::{MessageStore, StoreError};
use thiserror::Error;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clients::{ConsumerManager, ProducerManager};
use crate::config::BrokerStartConfig;
use crate::ha::{HaMaster, HaSlave};
use crate::offset::ConsumerOffsetManager;
use crate::persist::{self, Persisted};
use crate::processor::pop::revive;
use crate::registration::Registrar;
use crate::replicas::switch::SwitchParts;
use crate::replicas::{RoleServices, RoleSwitcher};
use crate::routes;
use crate::state::{BrokerState, Listeners};

#[derive(Debug, Error)]
pub enum BrokerError {
    #[error("invalid configuration: {0}")]
    Config(#[from] stellmq_config::ConfigError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("cannot bind {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read or write {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid address {0}")]
    BadAddress(String),
    #[error(transparent)]
    Metadata(#[from] stellmq_metadata::MetadataError),
    #[error("ACL: {0}")]
    Acl(#[from] stellmq_acl::AclError),
    #[error("TLS: {0}")]
    Tls(#[from] TlsError),
    #[error("metrics: {0}")]
    Metrics(#[from] stellmq_metrics::MetricsError),
    #[error("controller mode: {0}")]
    Controller(#[from] crate::replicas::manager::LoopError),
}

/// Forgets clients whose connection closed, and tells their groups.
pub(crate) struct ClientChannelWatcher {
    pub consumers: Arc<ConsumerManager>,
    pub producers: Arc<ProducerManager>,
    pub notify: bool,
}

impl ConnectionListener for ClientChannelWatcher {
    fn on_close(&self, channel: &Channel) {
        self.producers.on_channel_closed(channel.id());
        for group in self.consumers.on_channel_closed(channel.id()) {
            if self.notify {
                self.consumers.notify_ids_changed(&group);
            }
        }
    }
}

/// A running broker.
pub struct BrokerHandle {
    server: ServerHandle,
    registrar: Arc<Registrar>,
    /// Controller mode: switches the role at runtime.
    roles: Option<Arc<RoleSwitcher>>,
    state: BrokerState,
    tasks: Vec<JoinHandle<()>>,
    metrics: Option<stellmq_metrics::MetricsServer>,
}

impl BrokerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// `brokerIP1:port`, as registered and stored in every message.
    pub fn broker_addr(&self) -> &str {
        &self.state.identity.broker_addr
    }

    /// `brokerIP2:haPort`, where its slaves connect (a master's, or any controller-mode
    /// broker's).
    pub fn ha_addr(&self) -> &str {
        &self.state.identity.ha_server_addr
    }

    pub fn store(&self) -> &Arc<MessageStore> {
        &self.state.store
    }

    /// A master's replication service (connected slaves, acknowledged offsets).
    pub fn ha_master(&self) -> Option<&Arc<HaMaster>> {
        self.state.replication.ha_master.as_ref()
    }

    /// A slave's replication from its master.
    pub fn ha_slave(&self) -> Option<&Arc<HaSlave>> {
        self.state.replication.ha_slave.as_ref()
    }

    /// Controller mode: the role switcher the controller client loop drives
    /// (`change_to_master`, `change_to_slave`, the SyncStateSet); `None` for a classic broker.
    pub fn roles(&self) -> Option<&Arc<RoleSwitcher>> {
        self.roles.as_ref()
    }

    /// The Prometheus endpoint's address, when `metricsExporterType=PROM`.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|m| m.local_addr())
    }

    /// Long-polling pulls currently parked.
    pub fn parked_pulls(&self) -> usize {
        self.state.consumption.hold.parked_count()
    }

    /// POPs and notifications currently held (long polling).
    pub fn parked_pops(&self) -> usize {
        self.state.consumption.pop_hold.parked_count()
    }

    /// Timer messages stored and not delivered yet (RocketMQ's timer backlog).
    pub fn timer_backlog(&self) -> i64 {
        self.state.timers.backlog()
    }

    /// The clock of POP invisible times, revive and long-poll deadlines. Tests move it
    /// forward instead of sleeping through an invisible time; nothing else does.
    pub fn clock(&self) -> &Arc<crate::context::Clock> {
        &self.state.consumption.clock
    }

    /// Runs one pass of the POP revive service now (a master's): what is past its invisible
    /// time goes back to its retry topic or the DLQ. Returns how many messages it put back.
    pub async fn revive_now(&self) -> usize {
        revive::revive_now(&self.state.consumption.pop).await
    }

    /// Registers the whole table with the name servers now.
    pub async fn register_now(&self) -> usize {
        self.registrar.register_all().await
    }

    /// Runs the periodic registration round now (what `registerNameServerPeriod` paces:
    /// with `forceRegister=false`, only where a name server lacks the current version).
    pub async fn register_round(&self) -> usize {
        self.registrar.register_periodically().await
    }

    /// Stops serving, unregisters, persists offsets and configs, and closes the store.
    /// Stops in steps, each logged with what it waits for; the steps that wait on other
    /// machines or on background work are bounded, the final persist and flush is not (it is
    /// what makes the stop clean).
    pub async fn shutdown(self) {
        let started = Instant::now();
        if let Some(metrics) = self.metrics {
            stop_step("the metrics endpoint", STEP_LIMIT, metrics.shutdown()).await;
        }
        self.state.stop.cancel();
        let mut tasks = self.tasks;
        let waited = stop_step("the background services", STEP_LIMIT, async {
            for task in tasks.iter_mut() {
                let _ = task.await;
            }
        })
        .await;
        if waited.is_none() {
            tasks.iter().for_each(JoinHandle::abort);
        }
        stop_step(
            "unregistering from the name servers",
            STEP_LIMIT,
            self.registrar.unregister_all(),
        )
        .await;
        stop_step(
            "answering the requests in flight",
            STEP_LIMIT,
            self.server.shutdown(),
        )
        .await;
        tracing::info!(
            event = "BROKER_STOPPING",
            step = "persisting offsets and configs, flushing the store",
            "stopping: persisting offsets and configs, flushing the store"
        );
        let s = self.state;
        let (offsets, schedule, topics, groups, metadata, store, pop) = (
            s.offsets,
            s.schedule,
            s.topics,
            s.groups,
            s.metadata,
            s.store,
            s.consumption.pop,
        );
        let _ = tokio::task::spawn_blocking(move || {
            offsets.persist();
            pop.persist_orders();
            schedule.persist();
            topics.persist();
            groups.persist();
            metadata.close();
            store.shutdown();
        })
        .await;
        tracing::info!(
            event = "BROKER_STOPPED",
            elapsed_ms = started.elapsed().as_millis() as u64,
            "broker stopped"
        );
    }
}

/// The longest a stop waits on any one step that depends on other machines or background work.
const STEP_LIMIT: Duration = Duration::from_secs(3);

/// One step of a stop: logs what it waits for, and gives up after `limit` (saying so).
async fn stop_step<T>(
    what: &str,
    limit: Duration,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    tracing::info!(event = "BROKER_STOPPING", step = what, "stopping: {what}");
    let done = tokio::time::timeout(limit, work).await.ok();
    if done.is_none() {
        tracing::warn!(
            event = "BROKER_STOP_STEP_CUT",
            step = what,
            limit_ms = limit.as_millis() as u64,
            "stopping: gave up waiting for {what}"
        );
    }
    done
}

/// Starts a broker: shared state, the request table, then the background services.
pub async fn start(mut config: BrokerStartConfig) -> Result<BrokerHandle, BrokerError> {
    config.normalize()?;
    let started = Instant::now();
    // TLS files are read first: a bad certificate stops the start before the store opens.
    let server_tls = ServerTls::from_config(&config.tls)?;
    // The broker's own requests (registrations, a slave's sync) are signed when it has
    // innerClientAuthenticationCredentials, for servers that check ACL.
    let outbound = ClientConfig {
        tls: ClientTls::from_config(&config.tls.client())?,
        credentials: config.broker.inner_credentials()?,
        ..ClientConfig::default()
    };
    let mut listeners = Listeners::bind(&config.broker).await?;
    // GET_BROKER_CONFIG shows the HA port bound (a new master's slaves look it up there).
    config.broker.ha_listen_port = listeners.endpoints.ha_port;
    let state = BrokerState::open(config, &mut listeners.endpoints).await?;
    if state.is_master() && !state.identity.role.controller_mode() {
        restore_pop(&state).await?;
    }
    let bc = state.config.read().clone();
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: listeners.endpoints.main_addr,
        idle_timeout: Duration::from_secs(bc.server_channel_max_idle_time_seconds.max(1)),
        max_in_flight_per_connection: bc.server_max_in_flight_requests_per_connection,
        max_write_buffer_bytes: bc.server_max_write_buffer_bytes,
        write_stall_timeout: Duration::from_millis(bc.server_write_stall_timeout_millis.max(1)),
        tls: server_tls,
        ..Default::default()
    });
    routes::register(&mut server, &state);
    let metrics_addr = crate::metrics::exporter_addr(&bc)?;
    let rpc = Arc::new(stellmq_metrics::RpcLatency::new("remoting"));
    if metrics_addr.is_some() {
        server.set_observer(rpc.clone());
    }
    server.add_listener(Arc::new(ClientChannelWatcher {
        consumers: state.consumers.clone(),
        producers: state.producers.clone(),
        notify: bc.notify_consumer_ids_changed_enable,
    }));
    let addr = listeners.endpoints.main_addr.to_string();
    let server = server
        .start_on(listeners.main)
        .map_err(|source| BrokerError::Bind { addr, source })?;
    open_vip_channel(&server, &bc.bind_address, bc.listen_port).await;

    let registrar = Arc::new(Registrar::new(
        outbound.clone(),
        state.identity.clone(),
        state.config.clone(),
        state.topics.clone(),
        // In controller mode the controller names the master, not the name servers.
        state
            .replication
            .ha_slave
            .clone()
            .filter(|_| state.replication.epochs.is_none()),
    ));
    let roles = role_switcher(&state, &registrar, &bc, &outbound);
    registrar.register_initially().await;
    let metrics = match metrics_addr {
        Some(addr) => Some(crate::metrics::start(addr, &state, rpc).await?),
        None => None,
    };
    let mut tasks = spawn_services(&state, &registrar, &bc, outbound.clone());
    match &roles {
        Some(_) if bc.controller_addr.trim().is_empty() => tracing::warn!(
            "enableControllerMode is on but controllerAddr is empty: no controller will give \
             this broker a role"
        ),
        Some(roles) => tasks.push(start_controller_loop(&state, roles, &bc, outbound)?),
        None => {}
    }
    // The topics and groups start-up created are in the log before the broker serves.
    state.writer.append_prologue().await;
    tracing::info!(
        event = "BROKER_STARTED",
        cluster = %state.identity.cluster_name,
        broker = %state.identity.broker_name,
        id = state.identity.broker_id(),
        addr = %state.identity.broker_addr,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "broker started"
    );
    Ok(BrokerHandle {
        server,
        registrar,
        roles,
        state,
        tasks,
        metrics,
    })
}

/// The background services: config writers, registration, stats, long polling, and by
/// role the delay/timer/transaction services (master) or metadata sync (slave).
fn spawn_services(
    s: &BrokerState,
    registrar: &Arc<Registrar>,
    bc: &crate::config::BrokerConfig,
    outbound: ClientConfig,
) -> Vec<JoinHandle<()>> {
    let stop = &s.stop;
    let mut tasks = vec![
        tokio::spawn(persist::run_writer(s.topics.clone(), stop.clone())),
        tokio::spawn(persist::run_writer(s.groups.clone(), stop.clone())),
        tokio::spawn(registrar.clone().run(stop.clone())),
        tokio::spawn(s.traffic.clone().run(stop.clone())),
        tokio::spawn(s.runtime.clone().run(s.store.clone(), stop.clone())),
        tokio::spawn(s.consumption.hold.clone().run(stop.clone())),
        tokio::spawn(s.consumption.pop_hold.clone().run(stop.clone())),
        tokio::spawn(persist_orders(
            s.consumption.pop.clone(),
            Duration::from_millis(bc.flush_consumer_offset_interval.max(100)),
            stop.clone(),
        )),
        tokio::spawn(persist_offsets(
            s.offsets.clone(),
            Duration::from_millis(bc.flush_consumer_offset_interval.max(100)),
            stop.clone(),
        )),
        tokio::spawn(expire_clients(
            s.consumers.clone(),
            s.producers.clone(),
            Duration::from_millis(bc.channel_expired_timeout),
            bc.notify_consumer_ids_changed_enable,
            stop.clone(),
        )),
    ];
    if let Some(acl) = &s.acl {
        tasks.push(stellmq_acl::spawn_watch(
            acl.clone(),
            stellmq_acl::WATCH_INTERVAL,
            stop.clone(),
        ));
    }
    if s.identity.role.controller_mode() {
        // The role switcher starts the services of the role the controller gives.
        return tasks;
    }
    if s.replication.ha_slave.is_some() {
        tasks.extend((crate::role_services::slave(s, registrar, outbound))(
            stop.clone(),
        ));
    } else {
        tasks.extend((crate::role_services::master(s, bc, false))(stop.clone()));
    }
    tasks
}

/// Controller mode: the loop that registers with the controllers and follows their view.
fn start_controller_loop(
    state: &BrokerState,
    roles: &Arc<RoleSwitcher>,
    bc: &crate::config::BrokerConfig,
    outbound: ClientConfig,
) -> Result<JoinHandle<()>, BrokerError> {
    use crate::replicas::manager::{notice_channel, LoopSettings, ReplicasManager};
    use crate::replicas::metadata::IdentityFiles;
    use crate::replicas::register::Applicant;
    let me = Applicant {
        cluster_name: state.identity.cluster_name.clone(),
        broker_name: state.identity.broker_name.clone(),
        address: state.identity.broker_addr.clone(),
    };
    let manager = ReplicasManager::new(
        outbound,
        roles.clone(),
        IdentityFiles::in_store(state.store.root_dir()),
        me,
        LoopSettings::from_config(bc),
    )?;
    let (sender, notices) = notice_channel();
    let _ = state.replication.role_notices.set(sender);
    Ok(tokio::spawn(manager.run(notices, state.stop.clone())))
}

/// Controller mode: the switcher over the broker's parts and its role services.
fn role_switcher(
    state: &BrokerState,
    registrar: &Arc<Registrar>,
    bc: &crate::config::BrokerConfig,
    outbound: &ClientConfig,
) -> Option<Arc<RoleSwitcher>> {
    let (epochs, ha_master, ha_slave) = (
        state.replication.epochs.clone()?,
        state.replication.ha_master.clone()?,
        state.replication.ha_slave.clone()?,
    );
    let parts = SwitchParts {
        role: state.identity.role.clone(),
        store: state.store.clone(),
        epochs,
        ha_master,
        ha_slave,
        registrar: registrar.clone(),
        services: RoleServices {
            master: crate::role_services::master(state, bc, true),
            slave: crate::role_services::slave(state, registrar, outbound.clone()),
        },
        stop: state.stop.clone(),
    };
    let roles = Arc::new(RoleSwitcher::new(parts, bc.broker_id));
    let _ = state.replication.roles.set(roles.clone());
    Some(roles)
}

/// Creates the revive log topic and rebuilds the POP checkpoints from it (a master's, before
/// it serves).
pub(crate) async fn restore_pop(state: &BrokerState) -> Result<(), BrokerError> {
    let pop = state.consumption.pop.clone();
    pop.ensure_revive_topic();
    let replayed =
        tokio::task::spawn_blocking(move || pop.load_orders().map(|()| revive::replay(&pop)))
            .await
            .map_err(|e| BrokerError::Io {
                what: "the revive log".to_owned(),
                source: std::io::Error::other(e.to_string()),
            })?
            .map_err(|source| BrokerError::Io {
                what: "consumerOrderInfo.json".to_owned(),
                source,
            })?;
    tracing::info!(
        event = "POP_RESTORED",
        records = replayed.records,
        in_flight = replayed.in_flight,
        "POP checkpoints rebuilt from the revive log"
    );
    Ok(())
}

/// RocketMQ's VIP channel: the same service on listenPort - 2, which Java clients before
/// 4.5.1 use for sends by default (`vipChannelEnabled`). Without a fixed listenPort there is
/// none; a port in use is a warning, since current clients never dial it.
async fn open_vip_channel(server: &ServerHandle, bind_address: &str, listen_port: u16) {
    if listen_port <= 2 {
        return;
    }
    let addr = format!("{bind_address}:{}", listen_port - 2);
    match tokio::net::TcpListener::bind(&addr).await {
        Ok(listener) => server.also_accept(listener),
        Err(e) => {
            tracing::warn!(%addr, error = %e, "cannot open the VIP channel (listenPort - 2); clients with vipChannelEnabled=true will fail to send")
        }
    }
}

async fn persist_offsets(
    offsets: Arc<ConsumerOffsetManager>,
    every: Duration,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let offsets = offsets.clone();
        let _ = tokio::task::spawn_blocking(move || offsets.persist()).await;
    }
}

async fn persist_orders(
    pop: Arc<crate::processor::pop::PopCore>,
    every: Duration,
    stop: CancellationToken,
) {
    // Written while there are orderly batches, and once more when the last is gone.
    let mut had_batches = false;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let has_batches = pop.has_orderly_batches();
        if !has_batches && !had_batches {
            continue;
        }
        had_batches = has_batches;
        let pop = pop.clone();
        let _ = tokio::task::spawn_blocking(move || pop.persist_orders()).await;
    }
}

async fn expire_clients(
    consumers: Arc<ConsumerManager>,
    producers: Arc<ProducerManager>,
    timeout: Duration,
    notify: bool,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(10)) => {}
        }
        producers.scan_expired(timeout);
        for group in consumers.scan_expired(timeout) {
            if notify {
                consumers.notify_ids_changed(&group);
            }
        }
    }
}
