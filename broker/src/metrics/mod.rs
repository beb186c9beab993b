//! The broker's metrics, named and labelled as RocketMQ 5's (`BrokerMetricsManager`):
//! traffic counted on the send and pull paths ([`traffic`]), everything else read when
//! scraped ([`collect`], [`lag`]), and `rocketmq_rpc_latency` from the remoting server.
//! Served at `GET /metrics` when `metricsExporterType=PROM` (docs/metrics.md).

mod collect;
mod encode;
pub mod lag;
pub mod traffic;

use std::sync::Arc;

use stellmq_metrics::{MetricsServer, NodeLabels, RpcLatency, ServerLimits};

use crate::config::BrokerConfig;
use crate::server::BrokerError;
use crate::state::BrokerState;
pub use collect::BrokerCollector;
pub use traffic::{MessageType, TrafficMetrics};

/// The exporter's address from the config, `None` when metrics are off.
pub fn exporter_addr(bc: &BrokerConfig) -> Result<Option<std::net::SocketAddr>, BrokerError> {
    stellmq_metrics::ExporterConfig {
        exporter_type: bc.metrics_exporter_type,
        host: bc.metrics_prom_exporter_host.clone(),
        port: bc.metrics_prom_exporter_port,
    }
    .prometheus_addr()
    .map_err(BrokerError::BadAddress)
}

/// Starts the endpoint at `addr` serving the broker's registry.
pub async fn start(
    addr: std::net::SocketAddr,
    state: &BrokerState,
    rpc: Arc<RpcLatency>,
) -> Result<MetricsServer, BrokerError> {
    let id = &state.identity;
    let mut registry = NodeLabels {
        cluster: id.cluster_name.clone(),
        node_type: "broker",
        node_id: id.broker_name.clone(),
    }
    .registry();
    registry.register_collector(Box::new(BrokerCollector {
        traffic: state.traffic.metrics.clone(),
        config: state.config.clone(),
        store: state.store.clone(),
        topics: state.topics.clone(),
        groups: state.groups.clone(),
        offsets: state.offsets.clone(),
        consumers: state.consumers.clone(),
        producers: state.producers.clone(),
        ha_master: state.replication.ha_master.clone(),
        ha_slave: state.replication.ha_slave.clone(),
    }));
    registry.register_collector(Box::new(rpc));
    Ok(MetricsServer::start(addr, Arc::new(registry), ServerLimits::default()).await?)
}
