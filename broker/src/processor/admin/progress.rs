//! Where a group stands in a topic, by time and against other groups:
//! QUERY_CONSUME_TIME_SPAN (303, behind `mqadmin consumerStatus`-style tools) and
//! QUERY_CORRECTION_OFFSET (308).

use std::collections::BTreeMap;

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{
    fastjson, MessageQueue, QueryConsumeTimeSpanBody, QueryCorrectionOffsetBody, QueueTimeSpan,
};
use stellmq_remoting::protocol::headers::{
    QueryConsumeTimeSpanRequestHeader, QueryCorrectionOffsetHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::offset::OffsetAdminProcessor;
use crate::context::now_ms;
use crate::processor::header;

impl OffsetAdminProcessor {
    /// QUERY_CONSUME_TIME_SPAN: per write queue, the store times of its first and last
    /// message and of the group's last consumed one, and how long its next message has
    /// waited. Times that do not exist are -1, as in RocketMQ.
    pub(crate) fn consume_time_span(&self, request: &RemotingCommand) -> ProcessResult {
        let h: QueryConsumeTimeSpanRequestHeader = header(request)?;
        let config = self.topics.get(&h.topic).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist", h.topic),
            )
        })?;
        let store = &self.store;
        let time = |queue_id: i32, offset: i64| {
            store
                .message_store_timestamp(&h.topic, queue_id, offset)
                .unwrap_or(-1)
        };
        let spans = (0..config.write_queue_nums)
            .map(|queue_id| {
                let min_time = store
                    .earliest_message_time(&h.topic, queue_id)
                    .unwrap_or(-1);
                let max = store.max_offset_in_queue(&h.topic, queue_id);
                let consumed = self.offsets.query(&h.group, &h.topic, queue_id);
                let consume_time = match consumed {
                    Some(offset) if offset > 0 => time(queue_id, offset - 1),
                    _ => min_time,
                };
                // A group without an offset waits from the queue's first message.
                let next =
                    consumed.unwrap_or_else(|| store.min_offset_in_queue(&h.topic, queue_id));
                let delay = match time(queue_id, next) {
                    stored if next < max && stored >= 0 => now_ms() - stored,
                    _ => 0,
                };
                let mq = MessageQueue {
                    topic: h.topic.clone(),
                    broker_name: self.identity.broker_name.clone(),
                    queue_id,
                };
                QueueTimeSpan::new(mq, min_time, time(queue_id, max - 1), consume_time, delay)
            })
            .collect();
        let body = QueryConsumeTimeSpanBody {
            consume_time_span_set: spans,
        };
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&body)),
        ))
    }

    /// QUERY_CORRECTION_OFFSET: per queue, the smallest offset any group (but
    /// `filterGroups`) has consumed that is still in the queue; where the compared group is
    /// behind that, `Long.MAX_VALUE`.
    pub(crate) fn correction_offset(&self, request: &RemotingCommand) -> ProcessResult {
        let h: QueryCorrectionOffsetHeader = header(request)?;
        let filtered: Vec<&str> = h
            .filter_groups
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .collect();
        let mut lowest: BTreeMap<i64, i64> = BTreeMap::new();
        for group in self.offsets.groups_of_topic(&h.topic) {
            if filtered.contains(&group.as_str()) {
                continue;
            }
            for (queue_id, offset) in self.offsets.queue_offsets(&group, &h.topic) {
                if offset >= self.store.min_offset_in_queue(&h.topic, queue_id) {
                    let entry = lowest.entry(i64::from(queue_id)).or_insert(offset);
                    *entry = (*entry).min(offset);
                }
            }
        }
        for (queue_id, offset) in self.offsets.queue_offsets(&h.compare_group, &h.topic) {
            if let Some(low) = lowest.get_mut(&i64::from(queue_id)) {
                if *low > offset {
                    *low = i64::MAX;
                }
            }
        }
        let body = QueryCorrectionOffsetBody {
            correction_offsets: lowest.into_iter().collect(),
        };
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&body)),
        ))
    }
}

#[cfg(test)]
mod tests;
