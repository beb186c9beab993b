//! Request processors: one module per area, all registered on the controller's remoting
//! server. Every error is a RocketMQ response code with a readable remark.

mod admin;
mod election;
mod raft_rpc;
mod register;
mod replica;

use std::sync::Arc;

use stellmq_remoting::net::{
    handler, Lane, ProcessFuture, ProcessorError, RemotingServer, RequestContext,
};
use stellmq_remoting::protocol::headers::CommandHeader;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

pub use election::{elect_and_notify, ElectOutcome};

use crate::node::ControllerNode;

/// Largest body of a broker or admin request (a SyncStateSet, a broker name list, config).
pub const MAX_REQUEST_BODY: usize = 64 * 1024;

/// Longest broker or cluster name accepted (RocketMQ's topic limit is 127).
const MAX_NAME: usize = 127;

type Handle = fn(Arc<ControllerNode>, RequestContext, RemotingCommand) -> ProcessFuture;

/// Serves the controller's request codes (behind ACL 2.0's check when `auth` is given)
/// and the Raft RPCs on `server`.
pub fn register(
    server: &mut RemotingServer,
    node: &Arc<ControllerNode>,
    auth: Option<Arc<crate::auth::ControllerAuth>>,
) {
    let brokers = Lane::new("controller", 8, 1024);
    let raft = Lane::new("controller-raft", 4, 256);
    let routes: [(RequestCode, Handle); 12] = [
        (
            RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
            register::next_broker_id,
        ),
        (
            RequestCode::CONTROLLER_APPLY_BROKER_ID,
            register::apply_broker_id,
        ),
        (
            RequestCode::CONTROLLER_REGISTER_BROKER,
            register::register_broker,
        ),
        (RequestCode::BROKER_HEARTBEAT, register::heartbeat),
        (
            RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
            replica::alter_sync_state_set,
        ),
        (
            RequestCode::CONTROLLER_GET_REPLICA_INFO,
            replica::get_replica_info,
        ),
        (
            RequestCode::CONTROLLER_GET_SYNC_STATE_DATA,
            replica::get_sync_state_data,
        ),
        (RequestCode::CLEAN_BROKER_DATA, replica::clean_broker_data),
        (RequestCode::CONTROLLER_ELECT_MASTER, election::elect_master),
        (
            RequestCode::CONTROLLER_GET_METADATA_INFO,
            admin::get_metadata,
        ),
        (RequestCode::GET_CONTROLLER_CONFIG, admin::get_config),
        (RequestCode::UPDATE_CONTROLLER_CONFIG, admin::update_config),
    ];
    for (code, handle) in routes {
        let served = handler(node, handle);
        let served: Arc<dyn stellmq_remoting::net::RequestProcessor> = match &auth {
            Some(auth) => Arc::new(crate::auth::Guarded {
                inner: served,
                auth: auth.clone(),
            }),
            None => served,
        };
        server.register(&[code], served, brokers.clone());
    }
    let raft_routes: [(RequestCode, Handle); 3] = [
        (
            RequestCode::STELLMQ_CONTROLLER_RAFT_APPEND,
            raft_rpc::append_entries,
        ),
        (RequestCode::STELLMQ_CONTROLLER_RAFT_VOTE, raft_rpc::vote),
        (
            RequestCode::STELLMQ_CONTROLLER_RAFT_SNAPSHOT,
            raft_rpc::install_snapshot,
        ),
    ];
    for (code, handle) in raft_routes {
        server.register(&[code], handler(node, handle), raft.clone());
    }
}

/// Runs `work` and turns its error into the response (CONTROLLER_NOT_LEADER with the
/// leader's address).
fn respond<F>(node: Arc<ControllerNode>, request: RemotingCommand, work: F) -> ProcessFuture
where
    F: std::future::Future<Output = Result<RemotingCommand, ProcessorError>> + Send + 'static,
{
    Box::pin(async move {
        match work.await {
            Ok(response) => Ok(Some(response)),
            Err(error) => {
                tracing::debug!(code = %error.code, remark = %error.remark, "controller request refused");
                Ok(Some(node.error_response(&request, error)))
            }
        }
    })
}

fn invalid(remark: impl Into<String>) -> ProcessorError {
    ProcessorError::new(ResponseCode::CONTROLLER_INVALID_REQUEST, remark)
}

/// The typed header, or CONTROLLER_INVALID_REQUEST naming the bad field.
fn header<H: CommandHeader>(request: &RemotingCommand) -> Result<H, ProcessorError> {
    H::from_ext_fields(&request.ext_fields).map_err(|e| invalid(e.to_string()))
}

/// Refuses bodies larger than [`MAX_REQUEST_BODY`].
fn check_body(request: &RemotingCommand) -> Result<(), ProcessorError> {
    if request.body.len() > MAX_REQUEST_BODY {
        return Err(invalid(format!(
            "request body of {} bytes exceeds the controller's limit of {MAX_REQUEST_BODY} bytes",
            request.body.len()
        )));
    }
    Ok(())
}

/// A broker or cluster name: 1..=127 characters of letters, digits and `-_%|.:`.
fn check_name(kind: &str, name: &str) -> Result<(), ProcessorError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_%|.:".contains(c));
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "{kind} '{name}' is invalid: 1 to {MAX_NAME} characters of letters, digits and -_%|.:"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        assert!(check_name("brokerName", "broker-a_1").is_ok());
        for bad in ["", "a b", "a/b", &"x".repeat(128)] {
            let err = check_name("brokerName", bad).expect_err(bad);
            assert_eq!(err.code, ResponseCode::CONTROLLER_INVALID_REQUEST);
        }
    }
}
