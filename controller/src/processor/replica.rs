//! SyncStateSets and replica metadata: CONTROLLER_ALTER_SYNC_STATE_SET,
//! CONTROLLER_GET_REPLICA_INFO, CONTROLLER_GET_SYNC_STATE_DATA and CLEAN_BROKER_DATA.

use std::collections::BTreeSet;
use std::sync::Arc;

use stellmq_remoting::net::{ProcessFuture, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::{
    fastjson, BrokerReplicasInfo, ReplicaIdentity, ReplicasInfo, SyncStateSet,
};
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::{check_body, check_name, header, invalid, respond};
use crate::node::ControllerNode;
use crate::state::{BrokerSet, Event};

pub fn alter_sync_state_set(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            check_body(&request)?;
            let h: AlterSyncStateSetRequestHeader = header(&request)?;
            check_name("brokerName", &h.broker_name)?;
            let set: SyncStateSet = fastjson::decode(&request.body)
                .map_err(|e| invalid(format!("the body is not a SyncStateSet: {e}")))?;
            let _guard = node.write_lock.lock().await;
            node.read_barrier().await?;
            if let Some(dead) = set
                .sync_state_set
                .iter()
                .find(|id| !node.liveness.is_alive(&h.broker_name, **id))
            {
                return Err(ProcessorError::new(
                    ResponseCode::CONTROLLER_BROKER_NOT_ALIVE,
                    format!("Rejecting alter syncStateSet request because the replicas {{{dead}}} don't alive"),
                ));
            }
            node.propose_ok(Event::AlterSyncStateSet {
                broker_name: h.broker_name.clone(),
                master_broker_id: h.master_broker_id,
                master_epoch: h.master_epoch,
                sync_state_set_epoch: set.sync_state_set_epoch,
                new_sync_state_set: set.sync_state_set.clone(),
            })
            .await?;
            let epoch = set.sync_state_set_epoch + 1;
            let response = AlterSyncStateSetResponseHeader {
                new_sync_state_set_epoch: epoch,
            };
            let body = SyncStateSet {
                sync_state_set: set.sync_state_set,
                sync_state_set_epoch: epoch,
            };
            Ok(request
                .success_to()
                .with_ext_fields(response.to_ext_fields())
                .with_body(fastjson::encode(&body)))
        }
    };
    respond(node, request, work)
}

fn metadata_missing() -> ProcessorError {
    ProcessorError::new(
        ResponseCode::CONTROLLER_BROKER_METADATA_NOT_EXIST,
        "Broker metadata is not existed",
    )
}

pub fn get_replica_info(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            let h: GetReplicaInfoRequestHeader = header(&request)?;
            check_name("brokerName", &h.broker_name)?;
            node.read_barrier().await?;
            let set = node
                .with_state(|s| s.broker_set(&h.broker_name).cloned())
                .ok_or_else(metadata_missing)?;
            let response = GetReplicaInfoResponseHeader {
                master_broker_id: set.master_broker_id,
                master_address: set.master_address().map(str::to_owned),
                master_epoch: Some(set.master_epoch),
            };
            let body = SyncStateSet {
                sync_state_set: set.sync_state_set.clone(),
                sync_state_set_epoch: set.sync_state_set_epoch,
            };
            Ok(request
                .success_to()
                .with_ext_fields(response.to_ext_fields())
                .with_body(fastjson::encode(&body)))
        }
    };
    respond(node, request, work)
}

fn replicas_info(node: &ControllerNode, set: &BrokerSet) -> ReplicasInfo {
    let mut info = ReplicasInfo {
        master_broker_id: set.master_broker_id,
        master_address: set.master_address().map(str::to_owned),
        master_epoch: set.master_epoch,
        sync_state_set_epoch: set.sync_state_set_epoch,
        ..ReplicasInfo::default()
    };
    for (id, broker) in &set.brokers {
        let replica = ReplicaIdentity {
            broker_name: set.broker_name.clone(),
            broker_id: *id,
            broker_address: broker.address.clone(),
            alive: node.liveness.is_heard(&set.broker_name, *id),
        };
        if set.sync_state_set.contains(id) {
            info.in_sync_replicas.push(replica);
        } else {
            info.not_in_sync_replicas.push(replica);
        }
    }
    info
}

pub fn get_sync_state_data(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            check_body(&request)?;
            let names: Vec<String> = if request.body.is_empty() {
                Vec::new()
            } else {
                fastjson::decode(&request.body).map_err(|e| {
                    invalid(format!("the body is not a JSON array of broker names: {e}"))
                })?
            };
            node.read_barrier().await?;
            let sets: Vec<BrokerSet> = node.with_state(|s| {
                names
                    .iter()
                    .filter_map(|n| s.broker_set(n).cloned())
                    .collect()
            });
            let mut body = BrokerReplicasInfo::default();
            for set in &sets {
                body.replicas_info_table
                    .insert(set.broker_name.clone(), replicas_info(&node, set));
            }
            Ok(request.success_to().with_body(fastjson::encode(&body)))
        }
    };
    respond(node, request, work)
}

fn parse_ids(text: &str) -> Result<BTreeSet<i64>, ProcessorError> {
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<i64>().map_err(|_| {
                ProcessorError::new(
                    ResponseCode::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                    format!("Please set the option <brokerControllerIdsToClean> according to the format, '{s}' is not a broker id"),
                )
            })
        })
        .collect()
}

pub fn clean_broker_data(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            let h: CleanControllerBrokerDataRequestHeader = header(&request)?;
            check_name("brokerName", &h.broker_name)?;
            let ids = parse_ids(h.broker_controller_ids_to_clean.as_deref().unwrap_or(""))?;
            let _guard = node.write_lock.lock().await;
            node.read_barrier().await?;
            if !h.is_clean_living_broker.unwrap_or(false) {
                check_not_alive(&node, &h.broker_name, &ids)?;
            }
            let list: Vec<i64> = ids.iter().copied().collect();
            node.propose_ok(Event::CleanBrokerData {
                broker_name: h.broker_name.clone(),
                broker_ids: (!ids.is_empty()).then_some(ids),
            })
            .await?;
            node.liveness.remove(&h.broker_name, &list);
            Ok(request.success_to())
        }
    };
    respond(node, request, work)
}

/// Without `isCleanLivingBroker`, only dead brokers (or a set without master) are cleaned.
fn check_not_alive(
    node: &ControllerNode,
    broker_name: &str,
    ids: &BTreeSet<i64>,
) -> Result<(), ProcessorError> {
    let refuse = |remark: String| {
        Err(ProcessorError::new(
            ResponseCode::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
            remark,
        ))
    };
    if ids.is_empty() {
        let has_master = node.with_state(|s| {
            s.broker_set(broker_name)
                .is_some_and(|set| set.master_broker_id.is_some())
        });
        if has_master {
            return refuse(format!(
                "Broker {broker_name} is still alive, clean up failure"
            ));
        }
    }
    if let Some(alive) = ids
        .iter()
        .find(|id| node.liveness.is_heard(broker_name, **id))
    {
        return refuse(format!(
            "Broker [{broker_name},  {alive}] is still alive, clean up failure"
        ));
    }
    Ok(())
}
