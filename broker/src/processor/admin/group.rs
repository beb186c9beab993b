//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP,
//! GET_ALL_SUBSCRIPTIONGROUP_CONFIG.

use std::sync::Arc;

use stellmq_remoting::net::{
    ProcessFuture, ProcessResult, ProcessorError, RequestContext, RequestProcessor,
};
use stellmq_remoting::protocol::body::{fastjson, SubscriptionGroupConfig};
use stellmq_remoting::protocol::headers::DeleteSubscriptionGroupRequestHeader;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use crate::group::SubscriptionGroupManager;
use crate::offset::ConsumerOffsetManager;
use crate::processor::header;

pub struct GroupAdminProcessor {
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    /// Slaves take their groups from the master.
    pub is_slave: bool,
}

impl GroupAdminProcessor {
    fn update(&self, request: &RemotingCommand) -> ProcessResult {
        let config: SubscriptionGroupConfig = fastjson::decode(&request.body)?;
        if config.group_name.trim().is_empty() {
            return Err(ProcessorError::system("groupName must not be empty"));
        }
        self.groups.update(config);
        Ok(Some(request.success_to()))
    }

    fn delete(&self, request: &RemotingCommand) -> ProcessResult {
        let h: DeleteSubscriptionGroupRequestHeader = header(request)?;
        self.groups.delete(&h.group_name);
        if h.remove_offset.or(h.clean_offset).unwrap_or(false) {
            self.offsets.remove_group(&h.group_name);
        }
        Ok(Some(request.success_to()))
    }
}

impl RequestProcessor for GroupAdminProcessor {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let result = match request.request_code_typed() {
            Some(
                RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
                | RequestCode::DELETE_SUBSCRIPTIONGROUP,
            ) if self.is_slave => Err(super::topic::slave_refuses("subscription groups")),
            Some(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) => self.update(&request),
            Some(RequestCode::DELETE_SUBSCRIPTIONGROUP) => self.delete(&request),
            Some(RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG) => Ok(Some(
                request
                    .success_to()
                    .with_body(fastjson::encode(&self.groups.wrapper())),
            )),
            _ => Ok(Some(request.not_supported_to())),
        };
        Box::pin(std::future::ready(result))
    }
}
