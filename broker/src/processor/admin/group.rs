//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP,
//! GET_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{
    apply_group_attribute_changes, attribute_map_as_changes, fastjson, SubscriptionGroupConfig,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, DeleteSubscriptionGroupRequestHeader, GetAllSubscriptionGroupRequestHeader,
    GetAllSubscriptionGroupResponseHeader, GetSubscriptionGroupConfigRequestHeader,
};
use stellmq_remoting::protocol::names::NameKind;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::topic::slave_refuses;
use crate::group::{is_system_group, SubscriptionGroupManager};
use crate::offset::ConsumerOffsetManager;
use crate::processor::{guard, header};

pub struct GroupAdminProcessor {
    pub groups: Arc<SubscriptionGroupManager>,
    /// Read for the paging settings of GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
    pub config: Arc<crate::settings::LiveConfig>,
    pub offsets: Arc<ConsumerOffsetManager>,
    /// Slaves take their groups from the master.
    pub is_slave: bool,
}

/// The answer when a change is in memory but not yet in subscriptionGroup.json.
fn not_written() -> ProcessorError {
    ProcessorError::system(
        "the change is made but subscriptionGroup.json could not be written yet; see the broker log",
    )
}

impl GroupAdminProcessor {
    /// `config` with its attribute changes applied over the group's current attributes
    /// (RocketMQ's `AttributeUtil.alterCurrentAttributes`); an unknown key or a value out of
    /// range is refused with the reason.
    pub(super) fn with_attributes(
        &self,
        mut config: SubscriptionGroupConfig,
    ) -> Result<SubscriptionGroupConfig, String> {
        let current = self
            .groups
            .get(&config.group_name)
            .map(|c| c.attributes)
            .unwrap_or_default();
        config.attributes =
            apply_group_attribute_changes(&current, &attribute_map_as_changes(&config.attributes))?;
        Ok(config)
    }

    pub(crate) async fn update(&self, request: &RemotingCommand) -> ProcessResult {
        if self.is_slave {
            return Err(slave_refuses("subscription groups"));
        }
        let config: SubscriptionGroupConfig = fastjson::decode(&request.body)?;
        guard::check_name(NameKind::Group, &config.group_name)?;
        let config = self
            .with_attributes(config)
            .map_err(|reason| ProcessorError::new(ResponseCode::INVALID_PARAMETER, reason))?;
        let generation = self
            .groups
            .update(config)
            .map_err(|e| ProcessorError::system(e.to_string()))?;
        if !self.groups.persisted(generation).await {
            return Err(not_written());
        }
        Ok(Some(request.success_to()))
    }

    pub(crate) async fn delete(&self, request: &RemotingCommand) -> ProcessResult {
        if self.is_slave {
            return Err(slave_refuses("subscription groups"));
        }
        let h: DeleteSubscriptionGroupRequestHeader = header(request)?;
        guard::check_name(NameKind::Group, &h.group_name)?;
        if is_system_group(&h.group_name) {
            return Err(ProcessorError::system(format!(
                "the group[{}] is a system group and cannot be deleted",
                h.group_name
            )));
        }
        let generation = self.groups.delete(&h.group_name);
        if h.remove_offset.or(h.clean_offset).unwrap_or(false) {
            self.offsets.remove_group(&h.group_name);
        }
        if let Some(generation) = generation {
            if !self.groups.persisted(generation).await {
                return Err(not_written());
            }
        }
        Ok(Some(request.success_to()))
    }

    /// GET_SUBSCRIPTIONGROUP_CONFIG: one group's config.
    pub(crate) fn one_config(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetSubscriptionGroupConfigRequestHeader = header(request)?;
        match self.groups.get(&h.group) {
            Some(config) => Ok(Some(
                request.success_to().with_body(fastjson::encode(&config)),
            )),
            None => Ok(Some(request.response_to(
                ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("The consumer group[{}] not exist", h.group),
            ))),
        }
    }

    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (also what slaves copy): the whole table, or a page
    /// of it when the request asks for one (RocketMQ 5's `enableSplitMetadata`).
    pub(crate) fn all_configs(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetAllSubscriptionGroupRequestHeader = header(request)?;
        let (split, split_size) = {
            let c = self.config.read();
            (c.enable_split_metadata, c.split_metadata_size)
        };
        let paged = h.group_seq.is_some() || h.data_version.is_some() || h.max_group_num.is_some();
        let wrapper = if split && paged {
            let max = crate::paging::page_size(h.max_group_num, split_size);
            self.groups
                .page(h.data_version.as_deref(), h.group_seq, max)
        } else {
            self.groups.wrapper()
        };
        let total = GetAllSubscriptionGroupResponseHeader {
            total_group_num: Some(i32::try_from(self.groups.len()).unwrap_or(i32::MAX)),
        };
        Ok(Some(
            request
                .success_to()
                .with_ext_fields(total.to_ext_fields())
                .with_body(fastjson::encode(&wrapper)),
        ))
    }
}

#[cfg(test)]
mod tests;
