//! GET_BROKER_EPOCH_CACHE (1007, RocketMQ 5 controller mode): the broker's epoch history and
//! CommitLog max offset, as `mqadmin getBrokerEpoch` and a controller read them.
//!
//! The request has no header. The body is RocketMQ's `EpochEntryCache`:
//! `{"brokerId":0,"brokerName":"broker-a","clusterName":"DefaultCluster",
//! "epochList":[{"endOffset":1024,"epoch":1,"startOffset":0}],"maxOffset":1024}`, the last
//! entry ending at the max offset. A broker not in controller mode answers SYSTEM_ERROR,
//! as RocketMQ's does ("this request only for controllerMode").

use std::sync::Arc;

use serde::Serialize;
use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::RemotingCommand;

use crate::context::BrokerIdentity;
use crate::replicas::RoleSwitcher;

/// One term, as RocketMQ's `EpochEntry` serializes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochEntryBody {
    pub end_offset: i64,
    pub epoch: i32,
    pub start_offset: i64,
}

/// RocketMQ's `EpochEntryCache`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochEntryCacheBody {
    pub broker_id: i64,
    pub broker_name: String,
    pub cluster_name: String,
    pub epoch_list: Vec<EpochEntryBody>,
    pub max_offset: i64,
}

pub struct EpochAdminProcessor {
    pub identity: Arc<BrokerIdentity>,
    /// Set in controller mode (after start-up, once the switcher exists).
    pub roles: Arc<std::sync::OnceLock<Arc<RoleSwitcher>>>,
}

impl EpochAdminProcessor {
    pub(crate) fn epoch_cache(&self, request: &RemotingCommand) -> ProcessResult {
        let Some(roles) = self.roles.get() else {
            return Err(ProcessorError::system(
                "this request only for controllerMode",
            ));
        };
        let list = roles.epoch_entries();
        let max_offset = roles.max_offset();
        let body = EpochEntryCacheBody {
            broker_id: self.identity.broker_id(),
            broker_name: self.identity.broker_name.clone(),
            cluster_name: self.identity.cluster_name.clone(),
            epoch_list: list
                .entries()
                .iter()
                .map(|e| EpochEntryBody {
                    end_offset: e.end_offset,
                    epoch: e.epoch,
                    start_offset: e.start_offset,
                })
                .collect(),
            max_offset,
        };
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&body)),
        ))
    }
}
