//! The controller's side of ACL 2.0: with authenticationEnabled or authorizationEnabled,
//! every controller request (brokers' registrations, heartbeats and sync-state changes,
//! mqadmin's elections, clean-ups and config changes) must be signed by an enabled super
//! user ([`SuperUserGate`]): brokers sign with their inner credentials, which are super
//! users. Users the controller does not know from its config are read from the masters it
//! knows. The Raft RPCs between controllers keep their own secret
//! (`controllerRaftAuthSecret`).

use std::sync::Arc;

use stellmq_acl::auth::gate::SuperUserGate;
use stellmq_remoting::net::{ProcessFuture, ProcessorError, RequestContext, RequestProcessor};
use stellmq_remoting::protocol::signature::SessionCredentials;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::state_machine::SharedState;

pub struct ControllerAuth {
    gate: SuperUserGate,
    state: SharedState,
}

impl ControllerAuth {
    pub fn new(
        init_user: &str,
        inner: Option<SessionCredentials>,
        state: SharedState,
    ) -> Result<Self, String> {
        let gate = SuperUserGate::new("the controller", init_user, inner)?;
        Ok(Self { gate, state })
    }

    async fn check(
        &self,
        peer: std::net::SocketAddr,
        request: &RemotingCommand,
    ) -> Result<(), String> {
        let masters = || {
            self.state
                .read()
                .broker_sets
                .values()
                .filter_map(|set| set.master_address().map(str::to_owned))
                .collect()
        };
        self.gate.check(masters, peer, request).await
    }
}

/// A controller processor behind the check.
pub struct Guarded {
    pub inner: Arc<dyn RequestProcessor>,
    pub auth: Arc<ControllerAuth>,
}

impl RequestProcessor for Guarded {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let (inner, auth) = (self.inner.clone(), self.auth.clone());
        Box::pin(async move {
            if let Err(reason) = auth.check(ctx.channel.peer(), &request).await {
                return Err(ProcessorError::new(ResponseCode::NO_PERMISSION, reason));
            }
            inner.process(ctx, request).await
        })
    }
}
