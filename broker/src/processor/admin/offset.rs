//! GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET, GET_CONSUME_STATS,
//! INVOKE_BROKER_TO_RESET_OFFSET, QUERY_TOPIC_CONSUME_BY_WHO.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumeQueueData, ConsumeStats, ConsumeStatsList, GroupList, MessageQueue,
    OffsetWrapper, QueryConsumeQueueResponseBody, ResetOffsetBody, ResetOffsetBodyForC,
};
use stellmq_remoting::protocol::headers::{
    CloneGroupOffsetRequestHeader, CommandHeader, GetConsumeStatsRequestHeader,
    QueryConsumeQueueRequestHeader, QueryTopicConsumeByWhoRequestHeader, ResetOffsetRequestHeader,
};
use stellmq_remoting::protocol::{LanguageCode, RemotingCommand, RequestCode, ResponseCode};
use stellmq_store::{MessageFilter, MessageStore};

use crate::clients::ConsumerManager;
use crate::context::BrokerIdentity;
use crate::filter::{self, TagFilter};
use crate::offset::{ConsumerOffsetManager, Mark};
use crate::processor::header;
use crate::schedule::ScheduleMessageService;
use crate::topic::TopicConfigManager;

pub struct OffsetAdminProcessor {
    pub identity: Arc<BrokerIdentity>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub consumers: Arc<ConsumerManager>,
    pub topics: Arc<TopicConfigManager>,
    pub store: Arc<MessageStore>,
    pub schedule: Arc<ScheduleMessageService>,
}

