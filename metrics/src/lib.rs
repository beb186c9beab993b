//! Metrics for every StellMQ process, named and labelled as RocketMQ 5 names them so that
//! existing Grafana dashboards work: the exporter keys (`metricsExporterType`,
//! `metricsPromExporterHost`, `metricsPromExporterPort`), one registry per process with the
//! node labels (`cluster`, `node_type`, `node_id`), a bounded HTTP endpoint serving
//! `GET /metrics` in the Prometheus text format 0.0.4, lock-free histograms, and the
//! `rocketmq_rpc_latency` histogram fed by the remoting server.
//!
//! Counting on a hot path is atomics only; everything else is read when scraped
//! ([`prometheus_client::collector::Collector`]s).
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

mod exporter;
mod grpc;
mod histogram;
mod http;
mod labels;
mod rpc;

pub use exporter::{ExporterConfig, ExporterType};
pub use grpc::GrpcLatency;
pub use histogram::{AtomicHistogram, HistogramSnapshot};
pub use http::{MetricsError, MetricsServer, ServerLimits};
pub use labels::{is_system_group, NodeLabels};
pub use prometheus_client;
pub use rpc::RpcLatency;

/// Writes a registry in the Prometheus text format 0.0.4.
pub fn encode(registry: &prometheus_client::registry::Registry) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut out, registry)?;
    Ok(out)
}
