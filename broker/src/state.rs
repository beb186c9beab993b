//! The broker's shared state: who it is, its store, its tables and managers, built once at
//! start-up and handed (as `Arc`s) to the processors and services that need each part.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stellmq_acl::{AccessValidator, AclSource};
use stellmq_store::{MessageStore, StoreOptions};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::clients::{ConsumerManager, ProducerManager};
use crate::config::{BrokerConfig, BrokerRole, BrokerStartConfig};
use crate::context::BrokerIdentity;
use crate::group::SubscriptionGroupManager;
use crate::ha::{HaGroup, HaMaster, HaSlave};
use crate::limits::AutoCreateLimits;
use crate::metadata_journal::{JournalApplier, MetadataJournal};
use crate::offset::ConsumerOffsetManager;
use crate::persist::config_path;
use crate::processor::pop::hold::Arrivals;
use crate::processor::pop::{PopCore, PopHoldService, PopParts};
use crate::processor::pull::{HoldLimits, PullCore, PullHoldService};
use crate::replicas::role::RuntimeRole;
use crate::schedule::ScheduleMessageService;
use crate::server::BrokerError;
use crate::settings::LiveConfig;
use crate::stats::BrokerStats;
use crate::timer::TimerService;
use crate::topic::TopicConfigManager;
use crate::transaction::Resolved;
use crate::writer::AckRule;
use crate::writer::MessageWriter;
use stellmq_metadata::MetadataStore;
use stellmq_store::epoch::EpochFile;

/// How often a slave retries its connection to the master (RocketMQ waits 5 s): a healed
/// partition or a restarted master is followed within about a second.
const HA_RECONNECT: Duration = Duration::from_secs(1);

/// Everything the processors and services share.
pub struct BrokerState {
    /// The configuration as started (runtime updates go to `config`).
    pub start: BrokerStartConfig,
    /// The configuration in force, and the settings of send, pull and POP derived from it.
    pub config: Arc<LiveConfig>,
    pub identity: Arc<BrokerIdentity>,
    pub store: Arc<MessageStore>,
    pub delay_levels: usize,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    /// Where topics, groups and offsets are committed; closed at the broker's stop.
    pub metadata: Arc<MetadataStore>,
    pub schedule: Arc<ScheduleMessageService>,
    pub timers: Arc<TimerService>,
    pub consumers: Arc<ConsumerManager>,
    pub producers: Arc<ProducerManager>,
    pub traffic: Arc<BrokerStats>,
    /// TPS windows and daily totals for runtime info.
    pub runtime: Arc<crate::runtime::RuntimeStats>,
    /// Pulls and POPs: their long polling, POP's checkpoints and their clock.
    pub consumption: Consumption,
    pub writer: Arc<MessageWriter>,
    pub resolved_transactions: Arc<Resolved>,
    /// Master-slave replication and, in controller mode, roles and epochs.
    pub replication: Replication,
    /// The plain ACL when aclEnable is on.
    pub acl: Option<Arc<AccessValidator>>,
    /// ACL 2.0's users and policies, and its checks when they are on.
    pub auth: Arc<crate::auth::BrokerAuth>,
    pub stop: CancellationToken,
}

/// How messages leave the broker: pulls and POPs, each with its long polling.
pub struct Consumption {
    pub hold: Arc<PullHoldService>,
    /// POP consumption: checkpoints, orderly batches and the revive log.
    pub pop: Arc<PopCore>,
    pub pop_hold: Arc<PopHoldService>,
    /// The clock of POP invisible times and revive and of long-poll deadlines (tests move
    /// it forward).
    pub clock: Arc<crate::context::Clock>,
}

/// A broker's replicas: the HA sides it serves and, in controller mode, its epochs and role.
pub struct Replication {
    pub ha_master: Option<Arc<HaMaster>>,
    pub ha_slave: Option<Arc<HaSlave>>,
    /// Controller mode: the epoch file (`<storePathRootDir>/epochFileCheckpoint`).
    pub epochs: Option<Arc<EpochFile>>,
    /// Controller mode: the role switcher, set once the broker serves.
    pub roles: Arc<std::sync::OnceLock<Arc<crate::replicas::RoleSwitcher>>>,
    /// Controller mode: where NOTIFY_BROKER_ROLE_CHANGED goes (the controller client loop).
    pub role_notices: Arc<std::sync::OnceLock<crate::replicas::manager::NoticeSender>>,
}

/// The sockets a broker serves on, bound before anything else so that port 0 works.
pub struct Listeners {
    pub main: TcpListener,
    pub endpoints: Endpoints,
}

