//! END_TRANSACTION (37): a producer commits or rolls back a half message (protocol.md 2.4).

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::perm;
use stellmq_remoting::protocol::headers::EndTransactionRequestHeader;
use stellmq_remoting::protocol::message::{property, sys_flag, MessageRecord};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::MessageStore;

use crate::context::BrokerIdentity;
use crate::processor::header;
use crate::topic::{TopicConfigManager, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};
use crate::transaction::{op_message, reput, Resolved};
use crate::writer::{self, MessageWriter};

pub struct EndTransactionProcessor {
    pub identity: Arc<BrokerIdentity>,
    pub store: Arc<MessageStore>,
    pub writer: Arc<MessageWriter>,
    pub topics: Arc<TopicConfigManager>,
    pub resolved: Arc<Resolved>,
}

impl EndTransactionProcessor {
    pub(crate) async fn end(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessResult {
        let h: EndTransactionRequestHeader = header(&request)?;
        if !self.identity.is_master() {
            return Err(ProcessorError::new(
                ResponseCode::SLAVE_NOT_AVAILABLE,
                "Can't commit or rollback a transaction on a slave broker",
            ));
        }
        let commit = match h.commit_or_rollback {
            sys_flag::TRANSACTION_COMMIT_TYPE => true,
            sys_flag::TRANSACTION_ROLLBACK_TYPE => false,
            sys_flag::TRANSACTION_NOT_TYPE => {
                // The producer does not know yet; the check service will ask again.
                tracing::debug!(peer = %ctx.channel.peer(), msg_id = %h.msg_id, "transaction state unknown");
                return Ok(Some(request.success_to()));
            }
            other => {
                return Err(ProcessorError::system(format!(
                    "commitOrRollback must be 0, 8 or 12, not {other}"
                )))
            }
        };
        let half = self.half(&h)?;
        let half_offset = half.head.queue_offset;
        if self.resolved.contains(half_offset) {
            // Already committed or rolled back (a repeated answer): nothing more to do.
            return Ok(Some(request.success_to()));
        }
        let mut code = ResponseCode::SUCCESS;
        if commit {
            code = self.commit(&ctx, &half, h.commit_log_offset).await?;
        }
        self.mark_resolved(half_offset).await;
        tracing::debug!(
            event = if commit { "TRANSACTION_COMMITTED" } else { "TRANSACTION_ROLLED_BACK" },
            msg_id = %h.msg_id,
            half_offset,
            from_check = h.from_transaction_check.unwrap_or(false),
            "transaction ended"
        );
        Ok(Some(request.response_to(code, None)))
    }

    /// The half message the header names, checked against it as RocketMQ checks.
    fn half(&self, h: &EndTransactionRequestHeader) -> Result<MessageRecord, ProcessorError> {
        let not_found = || {
            ProcessorError::system(format!(
                "Find prepared transaction message failed: nothing at commitLogOffset {}",
                h.commit_log_offset
            ))
        };
        let raw = self
            .store
            .look_message_by_offset(h.commit_log_offset)
            .ok_or_else(not_found)?;
        let (record, _) = MessageRecord::decode(&raw, false).map_err(|e| {
            ProcessorError::system(format!(
                "Find prepared transaction message failed: the record at commitLogOffset {} does not decode: {e}",
                h.commit_log_offset
            ))
        })?;
        if record.topic != TRANS_HALF_TOPIC {
            return Err(ProcessorError::system(format!(
                "the message at commitLogOffset {} is not a prepared transaction message",
                h.commit_log_offset
            )));
        }
        if record.properties.get(property::PGROUP) != Some(h.producer_group.as_str()) {
            return Err(ProcessorError::system("The producer group wrong"));
        }
        if record.head.queue_offset != h.tran_state_table_offset {
            return Err(ProcessorError::system(
                "The transaction state table offset wrong",
            ));
        }
        if record.head.physical_offset != h.commit_log_offset {
            return Err(ProcessorError::system("The commit log offset wrong"));
        }
        Ok(record)
    }

    /// Puts the half's message to its real topic and queue as a committed transaction.
    async fn commit(
        &self,
        ctx: &RequestContext,
        half: &MessageRecord,
        half_phys_offset: i64,
    ) -> Result<ResponseCode, ProcessorError> {
        let mut props = half.properties.clone();
        let Some((topic, queue_id)) = crate::deferred::take_real_target(&mut props) else {
            return Err(ProcessorError::system(
                "the prepared message has no REAL_TOPIC/REAL_QID",
            ));
        };
        props.remove(property::TRAN_MSG);
        props.insert(property::WAIT, "false");
        let mut msg = reput(half, &props, self.identity.store_host);
        msg.topic = topic;
        msg.queue_id = queue_id;
        msg.sys_flag =
            sys_flag::with_transaction_type(msg.sys_flag, sys_flag::TRANSACTION_COMMIT_TYPE);
        msg.prepared_transaction_offset = half_phys_offset;
        let result = self.writer.put_for(ctx, vec![msg]).await;
        writer::response_code(&result)
    }

    async fn mark_resolved(&self, half_offset: i64) {
        self.topics
            .ensure_internal_topic(TRANS_OP_HALF_TOPIC, 1, perm::READ | perm::WRITE);
        let op = op_message(half_offset, self.identity.store_host);
        let result = self.store.put_message(op).await;
        if !result.status.is_stored() {
            // The check service will ask the producer again; it answers the same.
            tracing::error!(half_offset, status = ?result.status, "cannot write the transaction op record");
        }
        self.resolved.insert(half_offset);
    }
}

#[cfg(test)]
mod tests;
