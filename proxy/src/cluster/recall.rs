//! RECALL_MESSAGE to the broker a recall handle names (RocketMQ 5.3.2+).

use stellmq_remoting::protocol::headers::{
    CommandHeader, RecallMessageRequestHeader, RecallMessageResponseHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use super::error::ClusterError;
use super::Cluster;

impl Cluster {
    /// Takes back the timer message of `topic` that `handle` names on `broker_name`'s
    /// master; its message id.
    pub async fn recall(
        &self,
        topic: &str,
        broker_name: &str,
        handle: &str,
    ) -> Result<String, ClusterError> {
        let addr = self.broker_addr(topic, broker_name).await?;
        let header = RecallMessageRequestHeader {
            producer_group: Some(topic.to_owned()),
            topic: topic.to_owned(),
            recall_handle: handle.to_owned(),
        };
        let command = RemotingCommand::request(RequestCode::RECALL_MESSAGE, header.to_ext_fields());
        let response = self.call_broker(topic, &addr, command).await?;
        let answer = RecallMessageResponseHeader::from_ext_fields(&response.ext_fields)
            .map_err(|e| ClusterError::BadAnswer(format!("recall answer: {e}")))?;
        Ok(answer.msg_id)
    }
}
