//! UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG, GET_TOPIC_STATS_INFO,
//! GET_SYSTEM_TOPIC_LIST_FROM_BROKER.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{
    apply_attribute_changes, fastjson, MessageQueue, TopicConfig, TopicList, TopicOffset,
    TopicStatsTable,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, CreateTopicRequestHeader, DeleteTopicRequestHeader,
    GetAllTopicConfigRequestHeader, GetAllTopicConfigResponseHeader, GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
};
use stellmq_remoting::protocol::names::NameKind;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::MessageStore;

use crate::context::BrokerIdentity;
use crate::offset::ConsumerOffsetManager;
use crate::processor::guard;
use crate::processor::header;
use crate::topic::{CreateTopicError, TopicConfigManager};

pub struct TopicAdminProcessor {
    pub identity: Arc<BrokerIdentity>,
    /// Read for the paging settings of GET_ALL_TOPIC_CONFIG.
    pub config: Arc<crate::settings::LiveConfig>,
    pub topics: Arc<TopicConfigManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub store: Arc<MessageStore>,
}

impl TopicAdminProcessor {
    /// Topics change on masters only, never the broker's own topics.
    pub(super) fn check_changeable(&self, topic: &str) -> Result<(), ProcessorError> {
        if !self.identity.is_master() {
            return Err(slave_refuses("topics"));
        }
        guard::check_name(NameKind::Topic, topic)?;
        if self.topics.is_system_topic(topic) {
            return Err(ProcessorError::system(format!(
                "The topic[{topic}] is conflict with system topic."
            )));
        }
        Ok(())
    }

    pub(crate) async fn create(&self, request: &RemotingCommand) -> ProcessResult {
        let h: CreateTopicRequestHeader = header(request)?;
        self.check_changeable(&h.topic)?;
        check_shape(h.read_queue_nums, h.write_queue_nums, &h.topic_filter_type)
            .map_err(ProcessorError::system)?;
        let mut config =
            TopicConfig::with_queues(&h.topic, h.read_queue_nums, h.write_queue_nums, h.perm);
        config.topic_filter_type = h.topic_filter_type;
        config.topic_sys_flag = h.topic_sys_flag.unwrap_or(0);
        config.order = h.order.unwrap_or(false);
        let current = self
            .topics
            .get(&h.topic)
            .map(|c| c.attributes)
            .unwrap_or_default();
        config.attributes = match h.attributes.as_deref() {
            Some(changes) => {
                apply_attribute_changes(&current, changes).map_err(ProcessorError::system)?
            }
            None => current,
        };
        let generation = self.topics.update(config).map_err(|e| match e {
            CreateTopicError::Name(e) => guard::refusal(e),
            other => ProcessorError::system(other.to_string()),
        })?;
        if !self.topics.persisted(generation).await {
            return Err(ProcessorError::system(
                "the topic is created but topics.json could not be written yet; see the broker log",
            ));
        }
        Ok(Some(request.success_to()))
    }

    pub(crate) async fn delete(&self, request: &RemotingCommand) -> ProcessResult {
        let h: DeleteTopicRequestHeader = header(request)?;
        self.check_changeable(&h.topic)?;
        let generation = self.topics.delete(&h.topic);
        self.offsets.remove_topic(&h.topic);
        let store = self.store.clone();
        let topic = h.topic.clone();
        tokio::task::spawn_blocking(move || store.delete_topic(&topic))
            .await
            .map_err(|e| ProcessorError::system(e.to_string()))?
            .map_err(|e| {
                ProcessorError::system(format!("cannot delete the topic's queues: {e}"))
            })?;
        if let Some(generation) = generation {
            self.topics.persisted(generation).await;
        }
        Ok(Some(request.success_to()))
    }

    pub(crate) fn stats(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetTopicStatsInfoRequestHeader = header(request)?;
        let config = self.topics.get(&h.topic).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist", h.topic),
            )
        })?;
        let mut table = TopicStatsTable::default();
        for queue_id in 0..config.write_queue_nums {
            let max = self.store.max_offset_in_queue(&h.topic, queue_id);
            let last = if max > 0 {
                self.store
                    .message_store_timestamp(&h.topic, queue_id, max - 1)
                    .unwrap_or(0)
            } else {
                0
            };
            table.offset_table.0.insert(
                MessageQueue {
                    broker_name: self.identity.broker_name.clone(),
                    queue_id,
                    topic: h.topic.clone(),
                },
                TopicOffset {
                    min_offset: self.store.min_offset_in_queue(&h.topic, queue_id),
                    max_offset: max,
                    last_update_timestamp: last,
                },
            );
        }
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&table)),
        ))
    }

    /// GET_TOPIC_CONFIG: one topic's config (RocketMQ 5's TopicConfigAndQueueMapping, which
    /// without static topics is the config alone).
    pub(crate) fn one_config(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetTopicConfigRequestHeader = header(request)?;
        match self.topics.get(&h.topic) {
            Some(config) => Ok(Some(
                request.success_to().with_body(fastjson::encode(&config)),
            )),
            None => Ok(Some(request.response_to(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("No topic in this broker. topic: {}", h.topic),
            ))),
        }
    }

    /// GET_ALL_TOPIC_CONFIG (also what slaves copy): the whole table, or a page of it when
    /// the request asks for one (RocketMQ 5's `enableSplitMetadata`).
    pub(crate) fn all_configs(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetAllTopicConfigRequestHeader = header(request)?;
        let (split, split_size) = {
            let c = self.config.read();
            (c.enable_split_metadata, c.split_metadata_size)
        };
        let paged = h.topic_seq.is_some() || h.data_version.is_some() || h.max_topic_num.is_some();
        let wrapper = if split && paged {
            let max = crate::paging::page_size(h.max_topic_num, split_size);
            self.topics
                .page(h.data_version.as_deref(), h.topic_seq, max)
        } else {
            self.topics.wrapper(None)
        };
        let total = GetAllTopicConfigResponseHeader {
            total_topic_num: Some(i32::try_from(self.topics.len()).unwrap_or(i32::MAX)),
        };
        Ok(Some(
            request
                .success_to()
                .with_ext_fields(total.to_ext_fields())
                .with_body(fastjson::encode(&wrapper)),
        ))
    }

    pub(crate) fn system_topics(&self, request: &RemotingCommand) -> ProcessResult {
        let topics = self
            .topics
            .all()
            .into_keys()
            .filter(|t| self.topics.is_system_topic(t))
            .collect();
        let list = TopicList {
            topic_list: topics,
            broker_addr: None,
        };
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&list)),
        ))
    }
}

/// A slave's metadata is a copy of its master's (protocol.md 9.4): changes go to the master.
/// Queue counts within 1..1024 and a known tag filter type.
pub(super) fn check_shape(read: i32, write: i32, filter_type: &str) -> Result<(), String> {
    if !(1..=1024).contains(&read) || !(1..=1024).contains(&write) {
        return Err("readQueueNums and writeQueueNums must be within 1..1024".into());
    }
    if filter_type != "SINGLE_TAG" && filter_type != "MULTI_TAG" {
        return Err(format!("unknown topicFilterType {filter_type}"));
    }
    Ok(())
}

pub(crate) fn slave_refuses(what: &str) -> ProcessorError {
    ProcessorError::new(
        ResponseCode::SYSTEM_ERROR,
        format!("this broker is a slave; change {what} on its master"),
    )
}

#[cfg(test)]
mod tests;
