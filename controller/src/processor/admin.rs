//! CONTROLLER_GET_METADATA_INFO (answered by any controller), GET_CONTROLLER_CONFIG and
//! UPDATE_CONTROLLER_CONFIG (per controller, as in RocketMQ).

use std::sync::Arc;

use stellmq_config::{format_properties, parse_config_changes};
use stellmq_remoting::net::{ProcessFuture, ProcessorError, RequestContext};
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::{check_body, invalid, respond};
use crate::node::ControllerNode;

pub fn get_metadata(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            let leader = node.leader();
            let config = node.config.read().clone();
            let response = GetMetaDataResponseHeader {
                group: Some(config.controller_dleger_group.clone()),
                controller_leader_id: leader.as_ref().map(|p| p.name.clone()),
                controller_leader_address: leader.map(|p| p.addr),
                is_leader: node.is_leader(),
                peers: Some(config.peers_text()),
            };
            Ok(request
                .success_to()
                .with_ext_fields(response.to_ext_fields()))
        }
    };
    respond(node, request, work)
}

pub fn get_config(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            let entries = node.config.read().entries();
            let text = format_properties(
                entries
                    .iter()
                    .filter(|(k, _)| !crate::config::SECRET_KEYS.contains(k))
                    .map(|(k, v)| (*k, v.clone())),
            );
            Ok(request.success_to().with_body(text.into_bytes()))
        }
    };
    respond(node, request, work)
}

pub fn update_config(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    let work = {
        let (node, request) = (node.clone(), request.clone());
        async move {
            check_body(&request)?;
            let changes =
                parse_config_changes(&request.body).map_err(|e| invalid(e.to_string()))?;
            let mut updated = node.config.read().clone();
            for (key, value) in &changes {
                if updated.is_blacklisted(key) {
                    return Err(ProcessorError::new(
                        ResponseCode::NO_PERMISSION,
                        format!("Can not update config in black list: {key}"),
                    ));
                }
                match updated.set(key, value) {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(invalid(format!("unknown controller config key '{key}'")))
                    }
                    Err(e) => return Err(invalid(e.to_string())),
                }
            }
            if let Err(e) = updated.validate() {
                return Err(invalid(e.to_string()));
            }
            *node.config.write() = updated;
            tracing::info!(?changes, "CONTROLLER_CONFIG_UPDATED");
            Ok(request.success_to())
        }
    };
    respond(node, request, work)
}
