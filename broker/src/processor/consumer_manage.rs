//! Consumer coordination and queue offsets: GET_CONSUMER_LIST_BY_GROUP, QUERY/UPDATE
//! _CONSUMER_OFFSET, LOCK/UNLOCK_BATCH_MQ, GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP,
//! GET_EARLIEST_MSG_STORETIME.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumerIdList, LockBatchRequestBody, LockBatchResponseBody, MessageQueue,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, GetConsumerListByGroupRequestHeader, GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader,
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use stellmq_remoting::protocol::names::NameKind;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::MessageStore;

use super::{guard, header};
use crate::clients::ConsumerManager;
use crate::group::{is_internal_group, SubscriptionGroupManager};
use crate::offset::ConsumerOffsetManager;
use crate::topic::TopicConfigManager;

/// `rocketmq.broker.rebalance.lockMaxLiveTime`.
const LOCK_MAX_LIVE: Duration = Duration::from_secs(60);
/// Above this many locks, expired ones are dropped before new ones are added.
const LOCKS_BEFORE_PURGE: usize = 10_000;

/// Orderly consumers' queue locks: (group, queue) -> (client id, last renewal).
#[derive(Default)]
pub struct RebalanceLockManager {
    locks: Mutex<HashMap<(String, MessageQueue), (String, Instant)>>,
}

impl RebalanceLockManager {
    /// Locks what it can for `client_id`; returns the queues it now holds.
    pub fn try_lock(
        &self,
        group: &str,
        client_id: &str,
        queues: &[MessageQueue],
    ) -> Vec<MessageQueue> {
        let now = Instant::now();
        let mut locks = self.locks.lock();
        if locks.len() > LOCKS_BEFORE_PURGE {
            locks.retain(|_, (_, at)| now.duration_since(*at) < LOCK_MAX_LIVE);
        }
        queues
            .iter()
            .filter(|mq| {
                let key = (group.to_owned(), (*mq).clone());
                match locks.get_mut(&key) {
                    Some((holder, at))
                        if holder != client_id && now.duration_since(*at) < LOCK_MAX_LIVE =>
                    {
                        false
                    }
                    Some((holder, at)) => {
                        *holder = client_id.to_owned();
                        *at = now;
                        true
                    }
                    None => {
                        locks.insert(key, (client_id.to_owned(), now));
                        true
                    }
                }
            })
            .cloned()
            .collect()
    }

    pub fn unlock(&self, group: &str, client_id: &str, queues: &[MessageQueue]) {
        let mut locks = self.locks.lock();
        for mq in queues {
            let key = (group.to_owned(), mq.clone());
            if locks
                .get(&key)
                .is_some_and(|(holder, _)| holder == client_id)
            {
                locks.remove(&key);
            }
        }
    }
}

pub struct ConsumerManageProcessor {
    pub consumers: Arc<ConsumerManager>,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub store: Arc<MessageStore>,
    pub locks: Arc<RebalanceLockManager>,
}

fn offset_response(request: &RemotingCommand, offset: i64) -> RemotingCommand {
    request
        .success_to()
        .with_ext_fields(OffsetResponseHeader { offset }.to_ext_fields())
}

impl ConsumerManageProcessor {
    pub(crate) fn consumer_list(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetConsumerListByGroupRequestHeader = header(request)?;
        let ids = self.consumers.client_ids(&h.consumer_group);
        if ids.is_empty() {
            return Err(ProcessorError::system(format!(
                "no consumer for this group, {}",
                h.consumer_group
            )));
        }
        Ok(Some(request.success_to().with_body(fastjson::encode(
            &ConsumerIdList {
                consumer_id_list: ids,
            },
        ))))
    }

    pub(crate) fn query_offset(&self, request: &RemotingCommand) -> ProcessResult {
        let h: QueryConsumerOffsetRequestHeader = header(request)?;
        if let Some(offset) = self
            .offsets
            .query(&h.consumer_group, &h.topic, h.queue_id)
            .filter(|o| *o >= 0)
        {
            return Ok(Some(offset_response(request, offset)));
        }
        // A new group on a queue still at offset 0 starts there (protocol.md 2.5), unless told not to.
        let min = self.store.min_offset_in_queue(&h.topic, h.queue_id);
        if h.set_zero_if_not_found != Some(false) && min <= 0 {
            return Ok(Some(offset_response(request, 0)));
        }
        Err(ProcessorError::new(
            ResponseCode::QUERY_NOT_FOUND,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
        ))
    }

