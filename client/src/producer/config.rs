//! Producer options.

use std::time::Duration;

use stellmq_remoting::net::tls::ClientTlsConfig;
use stellmq_remoting::protocol::signature::SessionCredentials;
use stellmq_remoting::protocol::SerializeType;

/// Producer options, with RocketMQ's names and defaults.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// `ip:port;ip:port`.
    pub namesrv_addr: String,
    pub group: String,
    pub instance_name: String,
    /// `sendMsgTimeout`.
    pub send_msg_timeout: Duration,
    /// `retryTimesWhenSendFailed`: extra attempts on other brokers.
    pub retry_times_when_send_failed: u32,
    /// `compressMsgBodyOverHowmuch`: zlib-compress bodies at least this large.
    pub compress_msg_body_over_howmuch: usize,
    pub max_message_size: usize,
    /// Queues asked for when a topic is auto-created.
    pub default_topic_queue_nums: i32,
    /// How long a broker that failed a send is avoided.
    pub fault_isolation: Duration,
    /// Optional namespace: topics and the group become `<namespace>%<name>` on the broker.
    pub namespace: Option<String>,
    /// TLS to name servers and brokers (RocketMQ's `useTLS` / `tls.enable`).
    pub tls: ClientTlsConfig,
    /// Plain-ACL credentials (RocketMQ's `AclClientRPCHook`): every request to name servers
    /// and brokers is signed with them. `None` sends unsigned requests.
    pub credentials: Option<SessionCredentials>,
    /// `enableMsgTrace`: record every send (Pub) and transaction end (EndTransaction) in the
    /// trace topic, for `mqadmin queryMsgTraceById`.
    pub enable_msg_trace: bool,
    /// `customizedTraceTopic`: the trace topic (default `RMQ_SYS_TRACE_TOPIC`).
    pub customized_trace_topic: Option<String>,
    /// The header encoding of send requests (RocketMQ's `rocketmq.serialize.type`). The
    /// default is ROCKETMQ's binary layout: smaller than JSON and no JSON to write or parse
    /// on either side; every RocketMQ broker reads it and answers in it. `Json` is what
    /// RocketMQ's Java client sends by default.
    pub serialize_type: SerializeType,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        Self {
            namesrv_addr: crate::namesrv::default_addr(),
            group: "DEFAULT_PRODUCER".into(),
            instance_name: std::process::id().to_string(),
            send_msg_timeout: Duration::from_secs(3),
            retry_times_when_send_failed: 2,
            compress_msg_body_over_howmuch: 4096,
            max_message_size: 4 * 1024 * 1024,
            default_topic_queue_nums: 4,
            fault_isolation: Duration::from_secs(30),
            namespace: None,
            tls: ClientTlsConfig::default(),
            credentials: None,
            enable_msg_trace: false,
            customized_trace_topic: None,
            serialize_type: SerializeType::RocketMq,
        }
    }
}
