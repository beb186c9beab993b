//! Wiring: opens the store and the config files, registers processors in their lanes, and
//! runs the background tasks; shuts everything down in order.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use stellmq_remoting::net::{
    Channel, ConnectionListener, Lane, RemotingServer, RequestProcessor, ServerConfig, ServerHandle,
};
use stellmq_remoting::protocol::RequestCode;
use stellmq_store::{MessageStore, StoreError};
use thiserror::Error;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clients::{ConsumerManager, ProducerManager};
use crate::config::BrokerStartConfig;
use crate::context::{now_ms, BrokerIdentity};
use crate::deferred;
use crate::group::SubscriptionGroupManager;
use crate::ha::{HaGroup, HaMaster, HaSlave};
use crate::limits::AutoCreateLimits;
use crate::offset::ConsumerOffsetManager;
use crate::persist::{self, config_path};
use crate::processor::admin::{
    config::ConfigAdminProcessor, group::GroupAdminProcessor, offset::OffsetAdminProcessor,
    stats::StatsAdminProcessor, store::StoreAdminProcessor, topic::TopicAdminProcessor,
};
use crate::processor::client_manage::ClientManageProcessor;
use crate::processor::consumer_manage::{ConsumerManageProcessor, RebalanceLockManager};
use crate::processor::guard::Guarded;
use crate::processor::pull::{HoldLimits, PullCore, PullHoldService, PullProcessor};
use crate::processor::query::QueryProcessor;
use crate::processor::send::{SendProcessor, SendProcessorHandle};
use crate::registration::Registrar;
use crate::schedule::ScheduleMessageService;
use crate::slave_sync::SlaveSync;
use crate::stats::BrokerStats;
use crate::timer::TimerService;
use crate::topic::TopicConfigManager;
use crate::transaction::{
    self,
    check::{CheckConfig, TransactionCheckService},
    end::EndTransactionProcessor,
};
use crate::writer::MessageWriter;

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
}

/// Forgets clients whose connection closed, and tells their groups.
/// How often a slave retries its connection to the master.
const HA_RECONNECT: Duration = Duration::from_secs(5);

struct ClientChannelWatcher {
    consumers: Arc<ConsumerManager>,
    producers: Arc<ProducerManager>,
    notify: bool,
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
    store: Arc<MessageStore>,
    identity: Arc<BrokerIdentity>,
    registrar: Arc<Registrar>,
    offsets: Arc<ConsumerOffsetManager>,
    schedule: Arc<ScheduleMessageService>,
    topics: Arc<TopicConfigManager>,
    groups: Arc<SubscriptionGroupManager>,
    hold: Arc<PullHoldService>,
    ha_master: Option<Arc<HaMaster>>,
    ha_slave: Option<Arc<HaSlave>>,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl BrokerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// `brokerIP1:port`, as registered and stored in every message.
    pub fn broker_addr(&self) -> &str {
        &self.identity.broker_addr
    }

    pub fn store(&self) -> &Arc<MessageStore> {
        &self.store
    }

    /// A master's replication service (connected slaves, acknowledged offsets).
    pub fn ha_master(&self) -> Option<&Arc<HaMaster>> {
        self.ha_master.as_ref()
    }

    /// A slave's replication from its master.
    pub fn ha_slave(&self) -> Option<&Arc<HaSlave>> {
        self.ha_slave.as_ref()
    }

    /// Long-polling pulls currently parked.
    pub fn parked_pulls(&self) -> usize {
        self.hold.parked_count()
    }

    /// Registers with the name servers now (also done periodically).
    pub async fn register_now(&self) -> usize {
        self.registrar.register_all().await
    }

    /// Stops serving, unregisters, persists offsets and configs, and closes the store.
    pub async fn shutdown(self) {
        self.stop.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
        self.registrar.unregister_all().await;
        self.server.shutdown().await;
        let (offsets, schedule, topics, groups, store) = (
            self.offsets,
            self.schedule,
            self.topics,
            self.groups,
            self.store,
        );
        let _ = tokio::task::spawn_blocking(move || {
            offsets.persist();
            schedule.persist();
            topics.persist();
            groups.persist();
            store.shutdown();
        })
        .await;
        tracing::info!(event = "BROKER_STOPPED", "broker stopped");
    }
}