    /// The queue's topic exists and has the queue: offsets are kept only for real queues.
    fn check_queue(&self, topic: &str, queue_id: i32) -> Result<(), ProcessorError> {
        let config = self.topics.get(topic).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("Topic {topic} not exist!"),
            )
        })?;
        let queues = config.read_queue_nums.max(config.write_queue_nums);
        if !(0..queues).contains(&queue_id) {
            return Err(ProcessorError::system(format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] has {queues} queues"
            )));
        }
        Ok(())
    }

    /// The group may commit offsets: a valid, existing (or auto-created) client group.
    fn check_group(&self, group: &str) -> Result<(), ProcessorError> {
        if is_internal_group(group) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("the group[{group}] is reserved for the broker"),
            ));
        }
        self.groups
            .find_or_create(group)
            .map(|_| ())
            .map_err(guard::group_refusal)
    }

    pub(crate) fn update_offset(&self, request: &RemotingCommand) -> ProcessResult {
        let h: UpdateConsumerOffsetRequestHeader = header(request)?;
        self.check_group(&h.consumer_group)?;
        self.check_queue(&h.topic, h.queue_id)?;
        self.offsets
            .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
        Ok(Some(request.success_to()))
    }

    /// A lock body names a valid group and only queues of existing topics.
    fn check_lock_body(&self, body: &mut LockBatchRequestBody) -> Result<(), ProcessorError> {
        guard::check_name(NameKind::Group, &body.consumer_group)?;
        body.mq_set
            .retain(|mq| self.check_queue(&mq.topic, mq.queue_id).is_ok());
        Ok(())
    }

    pub(crate) fn lock(&self, request: &RemotingCommand) -> ProcessResult {
        let mut body: LockBatchRequestBody = fastjson::decode(&request.body)?;
        self.check_lock_body(&mut body)?;
        let locked = self
            .locks
            .try_lock(&body.consumer_group, &body.client_id, &body.mq_set);
        let response = LockBatchResponseBody {
            lock_ok_mq_set: locked,
        };
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&response)),
        ))
    }

    pub(crate) fn unlock(&self, request: &RemotingCommand) -> ProcessResult {
        let body: LockBatchRequestBody = fastjson::decode(&request.body)?;
        self.locks
            .unlock(&body.consumer_group, &body.client_id, &body.mq_set);
        Ok(Some(request.success_to()))
    }
}

/// The offset and time queries, each answered from the store at once.
impl ConsumerManageProcessor {
    pub(crate) fn max_offset(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetMaxOffsetRequestHeader = header(request)?;
        let offset = self.store.max_offset_in_queue(&h.topic, h.queue_id);
        Ok(Some(offset_response(request, offset)))
    }

    pub(crate) fn min_offset(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetMinOffsetRequestHeader = header(request)?;
        let offset = self.store.min_offset_in_queue(&h.topic, h.queue_id);
        Ok(Some(offset_response(request, offset)))
    }

    pub(crate) fn offset_by_time(&self, request: &RemotingCommand) -> ProcessResult {
        let h: SearchOffsetRequestHeader = header(request)?;
        let offset = self
            .store
            .offset_in_queue_by_time(&h.topic, h.queue_id, h.timestamp);
        Ok(Some(offset_response(request, offset)))
    }

    pub(crate) fn earliest_store_time(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetEarliestMsgStoretimeRequestHeader = header(request)?;
        let timestamp = self
            .store
            .earliest_message_time(&h.topic, h.queue_id)
            .unwrap_or(-1);
        let fields = GetEarliestMsgStoretimeResponseHeader { timestamp }.to_ext_fields();
        Ok(Some(request.success_to().with_ext_fields(fields)))
    }
}

#[cfg(test)]
mod tests;