impl OffsetAdminProcessor {
    /// QUERY_CONSUME_QUEUE: raw ConsumeQueue entries (physical offset, size, tags code),
    /// and with a consumer group whether its tag subscription takes each one.
    pub(crate) fn query_consume_queue(&self, request: &RemotingCommand) -> ProcessResult {
        let h: QueryConsumeQueueRequestHeader = header(request)?;
        let store = &self.store;
        if !store.queue_ids(&h.topic).contains(&h.queue_id) {
            return Err(ProcessorError::system(format!(
                "{}@{} is not exist!",
                h.queue_id, h.topic
            )));
        }
        let (min, max) = (
            store.min_offset_in_queue(&h.topic, h.queue_id),
            store.max_offset_in_queue(&h.topic, h.queue_id),
        );
        if h.index < min || h.index >= max {
            return Err(ProcessorError::system(format!(
                "Index {} of {}@{} is not exist!",
                h.index, h.queue_id, h.topic
            )));
        }
        let subscription = h
            .consumer_group
            .as_deref()
            .and_then(|g| self.consumers.subscription(g, &h.topic));
        let tags = subscription
            .as_ref()
            .filter(|s| filter::is_tag_type(s.expression_type.as_deref()))
            .map(TagFilter::new);
        let count = i64::from(h.count.clamp(1, 1000));
        let queue_data = (h.index..(h.index + count).min(max))
            .filter_map(|offset| store.consume_queue_entry(&h.topic, h.queue_id, offset))
            .map(|e| ConsumeQueueData {
                physic_offset: e.phys_offset,
                physic_size: e.size,
                tags_code: e.tags_code,
                eval: tags
                    .as_ref()
                    .is_none_or(|t| t.matches_tags_code(e.tags_code)),
                ..Default::default()
            })
            .collect();
        let body = QueryConsumeQueueResponseBody {
            subscription_data: subscription,
            filter_data: None,
            queue_data,
            max_queue_index: max,
            min_queue_index: min,
        };
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&body)),
        ))
    }

    /// CLONE_GROUP_OFFSET: a new group starts where another one is, for one topic or for
    /// every topic the source group has offsets for. Unless `offline`, a topic the online
    /// source group does not subscribe to is skipped, as RocketMQ does.
    pub(crate) fn clone_offsets(&self, request: &RemotingCommand) -> ProcessResult {
        let h: CloneGroupOffsetRequestHeader = header(request)?;
        let topics: Vec<String> = match h.topic.as_deref().map(str::trim) {
            Some(topic) if !topic.is_empty() => vec![topic.to_owned()],
            _ => self
                .offsets
                .topics_of_group(&h.src_group)
                .into_iter()
                .collect(),
        };
        let online = self.consumers.group(&h.src_group).is_some();
        for topic in topics {
            if self.topics.get(&topic).is_none() {
                tracing::warn!(%topic, "clone group offset: no such topic");
                continue;
            }
            if !h.offline.unwrap_or(false)
                && online
                && self.consumers.subscription(&h.src_group, &topic).is_none()
            {
                tracing::warn!(group = %h.src_group, %topic, "clone group offset: the group does not subscribe to the topic");
                continue;
            }
            if self
                .offsets
                .clone_offsets(&h.src_group, &h.dest_group, &topic)
            {
                tracing::info!(event = "GROUP_OFFSET_CLONED", src = %h.src_group, dest = %h.dest_group, %topic, "consumer offsets cloned");
            }
        }
        // Written with the next periodic offset flush (flushConsumerOffsetInterval).
        Ok(Some(request.success_to()))
    }

    fn mq(&self, topic: &str, queue_id: i32) -> MessageQueue {
        MessageQueue {
            broker_name: self.identity.broker_name.clone(),
            queue_id,
            topic: topic.to_owned(),
        }
    }

    pub(crate) fn consume_stats(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetConsumeStatsRequestHeader = header(request)?;
        let topics: Vec<String> = match h.topic.as_deref() {
            Some(t) => vec![t.to_owned()],
            None => self
                .offsets
                .topics_of_group(&h.consumer_group)
                .into_iter()
                .collect(),
        };
        let online = self.consumers.group(&h.consumer_group);
        let mut stats = ConsumeStats::default();
        for topic in topics {
            let Some(config) = self.topics.get(&topic) else {
                continue;
            };
            // Topics the online group does not subscribe to are skipped, as in RocketMQ.
            if online
                .as_ref()
                .is_some_and(|g| !g.subscriptions.contains_key(&topic))
            {
                continue;
            }
            let committed = self.offsets.queue_offsets(&h.consumer_group, &topic);
            for queue_id in 0..config.read_queue_nums {
                let consumer_offset = committed.get(&queue_id).copied().unwrap_or(0).max(0);
                let last_timestamp = if consumer_offset > 0 {
                    self.store
                        .message_store_timestamp(&topic, queue_id, consumer_offset - 1)
                        .unwrap_or(0)
                } else {
                    0
                };
                stats.offset_table.0.insert(
                    self.mq(&topic, queue_id),
                    OffsetWrapper {
                        broker_offset: self.store.max_offset_in_queue(&topic, queue_id),
                        consumer_offset,
                        last_timestamp,
                        pull_offset: consumer_offset,
                    },
                );
            }
        }
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&stats)),
        ))
    }

    /// Computes new offsets by time, stores them, and tells the online clients (protocol.md 2.7).
    pub(crate) fn reset_offset(&self, request: &RemotingCommand) -> ProcessResult {
        let h: ResetOffsetRequestHeader = header(request)?;
        let config = self.topics.get(&h.topic).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist", h.topic),
            )
        })?;
        let force = h.is_force.unwrap_or(true);
        let mut body = ResetOffsetBody::default();
        for queue_id in 0..config.read_queue_nums {
            let target = if h.timestamp == -1 {
                self.store.max_offset_in_queue(&h.topic, queue_id)
            } else {
                self.store
                    .offset_in_queue_by_time(&h.topic, queue_id, h.timestamp)
            };
            let current = self
                .offsets
                .query(&h.group, &h.topic, queue_id)
                .unwrap_or(-1);
            let offset = if force || current < 0 || target < current {
                target
            } else {
                current
            };
            self.offsets.commit(&h.group, &h.topic, queue_id, offset);
            body.offset_table
                .0
                .insert(self.mq(&h.topic, queue_id), offset);
        }
        let clients = self.consumers.channels(&h.group);
        if clients.is_empty() {
            return Err(ProcessorError::new(
                ResponseCode::CONSUMER_NOT_ONLINE,
                format!("the consumer group[{}] not online", h.group),
            ));
        }
        let for_java = fastjson::encode(&body);
        let for_cpp = fastjson::encode(&ResetOffsetBodyForC::from(&body));
        for client in clients {
            let payload = if client.language == "CPP" || request.language == LanguageCode::Cpp {
                for_cpp.clone()
            } else {
                for_java.clone()
            };
            let mut notice = RemotingCommand::request(
                RequestCode::RESET_CONSUMER_CLIENT_OFFSET,
                h.to_ext_fields(),
            )
            .with_body(payload);
            notice.mark_oneway();
            client.channel.try_send(notice);
        }
        tracing::info!(event = "OFFSET_RESET", group = %h.group, topic = %h.topic, timestamp = h.timestamp, "consumer offsets reset");
        Ok(Some(request.success_to().with_body(for_java)))
    }

    /// GET_BROKER_CONSUME_STATS: every group with offsets here, with its progress per topic.
    pub(crate) fn broker_consume_stats(&self, request: &RemotingCommand) -> ProcessResult {
        let mut list = ConsumeStatsList {
            broker_addr: self.identity.broker_addr.clone(),
            ..Default::default()
        };
        for group in self.offsets.groups() {
            let mut per_topic = Vec::new();
            for topic in self.offsets.topics_of_group(&group) {
                let header = GetConsumeStatsRequestHeader {
                    consumer_group: group.clone(),
                    topic: Some(topic),
                };
                let probe = RemotingCommand::request(
                    RequestCode::GET_CONSUME_STATS,
                    header.to_ext_fields(),
                );
                if let Ok(Some(response)) = self.consume_stats(&probe) {
                    let stats: ConsumeStats = fastjson::decode(&response.body)?;
                    list.total_diff += stats
                        .offset_table
                        .0
                        .values()
                        .map(|w| w.broker_offset - w.consumer_offset)
                        .sum::<i64>();
                    if !stats.offset_table.0.is_empty() {
                        per_topic.push(stats);
                    }
                }
            }
            if !per_topic.is_empty() {
                list.consume_stats_list
                    .push([(group, per_topic)].into_iter().collect());
            }
        }
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&list)),
        ))
    }

    pub(crate) fn consumed_by(&self, request: &RemotingCommand) -> ProcessResult {
        let h: QueryTopicConsumeByWhoRequestHeader = header(request)?;
        let mut groups: Vec<String> = self.offsets.groups_of_topic(&h.topic).into_iter().collect();
        groups.extend(self.consumers.groups_subscribing(&h.topic));
        groups.sort();
        groups.dedup();
        Ok(Some(request.success_to().with_body(fastjson::encode(
            &GroupList { group_list: groups },
        ))))
    }
}

