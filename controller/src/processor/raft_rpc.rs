//! The Raft RPCs between controllers (private codes 42001-42003): JSON in, the JSON of
//! `Result<response, RaftError>` out.

use std::sync::Arc;

use serde::Serialize;
use stellmq_remoting::net::{ProcessFuture, ProcessorError, RequestContext};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::network::MAX_RAFT_BODY;
use crate::node::ControllerNode;

/// The request's RPC: its size checked first, then (with `controllerRaftAuthSecret`) its
/// signature, then its JSON.
fn accept<T: serde::de::DeserializeOwned>(
    node: &ControllerNode,
    request: &RemotingCommand,
) -> Result<T, ProcessorError> {
    if request.body.len() > MAX_RAFT_BODY {
        return Err(ProcessorError::new(
            ResponseCode::CONTROLLER_INVALID_REQUEST,
            format!(
                "Raft RPC body of {} bytes exceeds {MAX_RAFT_BODY}",
                request.body.len()
            ),
        ));
    }
    node.peer_auth
        .verify(request, crate::peer_auth::now_ms())
        .map_err(|e| {
            tracing::warn!(code = request.code, reason = %e, "Raft RPC refused");
            ProcessorError::new(ResponseCode::NO_PERMISSION, e.to_string())
        })?;
    serde_json::from_slice(&request.body).map_err(|e| {
        ProcessorError::new(
            ResponseCode::CONTROLLER_INVALID_REQUEST,
            format!("malformed Raft RPC body: {e}"),
        )
    })
}

fn answer<T: Serialize>(
    request: &RemotingCommand,
    result: &T,
) -> Result<Option<RemotingCommand>, ProcessorError> {
    let body = serde_json::to_vec(result).map_err(|e| ProcessorError::system(e.to_string()))?;
    Ok(Some(request.success_to().with_body(body)))
}

pub fn append_entries(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    Box::pin(async move {
        let rpc = accept(&node, &request)?;
        answer(&request, &node.raft.append_entries(rpc).await)
    })
}

pub fn vote(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    Box::pin(async move {
        let rpc = accept(&node, &request)?;
        answer(&request, &node.raft.vote(rpc).await)
    })
}

pub fn install_snapshot(
    node: Arc<ControllerNode>,
    _ctx: RequestContext,
    request: RemotingCommand,
) -> ProcessFuture {
    Box::pin(async move {
        let rpc = accept(&node, &request)?;
        answer(&request, &node.raft.install_snapshot(rpc).await)
    })
}