/// Where a broker says it serves (its identity), and a master's HA listener.
pub struct Endpoints {
    pub main_addr: SocketAddr,
    /// A master's HA port.
    pub ha: Option<TcpListener>,
    pub ha_port: u16,
}

impl Endpoints {
    /// A broker served only in memory (tests): it claims `main_addr` and replicates to no one.
    pub fn detached(main_addr: SocketAddr) -> Self {
        Self {
            main_addr,
            ha: None,
            ha_port: main_addr.port().wrapping_add(1),
        }
    }
}

fn io(what: &str) -> impl FnOnce(std::io::Error) -> BrokerError + '_ {
    move |source| BrokerError::Io {
        what: what.to_owned(),
        source,
    }
}

fn join_error(what: &str) -> impl FnOnce(tokio::task::JoinError) -> BrokerError + '_ {
    move |e| BrokerError::Io {
        what: what.to_owned(),
        source: std::io::Error::other(e.to_string()),
    }
}

async fn bind(addr: String) -> Result<TcpListener, BrokerError> {
    TcpListener::bind(&addr)
        .await
        .map_err(|source| BrokerError::Bind { addr, source })
}

impl Listeners {
    /// The remoting port, and for a master the HA port (ephemeral when listenPort is 0).
    pub async fn bind(bc: &BrokerConfig) -> Result<Self, BrokerError> {
        let listen = format!("{}:{}", bc.bind_address, bc.listen_port);
        let main_addr: SocketAddr = listen
            .parse()
            .map_err(|_| BrokerError::BadAddress(listen.clone()))?;
        let main = bind(listen).await?;
        let port = main
            .local_addr()
            .map_err(io("the listener address"))?
            .port();
        let ha = if bc.is_master() || bc.enable_controller_mode {
            let ha_port = if bc.listen_port == 0 {
                0
            } else {
                bc.ha_listen_port
            };
            Some(bind(format!("{}:{ha_port}", bc.bind_address)).await?)
        } else {
            None
        };
        let ha_port = match &ha {
            Some(l) => l
                .local_addr()
                .map_err(io("the HA listener address"))?
                .port(),
            None if bc.listen_port == 0 => port.wrapping_add(1),
            None => bc.ha_listen_port,
        };
        Ok(Self {
            main,
            endpoints: Endpoints {
                main_addr: SocketAddr::new(main_addr.ip(), port),
                ha,
                ha_port,
            },
        })
    }
}