fn io(what: &str) -> impl FnOnce(std::io::Error) -> BrokerError + '_ {
    move |source| BrokerError::Io {
        what: what.to_owned(),
        source,
    }
}

/// Starts a broker.
pub async fn start(mut config: BrokerStartConfig) -> Result<BrokerHandle, BrokerError> {
    config.normalize()?;
    let started = Instant::now();
    let bc = config.broker.clone();
    let listen = format!("{}:{}", bc.bind_address, bc.listen_port);
    let listen_addr: SocketAddr = listen
        .parse()
        .map_err(|_| BrokerError::BadAddress(listen.clone()))?;
    let listener = tokio::net::TcpListener::bind(listen_addr)
        .await
        .map_err(|source| BrokerError::Bind {
            addr: listen.clone(),
            source,
        })?;
    let port = listener
        .local_addr()
        .map_err(io("the listener address"))?
        .port();
    let broker_addr = format!("{}:{port}", bc.broker_ip1);
    let store_host: SocketAddr = broker_addr
        .parse()
        .map_err(|_| BrokerError::BadAddress(broker_addr.clone()))?;
    let is_master = bc.broker_role != "SLAVE";
    // Masters serve their slaves on the HA port (an ephemeral one when listenPort is 0).
    let ha_listener = if is_master {
        let port = if bc.listen_port == 0 {
            0
        } else {
            bc.ha_listen_port
        };
        let addr = format!("{}:{port}", bc.bind_address);
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|source| BrokerError::Bind { addr, source })?;
        Some(listener)
    } else {
        None
    };
    let ha_port = match &ha_listener {
        Some(l) => l
            .local_addr()
            .map_err(io("the HA listener address"))?
            .port(),
        None if bc.listen_port == 0 => port.wrapping_add(1),
        None => bc.ha_listen_port,
    };
    let identity = Arc::new(BrokerIdentity {
        cluster_name: bc.broker_cluster_name.clone(),
        broker_name: bc.broker_name.clone(),
        broker_id: bc.broker_id,
        store_host,
        broker_addr: broker_addr.clone(),
        ha_server_addr: format!("{}:{ha_port}", bc.broker_ip2),
        region_id: bc.region_id.clone(),
        trace_on: bc.trace_on,
    });

    let store_config = config.store.clone();
    let delay_levels = store_config.delay_levels()?.len();
    let store = Arc::new(
        tokio::task::spawn_blocking(move || MessageStore::open(store_config))
            .await
            .map_err(|e| BrokerError::Io {
                what: "store".into(),
                source: std::io::Error::other(e.to_string()),
            })??,
    );
    let stop = CancellationToken::new();
    let root = config.store.store_path_root_dir.clone();
    let limits = Arc::new(AutoCreateLimits::from_config(&bc));
    let (topics, groups) = {
        let (root, bc, limits) = (root.clone(), bc.clone(), limits.clone());
        tokio::task::spawn_blocking(move || load_tables(&root, &bc, delay_levels, limits))
            .await
            .map_err(|e| BrokerError::Io {
                what: "config files".into(),
                source: std::io::Error::other(e.to_string()),
            })??
    };
    store.set_replica(!is_master);
    let ha_group =
        HaGroup::new(&bc.broker_cluster_name, &bc.broker_name).with_secret(&bc.ha_auth_secret);
    let ha_master =
        ha_listener.map(|l| HaMaster::start(store.clone(), l, ha_group.clone(), stop.clone()));
    let ha_slave = (!is_master).then(|| {
        let slave = HaSlave::start_with(
            store.clone(),
            ha_group,
            bc.broker_id,
            HA_RECONNECT,
            stop.clone(),
            topics.register_now.clone(),
        );
        if !bc.ha_master_address.trim().is_empty() {
            slave.set_master(bc.ha_master_address.trim());
        }
        slave
    });
    let offsets = Arc::new(
        ConsumerOffsetManager::load(config_path(&root, "consumerOffset.json"))
            .map_err(io("consumerOffset.json"))?,
    );
    let schedule = Arc::new(
        ScheduleMessageService::load(
            store.clone(),
            delay_levels,
            config_path(&root, "delayOffset.json"),
        )
        .map_err(io("delayOffset.json"))?,
    );
    let timers = Arc::new(
        TimerService::load(store.clone(), config_path(&root, "timerProgress.json"))
            .map_err(io("timerProgress.json"))?,
    );
    let traffic = Arc::new(BrokerStats::default());
    let consumers = Arc::new(ConsumerManager::default());
    let producers = Arc::new(ProducerManager::default());
    let locks = Arc::new(RebalanceLockManager::default());
    let shared_config = Arc::new(RwLock::new(bc.clone()));

    let pull_core = Arc::new(PullCore {
        identity: identity.clone(),
        config: shared_config.clone(),
        store: store.clone(),
        topics: topics.clone(),
        groups: groups.clone(),
        consumers: consumers.clone(),
        offsets: offsets.clone(),
        selectors: Default::default(),
        traffic: traffic.clone(),
    });
    let hold = PullHoldService::new(
        pull_core,
        HoldLimits {
            max_pulls: bc.max_parked_pulls,
            max_per_connection: bc.max_parked_pulls_per_connection,
            max_bytes: bc.max_parked_pull_bytes,
        },
        tokio::runtime::Handle::current(),
    );
    store.set_arriving_listener(hold.clone());

    // Every processor sits behind the check of the names its requests carry.
    let guarded =
        |p: Arc<dyn RequestProcessor>| -> Arc<dyn RequestProcessor> { Arc::new(Guarded(p)) };
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr,
        idle_timeout: Duration::from_secs(bc.server_channel_max_idle_time_seconds.max(1)),
        max_in_flight_per_connection: bc.server_max_in_flight_requests_per_connection,
        max_write_buffer_bytes: bc.server_max_write_buffer_bytes,
        write_stall_timeout: Duration::from_millis(bc.server_write_stall_timeout_millis.max(1)),
        ..Default::default()
    });
    let writer = MessageWriter::new(store.clone());
    let writer = Arc::new(match &ha_master {
        Some(ha) => writer.with_replication(ha.clone(), bc.broker_role == "SYNC_MASTER"),
        None => writer,
    });
    let send = SendProcessor::new(
        identity.clone(),
        shared_config.clone(),
        store.clone(),
        topics.clone(),
        groups.clone(),
        delay_levels as i32,
        writer.clone(),
    )
    .with_replies(producers.clone(), bc.store_reply_message_enable)
    .with_stats(traffic.clone());
    let send = Arc::new(SendProcessorHandle(Arc::new(send)));
    let send_lane = Lane::new(
        "send",
        bc.send_message_thread_pool_nums,
        bc.send_thread_pool_queue_capacity,
    );
    let pull_lane = Lane::new(
        "pull",
        bc.pull_message_thread_pool_nums,
        bc.pull_thread_pool_queue_capacity,
    );
    let query_lane = Lane::new("query", bc.query_message_thread_pool_nums, 20_000);
    let client_lane = Lane::new("client-manage", bc.client_manage_thread_pool_nums, 50_000);
    let consumer_lane = Lane::new(
        "consumer-manage",
        bc.consumer_manage_thread_pool_nums,
        50_000,
    );
    let admin_lane = Lane::new("admin", bc.admin_broker_thread_pool_nums, 10_000);
    let end_transaction_lane = Lane::new("end-transaction", 8, 100_000);
    let resolved_transactions = Arc::new(transaction::Resolved::default());
    server
        .register(
            &[
                RequestCode::SEND_MESSAGE,
                RequestCode::SEND_MESSAGE_V2,
                RequestCode::SEND_BATCH_MESSAGE,
                RequestCode::CONSUMER_SEND_MSG_BACK,
                RequestCode::SEND_REPLY_MESSAGE,
                RequestCode::SEND_REPLY_MESSAGE_V2,
            ],
            guarded(send),
            send_lane,
        )
        .register(
            &[RequestCode::END_TRANSACTION],
            guarded(Arc::new(EndTransactionProcessor {
                identity: identity.clone(),
                store: store.clone(),
                writer: writer.clone(),
                topics: topics.clone(),
                resolved: resolved_transactions.clone(),
            })),
            end_transaction_lane,
        )
        .register(
            &[RequestCode::PULL_MESSAGE, RequestCode::LITE_PULL_MESSAGE],
            guarded(Arc::new(PullProcessor { hold: hold.clone() })),
            pull_lane,
        )
        .register(
            &[RequestCode::QUERY_MESSAGE, RequestCode::VIEW_MESSAGE_BY_ID],
            guarded(Arc::new(QueryProcessor {
                store: store.clone(),
                default_query_max_num: bc.default_query_max_num,
            })),
            query_lane,
        )
        .register(
            &[
                RequestCode::HEART_BEAT,
                RequestCode::UNREGISTER_CLIENT,
                RequestCode::CHECK_CLIENT_CONFIG,
            ],
            guarded(Arc::new(ClientManageProcessor {
                consumers: consumers.clone(),
                producers: producers.clone(),
                groups: groups.clone(),
                topics: topics.clone(),
                notify_enabled: bc.notify_consumer_ids_changed_enable,
                property_filter_enabled: bc.enable_property_filter,
            })),
            client_lane,
        )
        .register(
            &[
                RequestCode::GET_CONSUMER_LIST_BY_GROUP,
                RequestCode::QUERY_CONSUMER_OFFSET,
                RequestCode::UPDATE_CONSUMER_OFFSET,
                RequestCode::LOCK_BATCH_MQ,
                RequestCode::UNLOCK_BATCH_MQ,
                RequestCode::GET_MAX_OFFSET,
                RequestCode::GET_MIN_OFFSET,
                RequestCode::SEARCH_OFFSET_BY_TIMESTAMP,
                RequestCode::GET_EARLIEST_MSG_STORETIME,
            ],
            guarded(Arc::new(ConsumerManageProcessor {
                consumers: consumers.clone(),
                topics: topics.clone(),
                groups: groups.clone(),
                offsets: offsets.clone(),
                store: store.clone(),
                locks,
            })),
            consumer_lane,
        )
        .register(
            &[
                RequestCode::UPDATE_AND_CREATE_TOPIC,
                RequestCode::DELETE_TOPIC_IN_BROKER,
                RequestCode::GET_ALL_TOPIC_CONFIG,
                RequestCode::GET_TOPIC_STATS_INFO,
                RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
            ],
            guarded(Arc::new(TopicAdminProcessor {
                identity: identity.clone(),
                topics: topics.clone(),
                offsets: offsets.clone(),
                store: store.clone(),
            })),
            admin_lane.clone(),
        )
        .register(
            &[
                RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                RequestCode::DELETE_SUBSCRIPTIONGROUP,
                RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
            ],
            guarded(Arc::new(GroupAdminProcessor {
                groups: groups.clone(),
                offsets: offsets.clone(),
                is_slave: !is_master,
            })),
            admin_lane.clone(),
        )
        .register(
            &[
                RequestCode::GET_ALL_CONSUMER_OFFSET,
                RequestCode::GET_ALL_DELAY_OFFSET,
                RequestCode::GET_CONSUME_STATS,
                RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
                RequestCode::QUERY_TOPIC_CONSUME_BY_WHO,
                RequestCode::GET_BROKER_CONSUME_STATS,
                RequestCode::CLONE_GROUP_OFFSET,
                RequestCode::QUERY_CONSUME_QUEUE,
            ],
            guarded(Arc::new(OffsetAdminProcessor {
                identity: identity.clone(),
                offsets: offsets.clone(),
                consumers: consumers.clone(),
                topics: topics.clone(),
                store: store.clone(),
                schedule: schedule.clone(),
            })),
            admin_lane.clone(),
        )
        .register(
            &[
                RequestCode::GET_BROKER_RUNTIME_INFO,
                RequestCode::GET_CONSUMER_CONNECTION_LIST,
                RequestCode::GET_PRODUCER_CONNECTION_LIST,
                RequestCode::GET_CONSUMER_RUNNING_INFO,
                RequestCode::VIEW_BROKER_STATS_DATA,
            ],
            guarded(Arc::new(StatsAdminProcessor {
                store: store.clone(),
                consumers: consumers.clone(),
                producers: producers.clone(),
                started: Instant::now(),
                boot_timestamp: now_ms(),
                ha_master: ha_master.clone(),
                ha_slave: ha_slave.clone(),
                traffic: traffic.clone(),
            })),
            admin_lane.clone(),
        )
        .register(
            &[RequestCode::DELETE_EXPIRED_COMMITLOG],
            guarded(Arc::new(StoreAdminProcessor {
                store: store.clone(),
            })),
            admin_lane.clone(),
        )
        .register(
            &[
                RequestCode::UPDATE_BROKER_CONFIG,
                RequestCode::GET_BROKER_CONFIG,
            ],
            guarded(Arc::new(ConfigAdminProcessor {
                broker: shared_config.clone(),
                store: config.store.clone(),
                topics: topics.clone(),
            })),
            admin_lane,
        )
        .add_listener(Arc::new(ClientChannelWatcher {
            consumers: consumers.clone(),
            producers: producers.clone(),
            notify: bc.notify_consumer_ids_changed_enable,
        }));
    let server = server
        .start_on(listener)
        .map_err(|source| BrokerError::Bind {
            addr: listen.clone(),
            source,
        })?;
    open_vip_channel(&server, &bc.bind_address, bc.listen_port).await;

    let registrar = Arc::new(Registrar::new(
        identity.clone(),
        shared_config.clone(),
        topics.clone(),
        ha_slave.clone(),
    ));
    registrar.register_initially().await;
    let mut tasks = vec![
        tokio::spawn(persist::run_writer(topics.clone(), stop.clone())),
        tokio::spawn(persist::run_writer(groups.clone(), stop.clone())),
        tokio::spawn(registrar.clone().run(stop.clone())),
        tokio::spawn(traffic.run(stop.clone())),
        tokio::spawn(hold.clone().run(stop.clone())),
    ];
    if ha_slave.is_some() {
        let sync = SlaveSync {
            registrar: registrar.clone(),
            topics: topics.clone(),
            groups: groups.clone(),
            offsets: offsets.clone(),
            schedule: schedule.clone(),
        };
        tasks.push(tokio::spawn(sync.run(stop.clone())));
    } else {
        let persist_every = Duration::from_millis(bc.flush_delay_offset_interval);
        tasks.push(tokio::spawn(deferred::run(
            schedule.clone(),
            persist_every,
            stop.clone(),
        )));
        tasks.push(tokio::spawn(deferred::run(
            timers,
            persist_every,
            stop.clone(),
        )));
        let check = TransactionCheckService::new(
            identity.clone(),
            store.clone(),
            offsets.clone(),
            producers.clone(),
            topics.clone(),
            resolved_transactions,
            CheckConfig {
                timeout_ms: bc.transaction_time_out,
                check_max: bc.transaction_check_max,
                interval: Duration::from_millis(bc.transaction_check_interval.max(100)),
            },
        );
        tasks.push(tokio::spawn(Arc::new(check).run(stop.clone())));
    }
    tasks.push(tokio::spawn(persist_offsets(
        offsets.clone(),
        Duration::from_millis(bc.flush_consumer_offset_interval.max(100)),
        stop.clone(),
    )));
    tasks.push(tokio::spawn(expire_clients(
        consumers,
        producers,
        Duration::from_millis(bc.channel_expired_timeout),
        bc.notify_consumer_ids_changed_enable,
        stop.clone(),
    )));

    tracing::info!(
        event = "BROKER_STARTED",
        cluster = %identity.cluster_name,
        broker = %identity.broker_name,
        id = identity.broker_id,
        addr = %broker_addr,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "broker started"
    );
    Ok(BrokerHandle {
        server,
        store,
        identity,
        registrar,
        offsets,
        schedule,
        topics,
        groups,
        hold,
        ha_master,
        ha_slave,
        stop,
        tasks,
    })
}

/// Loads topics.json and subscriptionGroup.json (blocking).
fn load_tables(
    root: &std::path::Path,
    bc: &crate::config::BrokerConfig,
    delay_levels: usize,
    limits: Arc<AutoCreateLimits>,
) -> Result<(Arc<TopicConfigManager>, Arc<SubscriptionGroupManager>), BrokerError> {
    let topics = TopicConfigManager::load(
        config_path(root, "topics.json"),
        bc,
        delay_levels,
        limits.clone(),
    )
    .map_err(io("topics.json"))?;
    let groups = SubscriptionGroupManager::load(
        config_path(root, "subscriptionGroup.json"),
        bc.auto_create_subscription_group,
        limits,
    )
    .map_err(io("subscriptionGroup.json"))?;
    Ok((Arc::new(topics), Arc::new(groups)))
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
