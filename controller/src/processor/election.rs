//! CONTROLLER_ELECT_MASTER and the elections the leader starts itself, with the
//! NOTIFY_BROKER_ROLE_CHANGED that follows a new master.

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::net::{ProcessFuture, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::{fastjson, BrokerMemberGroup, ElectMasterResponseBody};
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::{check_name, header, respond};
use crate::elect::{choose_master, ElectRequest};
use crate::node::ControllerNode;
use crate::state::{BrokerSet, Event};

/// An election's answer: SUCCESS, CONTROLLER_MASTER_STILL_EXIST, or a failure code.
#[derive(Debug, Clone)]
pub struct ElectOutcome {
    pub code: ResponseCode,
    pub remark: String,
    pub header: ElectMasterResponseHeader,
    pub body: ElectMasterResponseBody,
}

fn member_group(set: &BrokerSet) -> BrokerMemberGroup {
    BrokerMemberGroup {
        cluster: set.cluster_name.clone(),
        broker_name: set.broker_name.clone(),
        broker_addrs: set
            .brokers
            .iter()
            .map(|(id, b)| (*id, b.address.clone()))
            .collect(),
    }
}

fn current(set: &BrokerSet, code: ResponseCode, remark: String) -> ElectOutcome {
    ElectOutcome {
        code,
        remark,
        header: ElectMasterResponseHeader {
            master_broker_id: set.master_broker_id,
            master_address: set.master_address().map(str::to_owned),
            master_epoch: Some(set.master_epoch),
            sync_state_set_epoch: Some(set.sync_state_set_epoch),
        },
        body: ElectMasterResponseBody {
            broker_member_group: Some(member_group(set)),
            sync_state_set: set.sync_state_set.clone(),
        },
    }
}

/// Elects a master of `broker_name` (under the write lock) and, on a new master, tells every
/// broker of the set when `notifyBrokerRoleChanged` is on.
pub async fn elect_and_notify(
    node: &Arc<ControllerNode>,
    broker_name: &str,
    request: ElectRequest,
) -> Result<ElectOutcome, ProcessorError> {
    let outcome = {
        let _guard = node.write_lock.lock().await;
        elect_locked(node, broker_name, request).await?
    };
    if outcome.code == ResponseCode::SUCCESS && node.config.read().notify_broker_role_changed {
        let node = node.clone();
        let notified = outcome.clone();
        tokio::spawn(async move { notify_role_changed(&node, &notified).await });
    }
    Ok(outcome)
}

async fn elect_locked(
    node: &ControllerNode,
    broker_name: &str,
    request: ElectRequest,
) -> Result<ElectOutcome, ProcessorError> {
    node.read_barrier().await?;
    let Some(set) = node.with_state(|s| s.broker_set(broker_name).cloned()) else {
        return Err(ProcessorError::new(
            ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
            "Broker hasn't been registered",
        ));
    };
    let chosen = choose_master(&set, &node.liveness, request);
    if chosen.is_some() && chosen == set.master_broker_id {
        let remark = format!("The old master {} is still alive, not need to elect new master for broker {broker_name}",
            set.master_broker_id.unwrap_or_default());
        return Ok(current(
            &set,
            ResponseCode::CONTROLLER_MASTER_STILL_EXIST,
            remark,
        ));
    }
    if chosen.is_none() && request.broker_id.is_some() {
        return Err(ProcessorError::new(
            ResponseCode::CONTROLLER_ELECT_MASTER_FAILED,
            "Failed to elect a new master",
        ));
    }
    if chosen.is_none() && set.master_broker_id.is_none() {
        return Err(ProcessorError::new(
            ResponseCode::CONTROLLER_MASTER_NOT_AVAILABLE,
            "The broker set has no master and no candidate is alive",
        ));
    }
    node.propose_ok(Event::ElectMaster {
        broker_name: broker_name.to_owned(),
        new_master: chosen,
        expected_master_epoch: set.master_epoch,
    })
    .await?;
    let Some(updated) = node.with_state(|s| s.broker_set(broker_name).cloned()) else {
        return Err(ProcessorError::system(
            "the broker set vanished during the election",
        ));
    };
    match chosen {
        Some(master) => {
            tracing::info!(
                broker_name,
                master,
                epoch = updated.master_epoch,
                "CONTROLLER_MASTER_ELECTED"
            );
            Ok(current(&updated, ResponseCode::SUCCESS, String::new()))
        }
        None => {
            tracing::warn!(broker_name, "CONTROLLER_NO_MASTER_ELECTABLE");
            Err(ProcessorError::new(
                ResponseCode::CONTROLLER_MASTER_NOT_AVAILABLE,
                "Old master has down and failed to elect a new broker master",
            ))
        }
    }
}

/// NOTIFY_BROKER_ROLE_CHANGED to every broker of the set (failures are logged: brokers also
/// learn the master from their next registration).
async fn notify_role_changed(node: &ControllerNode, outcome: &ElectOutcome) {
    let header = NotifyBrokerRoleChangedRequestHeader {
        master_address: outcome.header.master_address.clone(),
        master_epoch: outcome.header.master_epoch,
        sync_state_set_epoch: outcome.header.sync_state_set_epoch,
        master_broker_id: outcome.header.master_broker_id,
    };
    let body = fastjson::encode(&outcome.body);
    let addrs: Vec<String> = outcome
        .body
        .broker_member_group
        .as_ref()
        .map(|g| g.broker_addrs.0.values().cloned().collect())
        .unwrap_or_default();
    // All at once: an unreachable member (often the deposed master) must not hold back the
    // others' notifications by its timeout.
    let mut notifications = tokio::task::JoinSet::new();
    for addr in addrs {
        let request = RemotingCommand::request(
            RequestCode::NOTIFY_BROKER_ROLE_CHANGED,
            header.to_ext_fields(),
        )
        .with_body(body.clone());
        let client = node.client.clone();
        notifications.spawn(async move {
            match client.invoke(&addr, request, Duration::from_secs(3)).await {
                Ok(_) => tracing::info!(broker = %addr, "CONTROLLER_ROLE_CHANGE_NOTIFIED"),
                Err(e) => {
                    tracing::warn!(broker = %addr, error = %e, "role change notification failed")
                }
            }
        });
    }
    while notifications.join_next().await.is_some() {}
}

pub fn elect_master(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            let h: ElectMasterRequestHeader = header(&request)?;
            check_name("brokerName", &h.broker_name)?;
            let elect = ElectRequest {
                broker_id: h.broker_id.filter(|id| *id > 0),
                designate: h.designate_elect.unwrap_or(false),
                unclean: node.config.read().enable_elect_unclean_master,
            };
            let outcome = elect_and_notify(&node, &h.broker_name, elect).await?;
            let remark = (!outcome.remark.is_empty()).then_some(outcome.remark);
            Ok(request
                .response_to(outcome.code, remark)
                .with_ext_fields(outcome.header.to_ext_fields())
                .with_body(fastjson::encode(&outcome.body)))
        }
    };
    respond(node, request, work)
}
