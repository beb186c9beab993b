//! The name server's Prometheus endpoint (`metricsExporterType=PROM`, default port 5558):
//! RocketMQ's name server has none, so beside `rocketmq_rpc_latency` it serves StellMQ's
//! `rocketmq_namesrv_live_brokers` and `rocketmq_namesrv_topic_number`. Labels:
//! `node_type="namesrv"`, `node_id` = the remoting address.

use std::net::SocketAddr;
use std::sync::Arc;

use stellmq_metrics::prometheus_client::collector::Collector;
use stellmq_metrics::prometheus_client::encoding::DescriptorEncoder;
use stellmq_metrics::prometheus_client::metrics::MetricType;
use stellmq_metrics::{MetricsServer, NodeLabels, RpcLatency, ServerLimits};

use crate::route::RouteInfoManager;

struct RouteGauges(Arc<RouteInfoManager>);

impl std::fmt::Debug for RouteGauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RouteGauges")
    }
}

impl Collector for RouteGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let brokers = self.0.live_broker_count() as i64;
        encoder
            .encode_descriptor(
                "rocketmq_namesrv_live_brokers",
                "Broker addresses registered and alive",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&brokers)?;
        let topics = self.0.all_topics().len() as i64;
        encoder
            .encode_descriptor(
                "rocketmq_namesrv_topic_number",
                "Topics with routes",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&topics)
    }
}

/// Starts the endpoint at `addr`.
pub async fn start(
    addr: SocketAddr,
    node_id: String,
    routes: Arc<RouteInfoManager>,
    rpc: Arc<RpcLatency>,
) -> Result<MetricsServer, stellmq_metrics::MetricsError> {
    let mut registry = NodeLabels {
        cluster: String::new(),
        node_type: "namesrv",
        node_id,
    }
    .registry();
    registry.register_collector(Box::new(RouteGauges(routes)));
    registry.register_collector(Box::new(rpc));
    MetricsServer::start(addr, Arc::new(registry), ServerLimits::default()).await
}