impl BrokerState {
    /// Opens the store and the config files and builds every shared part; takes the HA
    /// listener out of `endpoints` (the master's replication serves it from now on).
    pub async fn open(
        config: BrokerStartConfig,
        endpoints: &mut Endpoints,
    ) -> Result<Self, BrokerError> {
        let bc = config.broker.clone();
        let acl = open_acl(&bc).await?;
        let role = Arc::new(if bc.enable_controller_mode {
            RuntimeRole::unassigned(bc.broker_id)
        } else {
            RuntimeRole::fixed(bc.broker_id)
        });
        let identity = Arc::new(identity(&bc, endpoints, role)?);
        let store_config = config.store.clone();
        let delay_levels = store_config.delay_levels()?.len();
        let options = StoreOptions {
            hold_dispatch: bc.enable_controller_mode,
            ..StoreOptions::default()
        };
        let store = Arc::new(
            tokio::task::spawn_blocking(move || MessageStore::open_with(store_config, options))
                .await
                .map_err(join_error("store"))??,
        );
        // A controller-mode broker takes no local write until the controller makes it master.
        store.set_replica(bc.enable_controller_mode || !bc.is_master());
        let epochs = if bc.enable_controller_mode {
            let root = config.store.store_path_root_dir.clone();
            let epochs = tokio::task::spawn_blocking(move || EpochFile::open(&root))
                .await
                .map_err(join_error("the epoch file"))?
                .map_err(|e| BrokerError::Io {
                    what: "the epoch file".to_owned(),
                    source: std::io::Error::other(e.to_string()),
                })?;
            Some(Arc::new(epochs))
        } else {
            None
        };
        let root = config.store.store_path_root_dir.clone();
        let limits = Arc::new(AutoCreateLimits::from_config(&bc));
        let clock = Arc::new(crate::context::Clock::default());
        let tables = {
            let (root, bc, store, clock) = (root.clone(), bc.clone(), store.clone(), clock.clone());
            tokio::task::spawn_blocking(move || {
                load_tables(&root, &bc, delay_levels, limits, store, clock)
            })
            .await
            .map_err(join_error("config files"))??
        };
        let stop = CancellationToken::new();
        let (ha_master, ha_slave) = match &epochs {
            Some(epochs) => {
                start_controlled_replication(&bc, &config.store, &store, epochs, endpoints, &stop)
            }
            None => start_replication(&bc, &store, &tables.topics, endpoints, &stop),
        };
        let writer = MessageWriter::new(store.clone());
        let rule = if bc.enable_controller_mode {
            AckRule::Controller {
                all_ack: config.store.all_ack_in_sync_state_set,
                in_sync_replicas: config.store.in_sync_replicas,
                min_in_sync_replicas: config.store.min_in_sync_replicas,
            }
        } else {
            AckRule::Classic {
                sync: bc.broker_role == BrokerRole::SyncMaster,
            }
        };
        let writer = Arc::new(match &ha_master {
            Some(ha) => writer.with_rule(ha.clone(), rule),
            None => writer,
        });
        journal_metadata(&store, &writer, &identity, &tables, ha_slave.as_ref());
        let config_lock = Arc::new(LiveConfig::new(bc.clone()));
        let consumers = Arc::new(ConsumerManager::default());
        let traffic = Arc::new(BrokerStats::default());
        let hold = PullHoldService::new(
            Arc::new(PullCore {
                identity: identity.clone(),
                settings: config_lock.pull(),
                store: store.clone(),
                topics: tables.topics.clone(),
                groups: tables.groups.clone(),
                consumers: consumers.clone(),
                offsets: tables.offsets.clone(),
                selectors: Default::default(),
                traffic: traffic.clone(),
                clock: clock.clone(),
            }),
            HoldLimits {
                max_pulls: bc.max_parked_pulls,
                max_per_connection: bc.max_parked_pulls_per_connection,
                max_bytes: bc.max_parked_pull_bytes,
            },
            tokio::runtime::Handle::current(),
        );
        let pop = Arc::new(PopCore::new(
            PopParts {
                identity: identity.clone(),
                settings: config_lock.pop(),
                store: store.clone(),
                topics: tables.topics.clone(),
                groups: tables.groups.clone(),
                offsets: tables.offsets.clone(),
                writer: writer.clone(),
                traffic: traffic.clone(),
                clock: clock.clone(),
            },
            &bc,
        ));
        let pop_hold = PopHoldService::new(&pop, tokio::runtime::Handle::current());
        store.set_arriving_listener(Arc::new(Arrivals {
            pulls: hold.clone(),
            pops: pop_hold.clone(),
        }));
        Ok(Self {
            start: config,
            config: config_lock,
            identity,
            store,
            delay_levels,
            topics: tables.topics,
            groups: tables.groups,
            offsets: tables.offsets,
            metadata: tables.metadata,
            schedule: tables.schedule,
            timers: tables.timers,
            consumers,
            producers: Arc::default(),
            traffic,
            runtime: Arc::default(),
            consumption: Consumption {
                hold,
                pop,
                pop_hold,
                clock,
            },
            writer,
            resolved_transactions: Arc::default(),
            replication: Replication {
                ha_master,
                ha_slave,
                epochs,
                roles: Arc::default(),
                role_notices: Arc::default(),
            },
            acl,
            auth: tables.auth,
            stop,
        })
    }

    pub fn is_master(&self) -> bool {
        self.identity.is_master()
    }
}

/// Loads `<rocketmqHome>/conf/plain_acl.yml` (and `conf/acl/`) when aclEnable is on; a
/// file that does not load stops the start with its reason.
async fn open_acl(bc: &BrokerConfig) -> Result<Option<Arc<AccessValidator>>, BrokerError> {
    if !bc.acl_enable {
        return Ok(None);
    }
    let source = AclSource::in_home(Path::new(&bc.rocketmq_home));
    let file = source.default_file().display().to_string();
    let acl = tokio::task::spawn_blocking(move || AccessValidator::open(source))
        .await
        .map_err(join_error("the ACL files"))??;
    tracing::info!(
        event = "ACL_ENABLED",
        file,
        "requests are checked against the plain ACL"
    );
    Ok(Some(Arc::new(acl)))
}

fn identity(
    bc: &BrokerConfig,
    endpoints: &Endpoints,
    role: Arc<RuntimeRole>,
) -> Result<BrokerIdentity, BrokerError> {
    let broker_addr = format!("{}:{}", bc.broker_ip1, endpoints.main_addr.port());
    let store_host: SocketAddr = broker_addr
        .parse()
        .map_err(|_| BrokerError::BadAddress(broker_addr.clone()))?;
    Ok(BrokerIdentity {
        cluster_name: bc.broker_cluster_name.clone(),
        broker_name: bc.broker_name.clone(),
        role,
        store_host,
        broker_addr,
        ha_server_addr: format!("{}:{}", bc.broker_ip2, endpoints.ha_port),
        region_id: bc.region_id.clone(),
        trace_on: bc.trace_on,
    })
}

