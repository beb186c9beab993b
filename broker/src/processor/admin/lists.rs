//! UPDATE_AND_CREATE_TOPIC_LIST (18) and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225), as
//! mqadmin's updateTopicList and updateSubGroupList send them: many topics or groups in one
//! request. Every entry is checked before anything changes (one bad entry refuses the whole
//! list with its reason, INVALID_PARAMETER as in RocketMQ); entries that change nothing are
//! left alone; the answer waits until the changes are committed. (RocketMQ answers at the
//! first unchanged topic without applying the rest; StellMQ applies every changed one.)

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{
    apply_attribute_changes, attribute_map_as_changes, fastjson, CreateTopicListRequestBody,
    SubscriptionGroupList, TopicConfig,
};
use stellmq_remoting::protocol::names::NameKind;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::group::GroupAdminProcessor;
use super::topic::{check_shape, slave_refuses, TopicAdminProcessor};
use crate::processor::guard;
use crate::topic::CreateTopicError;

fn invalid(name: &str, reason: impl std::fmt::Display) -> ProcessorError {
    ProcessorError::new(ResponseCode::INVALID_PARAMETER, format!("{name}: {reason}"))
}

fn not_committed(what: &str) -> ProcessorError {
    ProcessorError::system(format!(
        "the {what} are changed but could not be committed yet; see the broker log"
    ))
}

impl TopicAdminProcessor {
    pub(crate) async fn create_list(&self, request: &RemotingCommand) -> ProcessResult {
        let body: CreateTopicListRequestBody = fastjson::decode(&request.body)?;
        let mut changed = Vec::new();
        for wanted in body.topic_config_list {
            let config = self.checked(wanted)?;
            if self.topics.get(&config.topic_name).as_ref() != Some(&config) {
                changed.push(config);
            }
        }
        let mut last = None;
        for config in changed {
            let generation = self.topics.update(config).map_err(|e| match e {
                CreateTopicError::Name(e) => guard::refusal(e),
                other => ProcessorError::system(other.to_string()),
            })?;
            last = Some(generation);
        }
        if let Some(generation) = last {
            if !self.topics.persisted(generation).await {
                return Err(not_committed("topics"));
            }
        }
        Ok(Some(request.success_to()))
    }

    /// The config `wanted` asks for, over the topic's current attributes.
    fn checked(&self, wanted: TopicConfig) -> Result<TopicConfig, ProcessorError> {
        let name = wanted.topic_name.clone();
        self.check_changeable(&name)
            .map_err(|e| ProcessorError::new(ResponseCode::INVALID_PARAMETER, e.to_string()))?;
        check_shape(
            wanted.read_queue_nums,
            wanted.write_queue_nums,
            &wanted.topic_filter_type,
        )
        .map_err(|reason| invalid(&name, reason))?;
        let current = self
            .topics
            .get(&name)
            .map(|c| c.attributes)
            .unwrap_or_default();
        let attributes =
            apply_attribute_changes(&current, &attribute_map_as_changes(&wanted.attributes))
                .map_err(|reason| invalid(&name, reason))?;
        Ok(TopicConfig {
            attributes,
            ..wanted
        })
    }
}

impl GroupAdminProcessor {
    pub(crate) async fn create_list(&self, request: &RemotingCommand) -> ProcessResult {
        if self.is_slave {
            return Err(slave_refuses("subscription groups"));
        }
        let body: SubscriptionGroupList = fastjson::decode(&request.body)?;
        let mut wanted = Vec::with_capacity(body.group_config_list.len());
        for config in body.group_config_list {
            guard::check_name(NameKind::Group, &config.group_name)
                .map_err(|e| ProcessorError::new(ResponseCode::INVALID_PARAMETER, e.to_string()))?;
            let name = config.group_name.clone();
            wanted.push(
                self.with_attributes(config)
                    .map_err(|r| invalid(&name, r))?,
            );
        }
        let mut last = None;
        for config in wanted {
            if self.groups.get(&config.group_name).as_ref() == Some(&config) {
                continue;
            }
            let generation = self
                .groups
                .update(config)
                .map_err(|e| ProcessorError::system(e.to_string()))?;
            last = Some(generation);
        }
        if let Some(generation) = last {
            if !self.groups.persisted(generation).await {
                return Err(not_committed("subscription groups"));
            }
        }
        Ok(Some(request.success_to()))
    }
}

#[cfg(test)]
mod tests;