/// A slave's mark of its last offsets copy (StellMQ's extension of GET_ALL_CONSUMER_OFFSET).
pub const OFFSETS_SINCE: &str = "stellmqOffsetsSince";
/// The mark of the copy answered.
pub const OFFSETS_AT: &str = "stellmqOffsetsAt";
/// The answer holds only the changes since the slave's mark.
pub const OFFSETS_DELTA: &str = "stellmqOffsetsDelta";

/// The tables slaves copy (protocol.md 9.4).
impl OffsetAdminProcessor {
    /// GET_ALL_CONSUMER_OFFSET: the whole table; to a StellMQ slave that gives the mark of
    /// its last copy (`stellmqOffsetsSince`), only what changed since, marked
    /// `stellmqOffsetsDelta`. Every answer carries its mark (`stellmqOffsetsAt`).
    pub(crate) fn all_consumer_offsets(&self, request: &RemotingCommand) -> ProcessResult {
        let since = request
            .ext_fields
            .get(OFFSETS_SINCE)
            .and_then(|m| m.parse::<Mark>().ok());
        let copy = self.offsets.copy_for_slave(since);
        let mut response = request.success_to().with_body(fastjson::encode(&copy.body));
        response
            .ext_fields
            .insert(OFFSETS_AT, copy.mark.to_string());
        if copy.delta {
            response.ext_fields.insert(OFFSETS_DELTA, "true");
        }
        Ok(Some(response))
    }

    pub(crate) fn all_delay_offsets(&self, request: &RemotingCommand) -> ProcessResult {
        Ok(Some(
            request
                .success_to()
                .with_body(fastjson::encode(&self.schedule.wrapper())),
        ))
    }
}

#[cfg(test)]
mod tests;
