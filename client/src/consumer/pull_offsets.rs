//! The pull consumer's offsets: the progress the application records (kept in memory, stored
//! on the broker, or in the local file in broadcasting mode, every 5 s and at shutdown), the
//! stored progress read back, and a queue's bounds on the broker.

use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::headers::{
    GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader, SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::core::CALL_TIMEOUT;
use super::pull::{no_broker, PullConsumer, PullShared};
use crate::error::ClientError;
use crate::request::{answer, answer_or_none, read, request};

impl PullConsumer {
    /// Records that the group has consumed `mq` up to `offset` (the next offset to consume);
    /// stored within 5 s and at shutdown.
    pub fn update_consume_offset(&self, mq: &MessageQueue, offset: i64) {
        let target = self.shared.broker_queue(mq);
        self.shared.core.offsets.update(&target, offset, true);
        self.shared.dirty.lock().insert(target);
    }

    /// The group's offset of `mq`: the one recorded in this consumer if any (unless
    /// `from_store`), else the stored one (on the broker in clustering mode, in the local
    /// file's table in broadcasting mode); `None` if the group has none.
    pub async fn fetch_consume_offset(
        &self,
        mq: &MessageQueue,
        from_store: bool,
    ) -> Result<Option<i64>, ClientError> {
        let target = self.shared.broker_queue(mq);
        let offsets = &self.shared.core.offsets;
        if !from_store || offsets.is_local() {
            if let Some(offset) = offsets.get(&target) {
                return Ok(Some(offset));
            }
            if offsets.is_local() {
                return Ok(None);
            }
        }
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: self.shared.core.config.group.clone(),
            topic: target.topic.clone(),
            queue_id: target.queue_id,
            set_zero_if_not_found: Some(false),
        };
        let addr = self.shared.offset_broker(&target).await?;
        let response = self
            .shared
            .call(&addr, request(RequestCode::QUERY_CONSUMER_OFFSET, &header))
            .await?;
        let stored = answer_or_none(&addr, response, ResponseCode::QUERY_NOT_FOUND, |r| {
            Ok(read::header::<OffsetResponseHeader>(r)?.offset)
        })?;
        if let Some(offset) = stored {
            if !self.shared.dirty.lock().contains(&target) {
                offsets.update(&target, offset, true);
            }
        }
        Ok(stored)
    }

    /// The first offset of `mq` still on the broker.
    pub async fn min_offset(&self, mq: &MessageQueue) -> Result<i64, ClientError> {
        let target = self.shared.broker_queue(mq);
        let header = GetMinOffsetRequestHeader {
            topic: target.topic.clone(),
            queue_id: target.queue_id,
        };
        self.shared
            .offset_of(&target, request(RequestCode::GET_MIN_OFFSET, &header))
            .await
    }

    /// The offset the next message of `mq` will get.
    pub async fn max_offset(&self, mq: &MessageQueue) -> Result<i64, ClientError> {
        let target = self.shared.broker_queue(mq);
        let header = GetMaxOffsetRequestHeader {
            topic: target.topic.clone(),
            queue_id: target.queue_id,
            committed: None,
        };
        self.shared
            .offset_of(&target, request(RequestCode::GET_MAX_OFFSET, &header))
            .await
    }

    /// The offset of the first message of `mq` stored at or after `timestamp` (ms).
    pub async fn search_offset(
        &self,
        mq: &MessageQueue,
        timestamp: i64,
    ) -> Result<i64, ClientError> {
        let target = self.shared.broker_queue(mq);
        let header = SearchOffsetRequestHeader {
            topic: target.topic.clone(),
            queue_id: target.queue_id,
            timestamp,
            boundary_type: None,
        };
        self.shared
            .offset_of(
                &target,
                request(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &header),
            )
            .await
    }
}

impl PullShared {
    /// Stores every offset recorded since it was last stored; one that cannot be stored now
    /// is tried again next time.
    pub async fn persist_dirty(&self) {
        let _storing = self.storing.lock().await;
        let dirty: Vec<MessageQueue> = std::mem::take(&mut *self.dirty.lock())
            .into_iter()
            .collect();
        if dirty.is_empty() {
            return;
        }
        let offsets = &self.core.offsets;
        if offsets.is_local() {
            if let Err(e) = offsets.persist_local() {
                tracing::warn!(error = %e, "cannot write the local offset file");
                self.dirty.lock().extend(dirty);
            }
            return;
        }
        for mq in dirty {
            let Some(offset) = offsets.get(&mq) else {
                continue;
            };
            if let Err(e) = self.store_offset(&mq, offset).await {
                tracing::debug!(queue = ?mq, error = %e, "cannot store the offset, retrying later");
                self.dirty.lock().insert(mq);
            }
        }
    }

    async fn store_offset(&self, mq: &MessageQueue, offset: i64) -> Result<(), ClientError> {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: self.core.config.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            commit_offset: offset,
        };
        let addr = self.offset_broker(mq).await?;
        let response = self
            .call(&addr, request(RequestCode::UPDATE_CONSUMER_OFFSET, &header))
            .await?;
        answer(&addr, response, read::nothing)
    }

    /// The master of `mq`'s broker (where offsets live), reading the route if needed.
    async fn offset_broker(&self, mq: &MessageQueue) -> Result<String, ClientError> {
        let routes = &self.core.routes;
        if let Some(addr) = routes.broker_addr(&mq.broker_name) {
            return Ok(addr);
        }
        routes.fetch(&mq.topic).await?;
        routes
            .broker_addr(&mq.broker_name)
            .ok_or_else(|| no_broker(mq))
    }

    /// An offset of `mq` its broker answers `request` with.
    async fn offset_of(
        &self,
        mq: &MessageQueue,
        request: RemotingCommand,
    ) -> Result<i64, ClientError> {
        let addr = self.offset_broker(mq).await?;
        let response = self.call(&addr, request).await?;
        answer(&addr, response, |r| {
            Ok(read::header::<OffsetResponseHeader>(r)?.offset)
        })
    }

    async fn call(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        Ok(self
            .core
            .instance
            .remoting
            .invoke(addr, request, CALL_TIMEOUT)
            .await?)
    }
}
