//! NOTIFY_BROKER_ROLE_CHANGED (1008, RocketMQ 5 controller mode): the controller tells a
//! broker of its set that a master was elected. The notice goes to the controller client
//! loop ([`crate::replicas::manager`]), which switches the role; the request is answered at
//! once. A broker not in controller mode answers SYSTEM_ERROR.

use std::sync::{Arc, OnceLock};

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{fastjson, ElectMasterResponseBody};
use stellmq_remoting::protocol::headers::{CommandHeader, NotifyBrokerRoleChangedRequestHeader};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::replicas::manager::{NoticeSender, RoleNotice};

pub struct RoleNoticeProcessor {
    /// Set in controller mode once the loop runs.
    pub notices: Arc<OnceLock<NoticeSender>>,
}

impl RoleNoticeProcessor {
    pub(crate) fn role_changed(&self, request: &RemotingCommand) -> ProcessResult {
        let Some(notices) = self.notices.get() else {
            return Err(ProcessorError::system(
                "this request only for controllerMode",
            ));
        };
        let header = NotifyBrokerRoleChangedRequestHeader::from_ext_fields(&request.ext_fields)
            .map_err(|e| ProcessorError::new(ResponseCode::SYSTEM_ERROR, e.to_string()))?;
        let body: ElectMasterResponseBody = if request.body.is_empty() {
            ElectMasterResponseBody::default()
        } else {
            fastjson::decode(&request.body).map_err(|e| {
                ProcessorError::new(ResponseCode::SYSTEM_ERROR, format!("bad body: {e}"))
            })?
        };
        let (Some(master_id), Some(master_addr), Some(master_epoch)) = (
            header.master_broker_id,
            header.master_address.filter(|a| !a.is_empty()),
            header.master_epoch,
        ) else {
            return Err(ProcessorError::new(
                ResponseCode::SYSTEM_ERROR,
                "the notification names no master (masterBrokerId, masterAddress, masterEpoch)",
            ));
        };
        let notice = RoleNotice {
            master_id,
            master_addr,
            master_epoch,
            sync_state_set: body.sync_state_set,
            sync_state_set_epoch: header.sync_state_set_epoch.unwrap_or(0),
        };
        if notices.try_send(notice).is_err() {
            // The loop's periodic sync brings the same news a little later.
            tracing::warn!("role notifications pile up; this one is dropped");
        }
        Ok(Some(request.success_to()))
    }
}

#[cfg(test)]
mod tests;
