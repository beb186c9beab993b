//! Clusters and brokers: who is where (from the name servers), and each broker's runtime
//! info, config and traffic counters.

use std::collections::BTreeMap;

use stellmq_remoting::protocol::body::{BrokerStatsData, ClusterInfo, ConsumeStatsList, KvTable};
use stellmq_remoting::protocol::headers::{
    GetConsumeStatsInBrokerHeader, ViewBrokerStatsDataRequestHeader,
};
use stellmq_remoting::protocol::RequestCode;

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{bare, read, request};

impl AdminClient {
    pub async fn cluster_info(&self) -> Result<ClusterInfo, ClientError> {
        let request = bare(RequestCode::GET_BROKER_CLUSTER_INFO);
        self.ask(To::NameServer, request, read::json).await
    }

    /// Master addresses of a cluster (or of every cluster).
    pub async fn master_addrs(
        &self,
        cluster: Option<&str>,
    ) -> Result<Vec<(String, String)>, ClientError> {
        let info = self.cluster_info().await?;
        let mut out = Vec::new();
        for (c, names) in &info.cluster_addr_table {
            if cluster.is_some_and(|want| want != c) {
                continue;
            }
            for name in names {
                if let Some(addr) = info
                    .broker_addr_table
                    .get(name)
                    .and_then(|b| b.master_addr())
                {
                    out.push((name.clone(), addr.to_owned()));
                }
            }
        }
        Ok(out)
    }

    /// Every address, master and slaves, of the brokers of `cluster` (RocketMQ's
    /// `fetchMasterAndSlaveAddrByClusterName`), in broker-name then broker-id order.
    pub async fn master_and_slave_addrs(&self, cluster: &str) -> Result<Vec<String>, ClientError> {
        let info = self.cluster_info().await?;
        let Some(names) = info.cluster_addr_table.get(cluster) else {
            return Ok(Vec::new());
        };
        Ok(names
            .iter()
            .filter_map(|name| info.broker_addr_table.get(name))
            .flat_map(|b| b.broker_addrs.0.values().cloned())
            .collect())
    }

    pub async fn broker_runtime_info(
        &self,
        broker: &str,
    ) -> Result<BTreeMap<String, String>, ClientError> {
        let request = bare(RequestCode::GET_BROKER_RUNTIME_INFO);
        let info: KvTable = self.ask(To::Addr(broker), request, read::json).await?;
        Ok(info.table)
    }

    pub async fn broker_config(&self, broker: &str) -> Result<String, ClientError> {
        let request = bare(RequestCode::GET_BROKER_CONFIG);
        self.ask(To::Addr(broker), request, read::text).await
    }

    pub async fn update_broker_config(
        &self,
        broker: &str,
        key: &str,
        value: &str,
    ) -> Result<(), ClientError> {
        let request =
            bare(RequestCode::UPDATE_BROKER_CONFIG).with_body(properties_line(key, value));
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// One traffic counter of `broker` (VIEW_BROKER_STATS_DATA): `name` such as
    /// TOPIC_PUT_NUMS with a topic, or GROUP_GET_NUMS with `topic@group`.
    pub async fn broker_stats(
        &self,
        broker: &str,
        name: &str,
        key: &str,
    ) -> Result<BrokerStatsData, ClientError> {
        let header = ViewBrokerStatsDataRequestHeader {
            stats_name: name.to_owned(),
            stats_key: key.to_owned(),
        };
        let request = request(RequestCode::VIEW_BROKER_STATS_DATA, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    pub async fn broker_consume_stats(
        &self,
        broker: &str,
    ) -> Result<ConsumeStatsList, ClientError> {
        self.broker_consume_stats_with(broker, false, 5000).await
    }

    /// GET_BROKER_CONSUME_STATS: order topics only when `is_order`; the broker gives up
    /// after `timeout_millis`.
    pub async fn broker_consume_stats_with(
        &self,
        broker: &str,
        is_order: bool,
        timeout_millis: i64,
    ) -> Result<ConsumeStatsList, ClientError> {
        let header = GetConsumeStatsInBrokerHeader {
            is_order: Some(is_order),
            timeout_millis: Some(timeout_millis),
        };
        let request = request(RequestCode::GET_BROKER_CONSUME_STATS, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }
}

/// The body of UPDATE_BROKER_CONFIG and UPDATE_NAMESRV_CONFIG: one `key=value` line.
pub(super) fn properties_line(key: &str, value: &str) -> Vec<u8> {
    format!("{key}={value}\n").into_bytes()
}
