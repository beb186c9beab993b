//! The proxy's Prometheus endpoint (`metricsExporterType=PROM`, default port 5559 so it
//! runs beside a broker on one host): RocketMQ's `rocketmq_proxy_up` with its labels
//! (`node_type="proxy"`, `cluster`=proxyClusterName, `node_id`=proxyName, `proxy_mode`), and
//! StellMQ's `rocketmq_proxy_clients` (gRPC clients known), and `rocketmq_rpc_latency` of the
//! gRPC RPCs (`protocol_type="grpc"`, by RPC and status).

use std::net::SocketAddr;
use std::sync::Arc;

use stellmq_metrics::prometheus_client::collector::Collector;
use stellmq_metrics::prometheus_client::encoding::DescriptorEncoder;
use stellmq_metrics::prometheus_client::metrics::MetricType;
use stellmq_metrics::{MetricsServer, NodeLabels, ServerLimits};

use crate::grpc::Proxy;

struct ProxyGauges(Arc<Proxy>);

impl std::fmt::Debug for ProxyGauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProxyGauges")
    }
}

impl Collector for ProxyGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mode = [("proxy_mode", self.0.config.proxy_mode.to_ascii_lowercase())];
        encoder
            .encode_descriptor("rocketmq_proxy_up", "proxy status", None, MetricType::Gauge)?
            .encode_family(&mode)?
            .encode_gauge(&1i64)?;
        let clients = self.0.clients.len() as i64;
        encoder
            .encode_descriptor(
                "rocketmq_proxy_clients",
                "gRPC clients known to the proxy (StellMQ)",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&clients)
    }
}

/// The exporter's address from the config, `None` when metrics are off.
pub fn exporter_addr(config: &crate::config::ProxyConfig) -> Result<Option<SocketAddr>, String> {
    stellmq_metrics::ExporterConfig {
        exporter_type: config.metrics_exporter_type,
        host: config.metrics_prom_exporter_host.clone(),
        port: config.metrics_prom_exporter_port,
    }
    .prometheus_addr()
}

/// Starts the endpoint at `addr`.
pub async fn start(
    addr: SocketAddr,
    proxy: Arc<Proxy>,
) -> Result<MetricsServer, stellmq_metrics::MetricsError> {
    let mut registry = NodeLabels {
        cluster: proxy.config.proxy_cluster_name.clone(),
        node_type: "proxy",
        node_id: proxy.config.proxy_name.clone(),
    }
    .registry();
    registry.register_collector(Box::new(proxy.latency.clone()));
    registry.register_collector(Box::new(ProxyGauges(proxy)));
    MetricsServer::start(addr, Arc::new(registry), ServerLimits::default()).await
}
