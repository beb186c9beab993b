//! Transactions through the proxy: ending one (END_TRANSACTION, oneway, as RocketMQ's proxy
//! sends it) and the heartbeat that tells brokers to send their transaction checks for a
//! topic's producer group (the topic) to the proxy.

use std::collections::BTreeSet;

use stellmq_remoting::protocol::body::{fastjson, HeartbeatData, ProducerData};
use stellmq_remoting::protocol::headers::{CommandHeader, EndTransactionRequestHeader};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use super::error::ClusterError;
use super::Cluster;

/// The client id the proxy's transaction heartbeats carry (RocketMQ's proxy uses the same).
pub const PROXY_PRODUCER_CLIENT_ID: &str = "rmq-proxy-producer-client";

/// Most producer groups named in one heartbeat.
const GROUPS_PER_HEARTBEAT: usize = 100;

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Commit,
    Rollback,
    /// Not known yet: the broker checks again later.
    Unknown,
}

impl Resolution {
    /// END_TRANSACTION's `commitOrRollback` (MessageSysFlag's transaction types).
    fn code(self) -> i32 {
        match self {
            Resolution::Commit => 8,
            Resolution::Rollback => 12,
            Resolution::Unknown => 0,
        }
    }
}

/// What END_TRANSACTION needs of a half message.
#[derive(Debug, Clone)]
pub struct HalfMessage {
    pub broker_addr: String,
    pub topic: String,
    pub msg_id: String,
    pub transaction_id: String,
    pub commit_log_offset: i64,
    pub tran_state_table_offset: i64,
}

impl Cluster {
    /// Ends the transaction of `half` (oneway: the broker does not answer).
    pub async fn end_transaction(
        &self,
        half: &HalfMessage,
        resolution: Resolution,
        from_check: bool,
    ) -> Result<(), ClusterError> {
        let header = EndTransactionRequestHeader {
            producer_group: half.topic.clone(),
            tran_state_table_offset: half.tran_state_table_offset,
            commit_log_offset: half.commit_log_offset,
            commit_or_rollback: resolution.code(),
            from_transaction_check: Some(from_check),
            msg_id: half.msg_id.clone(),
            transaction_id: Some(half.transaction_id.clone()),
            topic: Some(half.topic.clone()),
        };
        let mut request =
            RemotingCommand::request(RequestCode::END_TRANSACTION, header.to_ext_fields());
        request.remark = Some("end transaction from proxy".into());
        request.mark_oneway();
        self.remoting
            .invoke_oneway(&half.broker_addr, request)
            .await
            .map_err(Into::into)
    }

    /// Tells the masters of each topic in `topics` that the proxy is the producer group of
    /// that topic, so their transaction checks come here.
    pub async fn transaction_heartbeat(&self, topics: &BTreeSet<String>) {
        let mut by_broker: std::collections::BTreeMap<String, Vec<ProducerData>> =
            Default::default();
        for topic in topics {
            let Ok(route) = self.route(topic).await else {
                continue;
            };
            for addr in route.broker_datas.iter().filter_map(|b| b.master_addr()) {
                by_broker
                    .entry(addr.to_owned())
                    .or_default()
                    .push(ProducerData {
                        group_name: topic.clone(),
                    });
            }
        }
        for (addr, groups) in by_broker {
            for chunk in groups.chunks(GROUPS_PER_HEARTBEAT) {
                let data = HeartbeatData {
                    client_id: PROXY_PRODUCER_CLIENT_ID.to_owned(),
                    producer_data_set: chunk.to_vec(),
                    consumer_data_set: Vec::new(),
                };
                let request = RemotingCommand::request(RequestCode::HEART_BEAT, Default::default())
                    .with_body(fastjson::encode(&data));
                if let Err(e) = self.remoting.invoke(&addr, request, self.timeout).await {
                    tracing::warn!(broker = %addr, error = %e, "transaction heartbeat failed");
                }
            }
        }
    }
}
