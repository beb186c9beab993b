//! A queue's progress with the broker: where a newly assigned queue starts (the stored
//! offset, else `consumeFromWhere`) and storing consumed offsets (on the broker in clustering
//! mode, in the local file in broadcasting mode).

use std::sync::Arc;

use stellmq_remoting::protocol::body::{ConsumeFromWhere, MessageQueue};
use stellmq_remoting::protocol::headers::{
    CommandHeader, GetMaxOffsetRequestHeader, OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader, SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use super::core::{ConsumerCore, CALL_TIMEOUT};
use super::queue_state::QueueState;
use crate::error::ClientError;
use crate::request::request;

impl ConsumerCore {
    /// Where a newly assigned queue starts: the stored offset, else consumeFromWhere.
    pub(super) async fn start_offset(&self, mq: &MessageQueue) -> Result<i64, ClientError> {
        if self.offsets.is_local() {
            if let Some(offset) = self.offsets.get(mq) {
                return Ok(offset);
            }
        } else {
            let header = QueryConsumerOffsetRequestHeader {
                consumer_group: self.config.group.clone(),
                topic: mq.topic.clone(),
                queue_id: mq.queue_id,
                set_zero_if_not_found: None,
            };
            let addr = self.offset_broker(mq)?;
            let request = request(RequestCode::QUERY_CONSUMER_OFFSET, &header);
            let r = self.offset_call(&addr, request).await?;
            if r.code == 0 {
                return Ok(OffsetResponseHeader::from_ext_fields(&r.ext_fields)?.offset);
            }
        }
        let addr = self.offset_broker(mq)?;
        let request = match self.config.consume_from_where {
            ConsumeFromWhere::ConsumeFromFirstOffset | ConsumeFromWhere::ConsumeFromMinOffset => {
                return Ok(0)
            }
            ConsumeFromWhere::ConsumeFromTimestamp => {
                let h = SearchOffsetRequestHeader {
                    topic: mq.topic.clone(),
                    queue_id: mq.queue_id,
                    timestamp: self.config.consume_timestamp,
                    boundary_type: None,
                };
                request(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &h)
            }
            _ if mq.topic.starts_with("%RETRY%") => return Ok(0),
            _ => {
                let h = GetMaxOffsetRequestHeader {
                    topic: mq.topic.clone(),
                    queue_id: mq.queue_id,
                    committed: None,
                };
                request(RequestCode::GET_MAX_OFFSET, &h)
            }
        };
        let r = self.offset_call(&addr, request).await?;
        // Any answer without an offset starts the queue at 0.
        Ok(OffsetResponseHeader::from_ext_fields(&r.ext_fields)
            .map(|h| h.offset)
            .unwrap_or(0))
    }

    /// The broker that stores `mq`'s offsets (its master, else any).
    fn offset_broker(&self, mq: &MessageQueue) -> Result<String, ClientError> {
        self.routes
            .broker_addr(&mq.broker_name)
            .ok_or_else(|| ClientError::Invalid("no broker for queue".into()))
    }

    async fn offset_call(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        Ok(self
            .instance
            .remoting
            .invoke(addr, request, CALL_TIMEOUT)
            .await?)
    }

    /// Stores one queue's offset (best effort: the next persist tries again).
    pub(super) async fn persist_one(&self, mq: &MessageQueue) {
        if self.offsets.is_local() {
            let _ = self.offsets.persist_local();
            return;
        }
        let (Some(offset), Some(addr)) = (
            self.offsets.get(mq),
            self.routes.broker_addr(&mq.broker_name),
        ) else {
            return;
        };
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: self.config.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            commit_offset: offset,
        };
        let request = request(RequestCode::UPDATE_CONSUMER_OFFSET, &header);
        let _ = self
            .instance
            .remoting
            .invoke(&addr, request, CALL_TIMEOUT)
            .await;
    }

    /// Stores every owned queue's consumed offset (every 5 s and at shutdown).
    pub async fn persist_offsets(&self) {
        let states: Vec<Arc<QueueState>> = self.queues.lock().values().cloned().collect();
        for state in &states {
            self.offsets
                .record(&state.mq, state.consumed_offset(), &state.dropped);
        }
        if self.offsets.is_local() {
            if let Err(e) = self.offsets.persist_local() {
                tracing::warn!(error = %e, "cannot write the local offset file");
            }
            return;
        }
        for state in states {
            self.persist_one(&state.mq).await;
        }
    }
}
