//! Broker ids, registration and heartbeats: CONTROLLER_GET_NEXT_BROKER_ID,
//! CONTROLLER_APPLY_BROKER_ID, CONTROLLER_REGISTER_BROKER and BROKER_HEARTBEAT.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_remoting::net::{ProcessFuture, RequestContext};
use stellmq_remoting::protocol::body::{fastjson, SyncStateSet};
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::{check_body, check_name, header, invalid, respond};
use crate::liveness::{BrokerLiveInfo, DEFAULT_HEARTBEAT_TIMEOUT};
use crate::node::ControllerNode;
use crate::state::Event;

pub fn next_broker_id(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            let h: GetNextBrokerIdRequestHeader = header(&request)?;
            check_name("brokerName", &h.broker_name)?;
            node.read_barrier().await?;
            let next = node.with_state(|s| s.next_broker_id(&h.broker_name));
            let response = GetNextBrokerIdResponseHeader {
                cluster_name: h.cluster_name,
                broker_name: Some(h.broker_name),
                next_broker_id: Some(next),
            };
            Ok(request
                .success_to()
                .with_ext_fields(response.to_ext_fields()))
        }
    };
    respond(node, request, work)
}

pub fn apply_broker_id(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            let h: ApplyBrokerIdRequestHeader = header(&request)?;
            check_name("brokerName", &h.broker_name)?;
            let cluster = h.cluster_name.clone().unwrap_or_default();
            let address = h
                .register_check_code
                .split(';')
                .next()
                .unwrap_or_default()
                .to_owned();
            if address.is_empty() {
                return Err(invalid(
                    "registerCheckCode must be 'brokerAddress;timestamp'",
                ));
            }
            let _guard = node.write_lock.lock().await;
            node.propose_ok(Event::ApplyBrokerId {
                cluster_name: cluster.clone(),
                broker_name: h.broker_name.clone(),
                broker_id: h.applied_broker_id,
                address,
                register_check_code: h.register_check_code,
            })
            .await?;
            let response = ApplyBrokerIdResponseHeader {
                cluster_name: Some(cluster),
                broker_name: Some(h.broker_name),
            };
            Ok(request
                .success_to()
                .with_ext_fields(response.to_ext_fields()))
        }
    };
    respond(node, request, work)
}

pub fn register_broker(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            let h: RegisterBrokerToControllerRequestHeader = header(&request)?;
            check_name("brokerName", &h.broker_name)?;
            let _guard = node.write_lock.lock().await;
            node.read_barrier().await?;
            let set = node
                .with_state(|s| s.broker_set(&h.broker_name).cloned())
                .ok_or_else(|| {
                    stellmq_remoting::net::ProcessorError::new(
                        ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                        format!(
                            "Broker-set: {} hasn't been registered in controller",
                            h.broker_name
                        ),
                    )
                })?;
            let Some(known) = set.brokers.get(&h.broker_id) else {
                return Err(stellmq_remoting::net::ProcessorError::new(
                    ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                    format!(
                        "BrokerId: {} hasn't been registered in broker-set: {}",
                        h.broker_id, h.broker_name
                    ),
                ));
            };
            if known.address != h.broker_address {
                node.propose_ok(Event::UpdateBrokerAddress {
                    broker_name: h.broker_name.clone(),
                    broker_id: h.broker_id,
                    address: h.broker_address.clone(),
                })
                .await?;
            }
            let mut response = RegisterBrokerToControllerResponseHeader {
                cluster_name: Some(set.cluster_name.clone()),
                broker_name: Some(h.broker_name.clone()),
                ..Default::default()
            };
            if let Some(master) = set
                .master_broker_id
                .filter(|m| node.liveness.is_alive(&h.broker_name, *m))
            {
                response.master_broker_id = Some(master);
                response.master_address = if master == h.broker_id {
                    Some(h.broker_address.clone())
                } else {
                    set.address_of(master).map(str::to_owned)
                };
                response.master_epoch = Some(set.master_epoch);
                response.sync_state_set_epoch = Some(set.sync_state_set_epoch);
            }
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

pub fn heartbeat(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            check_body(&request)?;
            let h: BrokerHeartbeatRequestHeader = header(&request)?;
            check_name("brokerName", &h.broker_name)?;
            let Some(broker_id) = h.broker_id else {
                return Err(invalid("Heart beat with empty brokerId"));
            };
            // Followers record heartbeats too: a new leader must know who is alive.
            let timeout = h
                .heartbeat_timeout_mills
                .filter(|ms| *ms > 0)
                .map_or(DEFAULT_HEARTBEAT_TIMEOUT, |ms| {
                    Duration::from_millis(ms as u64)
                });
            node.liveness.on_heartbeat(
                &h.broker_name,
                broker_id,
                BrokerLiveInfo {
                    cluster_name: h.cluster_name,
                    broker_addr: h.broker_addr,
                    last_update: Instant::now(),
                    timeout,
                    epoch: h.epoch.unwrap_or(-1),
                    max_offset: h.max_offset.unwrap_or(-1),
                    confirm_offset: h.confirm_offset.unwrap_or(-1),
                    election_priority: h.election_priority.unwrap_or(i32::MAX),
                },
            );
            Ok(request.response_to(ResponseCode::SUCCESS, Some("Heart beat success".to_owned())))
        }
    };
    respond(node, request, work)
}
