//! StellMQ's name server: RocketMQ-compatible broker registration and topic routes.
//!
//! Name servers share nothing: each broker registers with every one of them, and each keeps
//! its own route tables, refreshed by registrations every 30 s and expired after 120 s of
//! silence (or at once when the broker's connection closes).
//!
//! [`start`] runs one on the configured address (port 0 works) and returns a handle that
//! shuts it down ([`start_with_tls`] also with TLS on its port); `mqnamesrv` is a thin
//! binary around it.
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod acl;
pub mod auth;
pub mod config;
mod housekeeping;
mod inflate_budget;
pub mod kv;
mod metrics;
pub mod processor;
pub mod route;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use stellmq_remoting::net::tls::{ServerTls, TlsConfig, TlsError};
use stellmq_remoting::net::{
    Channel, ConnectionListener, Lane, RemotingServer, ServerConfig, ServerHandle,
};
use stellmq_remoting::protocol::RequestCode;
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use acl::AdminGate;
pub use config::NamesrvConfig;
use kv::KvConfigManager;
use processor::{
    BrokerRegistrationProcessor, ConfigAdminProcessor, KvConfigProcessor, RouteQueryProcessor,
    RouteTables, TopicAdminProcessor,
};
use route::RouteInfoManager;

#[derive(Debug, Error)]
pub enum NamesrvError {
    #[error("invalid listen address {0}")]
    BadAddress(String),
    #[error("cannot bind {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("ACL: {0}")]
    Acl(#[from] stellmq_acl::AclError),
    #[error(transparent)]
    Config(#[from] stellmq_config::ConfigError),
    #[error("cannot load the KV config from {path}: {source}")]
    KvConfig {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS: {0}")]
    Tls(#[from] TlsError),
    #[error("metrics: {0}")]
    Metrics(#[from] stellmq_metrics::MetricsError),
}

/// Drops brokers whose connection closed.
struct BrokerChannelWatcher {
    routes: Arc<RouteInfoManager>,
}

impl ConnectionListener for BrokerChannelWatcher {
    fn on_close(&self, channel: &Channel) {
        self.routes.on_channel_closed(channel.id());
    }
}

/// A running name server.
pub struct NamesrvHandle {
    server: ServerHandle,
    routes: Arc<RouteInfoManager>,
    stop: CancellationToken,
    housekeeping: tokio::task::JoinHandle<()>,
    acl_watch: Option<tokio::task::JoinHandle<()>>,
    metrics: Option<stellmq_metrics::MetricsServer>,
}

impl NamesrvHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The route tables (for tests and status).
    /// The Prometheus endpoint's address, when `metricsExporterType=PROM`.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|m| m.local_addr())
    }

    pub fn routes(&self) -> &Arc<RouteInfoManager> {
        &self.routes
    }

    /// Stops the expiry scan and the server, answering requests already in flight.
    pub async fn shutdown(self) {
        if let Some(metrics) = self.metrics {
            metrics.shutdown().await;
        }
        self.stop.cancel();
        let _ = self.housekeeping.await;
        if let Some(watch) = self.acl_watch {
            let _ = watch.await;
        }
        self.server.shutdown().await;
        tracing::info!(event = "NAMESRV_STOPPED", "name server stopped");
    }
}

/// Starts a name server without TLS.
pub async fn start(config: NamesrvConfig) -> Result<NamesrvHandle, NamesrvError> {
    start_with_tls(config, TlsConfig::default()).await
}

/// Starts a name server with the TLS settings `tls` (its `tls.server.*` keys).
pub async fn start_with_tls(
    config: NamesrvConfig,
    tls: TlsConfig,
) -> Result<NamesrvHandle, NamesrvError> {
    let tls = ServerTls::from_config(&tls)?;
    let listen = format!("{}:{}", config.bind_address, config.listen_port);
    let listen_addr: SocketAddr = listen
        .parse()
        .map_err(|_| NamesrvError::BadAddress(listen.clone()))?;
    let kv = Arc::new(
        KvConfigManager::load(config.kv_config_path.clone()).map_err(|source| {
            NamesrvError::KvConfig {
                path: config.kv_config_path.display().to_string(),
                source,
            }
        })?,
    );
    let acl = match config.acl_enable {
        true => Some(acl::open(&config.rocketmq_home).await?),
        false => None,
    };
    let routes = Arc::new(RouteInfoManager::new());
    let auth = match config.authentication_enabled || config.authorization_enabled {
        true => {
            let inner = config.inner_credentials()?;
            let auth =
                auth::NamesrvAuth::new(&config.init_authentication_user, inner, routes.clone())
                    .map_err(|reason| stellmq_config::ConfigError::Rejected {
                        key: "initAuthenticationUser".into(),
                        reason,
                    })?;
            tracing::info!(
                event = "AUTH_ENABLED",
                "name server changes need a signed ACL 2.0 super user"
            );
            Some(Arc::new(auth))
        }
        false => None,
    };
    let scan_interval = Duration::from_millis(config.scan_not_active_broker_interval.max(10));
    let idle_timeout = Duration::from_secs(config.server_channel_max_idle_time_seconds.max(1));
    let metrics_addr = stellmq_metrics::ExporterConfig {
        exporter_type: config.metrics_exporter_type,
        host: config.metrics_prom_exporter_host.clone(),
        port: config.metrics_prom_exporter_port,
    }
    .prometheus_addr()
    .map_err(NamesrvError::BadAddress)?;
    let config = Arc::new(RwLock::new(config));

    let mut server = RemotingServer::new(ServerConfig {
        listen_addr,
        idle_timeout,
        tls,
        ..Default::default()
    });
    let tables = RouteTables {
        routes: routes.clone(),
        kv: kv.clone(),
        config: config.clone(),
    };
    // Client route queries get their own lane so a flood of them never delays registrations.
    let client_lane = Lane::new("client-requests", 8, 50_000);
    let default_lane = Lane::new("default", 8, 10_000);
    server
        .register(
            &[
                RequestCode::REGISTER_BROKER,
                RequestCode::UNREGISTER_BROKER,
                RequestCode::BROKER_HEARTBEAT,
                RequestCode::QUERY_DATA_VERSION,
            ],
            Arc::new(BrokerRegistrationProcessor::new(tables.clone())),
            default_lane.clone(),
        )
        .register(
            &[RequestCode::GET_ROUTEINFO_BY_TOPIC],
            Arc::new(RouteQueryProcessor::new(tables.clone())),
            client_lane,
        )
        .register(
            &[
                RequestCode::GET_BROKER_CLUSTER_INFO,
                RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
                RequestCode::GET_TOPICS_BY_CLUSTER,
                RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS,
                RequestCode::GET_UNIT_TOPIC_LIST,
                RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST,
                RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
                RequestCode::GET_BROKER_MEMBER_GROUP,
            ],
            Arc::new(RouteQueryProcessor::new(tables.clone())),
            default_lane.clone(),
        )
        .register(
            &[
                RequestCode::DELETE_TOPIC_IN_NAMESRV,
                RequestCode::REGISTER_TOPIC_IN_NAMESRV,
                RequestCode::WIPE_WRITE_PERM_OF_BROKER,
                RequestCode::ADD_WRITE_PERM_OF_BROKER,
            ],
            AdminGate::wrap(
                Arc::new(TopicAdminProcessor::new(routes.clone())),
                &acl,
                &auth,
            ),
            default_lane.clone(),
        )
        .register(
            &[
                RequestCode::PUT_KV_CONFIG,
                RequestCode::GET_KV_CONFIG,
                RequestCode::DELETE_KV_CONFIG,
                RequestCode::GET_KVLIST_BY_NAMESPACE,
            ],
            AdminGate::wrap(Arc::new(KvConfigProcessor::new(kv)), &acl, &auth),
            default_lane.clone(),
        )
        .register(
            &[
                RequestCode::GET_NAMESRV_CONFIG,
                RequestCode::UPDATE_NAMESRV_CONFIG,
            ],
            AdminGate::wrap(Arc::new(ConfigAdminProcessor::new(config)), &acl, &auth),
            default_lane,
        )
        .add_listener(Arc::new(BrokerChannelWatcher {
            routes: routes.clone(),
        }));
    let rpc = Arc::new(stellmq_metrics::RpcLatency::new("remoting"));
    if metrics_addr.is_some() {
        server.set_observer(rpc.clone());
    }
    let server = server.start().await.map_err(|source| NamesrvError::Bind {
        addr: listen.clone(),
        source,
    })?;

    let metrics = match metrics_addr {
        Some(addr) => {
            let node = server.local_addr().to_string();
            Some(metrics::start(addr, node, routes.clone(), rpc).await?)
        }
        None => None,
    };
    let stop = CancellationToken::new();
    let housekeeping = tokio::spawn(housekeeping::scan_not_active_brokers(
        routes.clone(),
        scan_interval,
        stop.clone(),
    ));
    let acl_watch = acl.map(|acl| {
        tracing::info!(
            event = "ACL_ENABLED",
            "admin requests are checked against the plain ACL"
        );
        stellmq_acl::spawn_watch(acl, stellmq_acl::WATCH_INTERVAL, stop.clone())
    });
    tracing::info!(event = "NAMESRV_STARTED", addr = %server.local_addr(), "name server started");
    Ok(NamesrvHandle {
        server,
        routes,
        stop,
        housekeeping,
        acl_watch,
        metrics,
    })
}
