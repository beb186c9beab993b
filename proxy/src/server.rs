//! The proxy's life: the gRPC port, the background work (forgetting silent clients, telling
//! brokers where transaction checks go), and the stop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::net::tls::{ServerTls, TlsConfig};
use thiserror::Error;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::ProxyConfig;
use crate::grpc::{Proxy, Service};
use crate::pb::messaging_service_server::MessagingServiceServer;

/// How often silent clients are looked for.
const SWEEP_INTERVAL: Duration = Duration::from_secs(10);
/// How often brokers are told that the proxy answers for its producers' transactions
/// (RocketMQ's `transactionHeartbeatPeriodSecond`).
const TRANSACTION_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(20);
/// Largest gRPC message accepted (RocketMQ's `grpcMaxInboundMessageSize`, 130 MiB).
const MAX_INBOUND_MESSAGE: usize = 130 * 1024 * 1024;

#[derive(Debug, Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS: {0}")]
    Tls(#[from] stellmq_remoting::net::tls::TlsError),
    #[error("metrics: {0}")]
    Metrics(#[from] stellmq_metrics::MetricsError),
    #[error("{0}")]
    Config(String),
}

/// A running proxy.
pub struct ProxyHandle {
    local_addr: SocketAddr,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    metrics: Option<stellmq_metrics::MetricsServer>,
    remoting: Option<crate::remoting::RemotingGateway>,
    pub proxy: Arc<Proxy>,
}

impl ProxyHandle {
    /// The gRPC port's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving: Telemetry streams end at once, other calls get
    /// `grpcShutdownTimeSeconds` to finish, then the server stops regardless.
    /// The Prometheus endpoint's address, when `metricsExporterType=PROM`.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|m| m.local_addr())
    }

    /// The remoting port's address, when `enableRemotingProxy` is on.
    pub fn remoting_addr(&self) -> Option<SocketAddr> {
        self.remoting.as_ref().map(|r| r.local_addr())
    }

    pub async fn shutdown(self) {
        if let Some(metrics) = self.metrics {
            metrics.shutdown().await;
        }
        if let Some(remoting) = self.remoting {
            remoting.shutdown().await;
        }
        self.stop.cancel();
        let grace = Duration::from_secs(self.proxy.config.grpc_shutdown_time_seconds);
        for mut task in self.tasks {
            if tokio::time::timeout(grace, &mut task).await.is_err() {
                tracing::warn!(
                    ?grace,
                    "calls still running at the end of the shutdown grace time were cut"
                );
                task.abort();
            }
        }
        self.proxy.cluster.shutdown().await;
    }
}

/// Binds the gRPC port and serves until [`ProxyHandle::shutdown`]. `tls` sets the gRPC
/// port's TLS (`tls.server.*`) and that of the connections to brokers (`tls.enable`, ...).
pub async fn start(config: ProxyConfig, tls: &TlsConfig) -> Result<ProxyHandle, StartError> {
    let server_tls = ServerTls::with_alpn(tls, vec![b"h2".to_vec()])?;
    let metrics_addr = crate::metrics::exporter_addr(&config).map_err(StartError::Config)?;
    let addr = format!("{}:{}", config.bind_address, config.grpc_server_port);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: addr.clone(),
        source,
    })?;
    let stop = CancellationToken::new();
    let proxy = Proxy::new(config, &tls.client(), stop.clone())?;
    proxy.set_grpc_port(local_addr.port());
    let service = MessagingServiceServer::from_arc(Arc::new(Service(proxy.clone())))
        .max_decoding_message_size(MAX_INBOUND_MESSAGE)
        .max_encoding_message_size(MAX_INBOUND_MESSAGE);
    let mut tasks = Vec::new();
    if let Some(server_tls) = &server_tls {
        tasks.push(server_tls.spawn_reloader(stop.clone()));
    }
    let incoming = crate::listener::incoming(listener, server_tls, stop.clone());
    let serving = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let served = tonic::transport::Server::builder()
                .tcp_nodelay(true)
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, stop.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "the gRPC server stopped");
            }
        })
    };
    tasks.push(serving);
    tasks.push(tokio::spawn(background_work(proxy.clone(), stop.clone())));
    let metrics = match metrics_addr {
        Some(addr) => Some(crate::metrics::start(addr, proxy.clone()).await?),
        None => None,
    };
    let remoting = match proxy.config.enable_remoting_proxy {
        true => Some(
            crate::remoting::start(
                &proxy.config.bind_address,
                proxy.config.remoting_listen_port,
                &proxy.config.remoting_access_addr,
                proxy.cluster.name_servers().to_vec(),
                &stop,
            )
            .await
            .map_err(StartError::Config)?,
        ),
        false => None,
    };
    Ok(ProxyHandle {
        local_addr,
        stop,
        tasks,
        metrics,
        remoting,
        proxy,
    })
}

async fn background_work(proxy: Arc<Proxy>, stop: CancellationToken) {
    let mut sweep = tokio::time::interval(SWEEP_INTERVAL);
    let mut heartbeat = tokio::time::interval(TRANSACTION_HEARTBEAT_INTERVAL);
    let mut renew = tokio::time::interval(Duration::from_millis(
        proxy.config.renew_schedule_period_millis.max(10),
    ));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = renew.tick() => proxy.renewals.renew_due(&proxy.cluster).await,
            _ = sweep.tick() => {
                let gone = proxy.clients.sweep();
                if gone > 0 {
                    tracing::info!(gone, "forgot clients silent for too long");
                }
            }
            _ = heartbeat.tick() => {
                proxy.cluster.transaction_heartbeat(&proxy.clients.producer_topics()).await;
            }
            _ = proxy.producers_changed.notified() => {
                proxy.cluster.transaction_heartbeat(&proxy.clients.producer_topics()).await;
            }
        }
    }
}
