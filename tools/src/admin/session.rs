//! What a command needs besides the admin client: producers (`sendMsgStatus`,
//! `checkMsgSendRT`, `queryMsgById -s`) connect with mqadmin's own name servers, TLS and
//! credentials; and the Java text forms of results RocketMQ's tools print.

use stellmq_client::{
    ClientError, ClientTlsConfig, Producer, ProducerConfig, SendResult, SendStatus,
    SessionCredentials,
};
use stellmq_remoting::protocol::message::now_ms;

/// mqadmin's connection settings.
#[derive(Debug, Clone)]
pub struct Session {
    pub namesrv: String,
    pub tls: ClientTlsConfig,
    pub credentials: Option<SessionCredentials>,
}

impl Session {
    /// A producer of `group` with an instance name of its own, as RocketMQ's tools start
    /// theirs (`<group>_<millis>`).
    pub async fn producer(&self, group: &str) -> Result<Producer, ClientError> {
        Producer::start(self.producer_config(group)).await
    }

    /// As [`Session::producer`], recording message trace (RocketMQ's `-m true`).
    pub async fn traced_producer(&self, group: &str) -> Result<Producer, ClientError> {
        Producer::start(ProducerConfig {
            enable_msg_trace: true,
            ..self.producer_config(group)
        })
        .await
    }

    fn producer_config(&self, group: &str) -> ProducerConfig {
        ProducerConfig {
            namesrv_addr: self.namesrv.clone(),
            group: group.to_owned(),
            instance_name: format!("{group}_{}", now_ms()),
            tls: self.tls.clone(),
            credentials: self.credentials.clone(),
            ..Default::default()
        }
    }
}

/// Java's `SendStatus` name.
pub fn send_status_name(status: SendStatus) -> &'static str {
    match status {
        SendStatus::SendOk => "SEND_OK",
        SendStatus::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
        SendStatus::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
        SendStatus::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
    }
}

/// Java's `SendResult.toString()`.
pub fn send_result_text(r: &SendResult) -> String {
    format!(
        "SendResult [sendStatus={}, msgId={}, offsetMsgId={}, messageQueue=MessageQueue [topic={}, brokerName={}, queueId={}], queueOffset={}]",
        send_status_name(r.status),
        r.msg_id,
        r.offset_msg_id,
        r.queue.topic,
        r.queue.broker_name,
        r.queue.queue_id,
        r.queue_offset
    )
}
