//! Consumer options.

use std::path::PathBuf;
use std::time::Duration;

use stellmq_remoting::net::tls::ClientTlsConfig;
use stellmq_remoting::protocol::body::{ConsumeFromWhere, MessageModel};
use stellmq_remoting::protocol::signature::SessionCredentials;

use super::allocate::AllocateStrategy;

/// Consumer options, with RocketMQ's names and defaults.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    pub namesrv_addr: String,
    pub group: String,
    pub instance_name: String,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    /// For CONSUME_FROM_TIMESTAMP (ms).
    pub consume_timestamp: i64,
    pub allocate: AllocateStrategy,
    /// Concurrent listener calls at once (`consumeThreadMax`).
    pub consume_thread_count: usize,
    /// Messages per listener call (`consumeMessageBatchMaxSize`).
    pub consume_message_batch_max_size: usize,
    /// Messages per pull (`pullBatchSize`).
    pub pull_batch_size: i32,
    /// Pause pulling a queue with this many unfinished messages (`pullThresholdForQueue`).
    pub pull_threshold_for_queue: usize,
    /// ... or this many MiB of unfinished bodies (`pullThresholdSizeForQueue`).
    pub pull_threshold_size_for_queue: usize,
    /// Retries before the DLQ (`maxReconsumeTimes`).
    pub max_reconsume_times: i32,
    pub rebalance_interval: Duration,
    /// Broadcasting offsets live under `<dir>/<clientId>/<group>/offsets.json`.
    pub offset_store_dir: PathBuf,
    /// Optional namespace: topics and the group become `<namespace>%<name>` on the broker.
    pub namespace: Option<String>,
    /// How subscription expressions are read: tags (`TagA || TagB`) or SQL92 selectors on
    /// message properties (`a > 5 AND TAGS = 'TagA'`, needs `enablePropertyFilter`).
    pub expression_type: ExpressionType,
    /// TLS to name servers and brokers (RocketMQ's `useTLS` / `tls.enable`).
    pub tls: ClientTlsConfig,
    /// Plain-ACL credentials (RocketMQ's `AclClientRPCHook`): every request to name servers
    /// and brokers (pulls, heartbeats, offset commits, send-backs) is signed with them.
    pub credentials: Option<SessionCredentials>,
    /// `enableMsgTrace`: push consumers record each delivery (SubBefore) and its outcome
    /// (SubAfter) in the trace topic, for `mqadmin queryMsgTraceById`.
    pub enable_msg_trace: bool,
    /// `customizedTraceTopic`: the trace topic (default `RMQ_SYS_TRACE_TOPIC`).
    pub customized_trace_topic: Option<String>,
}

/// RocketMQ's `ExpressionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExpressionType {
    #[default]
    Tag,
    Sql92,
}

impl ExpressionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ExpressionType::Tag => "TAG",
            ExpressionType::Sql92 => "SQL92",
        }
    }
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            namesrv_addr: crate::namesrv::default_addr(),
            group: "DEFAULT_CONSUMER".into(),
            instance_name: std::process::id().to_string(),
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            consume_timestamp: 0,
            allocate: AllocateStrategy::Averagely,
            consume_thread_count: 20,
            consume_message_batch_max_size: 1,
            pull_batch_size: 32,
            pull_threshold_for_queue: 1000,
            pull_threshold_size_for_queue: 100,
            max_reconsume_times: 16,
            rebalance_interval: Duration::from_secs(20),
            namespace: None,
            expression_type: ExpressionType::Tag,
            tls: ClientTlsConfig::default(),
            credentials: None,
            enable_msg_trace: false,
            customized_trace_topic: None,
            offset_store_dir: std::env::var_os("HOME")
                .map_or_else(|| PathBuf::from("."), PathBuf::from)
                .join(".rocketmq_offsets"),
        }
    }
}