/// A master serves its slaves on the HA port; a slave follows its master.
fn start_replication(
    bc: &BrokerConfig,
    store: &Arc<MessageStore>,
    topics: &Arc<TopicConfigManager>,
    endpoints: &mut Endpoints,
    stop: &CancellationToken,
) -> (Option<Arc<HaMaster>>, Option<Arc<HaSlave>>) {
    let group = HaGroup::new(&bc.broker_cluster_name, &bc.broker_name)
        .with_secret(&bc.replication_secret());
    let master = endpoints
        .ha
        .take()
        .map(|l| HaMaster::start(store.clone(), l, group.clone(), stop.clone()));
    let slave = (!bc.is_master()).then(|| {
        let slave = HaSlave::start_with(
            store.clone(),
            group,
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
    (master, slave)
}

/// Controller mode: both sides exist from the start, idle until the controller gives a
/// role (the master side admits no slave without a term, the slave side dials nobody).
fn start_controlled_replication(
    bc: &BrokerConfig,
    store_config: &stellmq_store::MessageStoreConfig,
    store: &Arc<MessageStore>,
    epochs: &Arc<EpochFile>,
    endpoints: &mut Endpoints,
    stop: &CancellationToken,
) -> (Option<Arc<HaMaster>>, Option<Arc<HaSlave>>) {
    let group = HaGroup::new(&bc.broker_cluster_name, &bc.broker_name)
        .with_secret(&bc.replication_secret());
    let master = endpoints.ha.take().map(|l| {
        HaMaster::start_controlled(
            store.clone(),
            l,
            group.clone(),
            stop.clone(),
            epochs.clone(),
            Duration::from_millis(store_config.ha_max_time_slave_not_catchup),
        )
    });
    let slave = HaSlave::start_controlled(
        store.clone(),
        group,
        bc.broker_id,
        HA_RECONNECT,
        stop.clone(),
        epochs.clone(),
    );
    (master, Some(slave))
}

/// The tables kept in `<storePathRootDir>/config`.
/// Topic and group changes are journaled into the CommitLog ahead of the messages that
/// follow them, and a slave applies them from its master's bytes ([`crate::metadata_journal`]).
fn journal_metadata(
    store: &Arc<MessageStore>,
    writer: &Arc<MessageWriter>,
    identity: &BrokerIdentity,
    tables: &Tables,
    ha_slave: Option<&Arc<HaSlave>>,
) {
    let journal = Arc::new(MetadataJournal::new(
        store.clone(),
        writer.clone(),
        identity.store_host,
    ));
    tables.topics.set_journal(journal.clone());
    tables.groups.set_journal(journal.clone());
    tables.timers.set_journal(journal);
    if let Some(slave) = ha_slave {
        slave.set_journal_applier(Arc::new(JournalApplier::new(
            tables.topics.clone(),
            tables.groups.clone(),
            tables.timers.clone(),
        )));
    }
}

struct Tables {
    auth: Arc<crate::auth::BrokerAuth>,
    topics: Arc<TopicConfigManager>,
    groups: Arc<SubscriptionGroupManager>,
    offsets: Arc<ConsumerOffsetManager>,
    metadata: Arc<MetadataStore>,
    schedule: Arc<ScheduleMessageService>,
    timers: Arc<TimerService>,
}

/// Loads every config file (blocking).
fn load_tables(
    root: &Path,
    bc: &BrokerConfig,
    delay_levels: usize,
    limits: Arc<AutoCreateLimits>,
    store: Arc<MessageStore>,
    clock: Arc<crate::context::Clock>,
) -> Result<Tables, BrokerError> {
    let file = |name: &str| config_path(root, name);
    let metadata = Arc::new(MetadataStore::open(&root.join("config"))?);
    let auth = Arc::new(crate::auth::open(bc, metadata.clone())?);
    Ok(Tables {
        auth,
        topics: Arc::new(TopicConfigManager::load(
            metadata.clone(),
            bc,
            delay_levels,
            limits.clone(),
        )?),
        groups: Arc::new(SubscriptionGroupManager::load(
            metadata.clone(),
            bc.auto_create_subscription_group,
            limits,
        )?),
        offsets: Arc::new(ConsumerOffsetManager::load(metadata.clone())?),
        metadata,
        schedule: Arc::new(
            ScheduleMessageService::load(store.clone(), delay_levels, file("delayOffset.json"))
                .map_err(io("delayOffset.json"))?,
        ),
        timers: Arc::new(
            TimerService::load(store, file("timerProgress.json"), clock)
                .map_err(io("timerProgress.json"))?,
        ),
    })
}
