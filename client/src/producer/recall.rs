//! Taking back a timer message before it is due (RECALL_MESSAGE, RocketMQ 5.3.2+).

use stellmq_remoting::protocol::headers::{
    CommandHeader, RecallMessageRequestHeader, RecallMessageResponseHeader,
};
use stellmq_remoting::protocol::recall::RecallHandle;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::Producer;
use crate::error::ClientError;
use crate::request::refusal;

impl Producer {
    /// Takes back a timer message of `topic` before it is due, with the recall handle its
    /// send answered ([`crate::SendResult::recall_handle`]); the recalled message's id. The
    /// broker must allow recalls (`recallMessageEnable=true`); it refuses a message already
    /// delivered or recalled.
    pub async fn recall_message(&self, topic: &str, handle: &str) -> Result<String, ClientError> {
        let named =
            RecallHandle::decode(handle).map_err(|e| ClientError::Invalid(e.to_string()))?;
        self.ensure_route(topic).await?;
        let addr = self.master_addr(&named.broker_name).ok_or_else(|| {
            ClientError::Invalid(format!(
                "the recall handle names broker {}, which has no master in the route of {topic}",
                named.broker_name
            ))
        })?;
        let header = RecallMessageRequestHeader {
            producer_group: Some(self.group().to_owned()),
            topic: self.wrap(topic),
            recall_handle: handle.to_owned(),
        };
        let request = RemotingCommand::request(RequestCode::RECALL_MESSAGE, header.to_ext_fields());
        let response = self
            .instance()
            .remoting
            .invoke(&addr, request, self.inner.sender.config.send_msg_timeout)
            .await?;
        if response.response_code() != Some(ResponseCode::SUCCESS) {
            return Err(refusal(&addr, &response).into());
        }
        Ok(RecallMessageResponseHeader::from_ext_fields(&response.ext_fields)?.msg_id)
    }
}
