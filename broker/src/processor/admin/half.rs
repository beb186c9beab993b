//! RESUME_CHECK_HALF_MESSAGE (323): a half message (named by its offset message id) is put
//! back at the end of the half queue with its check count at 0, so the transaction check asks
//! its producer group again (RocketMQ's `resumeCheckHalfMessage`, e.g. for a half moved aside
//! after `transactionCheckMax` checks).

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::headers::ResumeCheckHalfMessageRequestHeader;
use stellmq_remoting::protocol::message::{id, property, MessageRecord};
use stellmq_remoting::protocol::RemotingCommand;
use stellmq_store::{MessageStore, PutMessage};

use crate::context::BrokerIdentity;
use crate::processor::header;
use crate::topic::TRANS_HALF_TOPIC;

pub struct HalfAdminProcessor {
    pub identity: Arc<BrokerIdentity>,
    pub store: Arc<MessageStore>,
}

impl HalfAdminProcessor {
    pub(crate) async fn resume_check(self: Arc<Self>, request: RemotingCommand) -> ProcessResult {
        let h: ResumeCheckHalfMessageRequestHeader = header(&request)?;
        let msg_id = h.msg_id.unwrap_or_default();
        let half = self.half(&msg_id)?;
        let mut props = half.properties.clone();
        props.insert(property::TRANSACTION_CHECK_TIMES, "0");
        let msg = PutMessage::from_record(
            &half,
            &props,
            TRANS_HALF_TOPIC.to_owned(),
            0,
            self.identity.store_host,
        );
        let result = self.store.put_message(msg).await;
        if !result.status.is_stored() {
            tracing::error!(status = ?result.status, %msg_id, "cannot put a half message back to RMQ_SYS_TRANS_HALF_TOPIC");
            return Err(ProcessorError::system(
                "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.",
            ));
        }
        tracing::info!(
            %msg_id,
            real_topic = props.get(property::REAL_TOPIC).unwrap_or(""),
            "half message put back to RMQ_SYS_TRANS_HALF_TOPIC for another check"
        );
        Ok(Some(request.success_to()))
    }

    /// The stored message `msg_id` names.
    fn half(&self, msg_id: &str) -> Result<MessageRecord, ProcessorError> {
        let (_, offset) = id::decode_offset_msg_id(msg_id)
            .map_err(|e| ProcessorError::system(format!("bad msgId {msg_id}: {e}")))?;
        let bytes = self.store.look_message_by_offset(offset).ok_or_else(|| {
            ProcessorError::system(format!("can not find message by the offset, {offset}"))
        })?;
        MessageRecord::decode(&bytes, false)
            .map(|(record, _)| record)
            .map_err(|e| ProcessorError::system(format!("the message at {offset} is damaged: {e}")))
    }
}

#[cfg(test)]
mod tests;
