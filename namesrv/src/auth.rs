//! The name server's side of ACL 2.0: with authenticationEnabled or authorizationEnabled,
//! its changes (topic and broker-permission edits, KV config, configuration updates) must
//! be signed by an enabled super user ([`SuperUserGate`]); route queries and broker
//! registration stay open, as with the plain ACL. Users it does not know from its config
//! are read from the registered masters, signed with the inner credentials.

use std::sync::Arc;

use stellmq_acl::auth::gate::SuperUserGate;
use stellmq_remoting::protocol::signature::SessionCredentials;
use stellmq_remoting::protocol::RemotingCommand;

use crate::route::RouteInfoManager;

pub struct NamesrvAuth {
    gate: SuperUserGate,
    routes: Arc<RouteInfoManager>,
}

impl NamesrvAuth {
    pub fn new(
        init_user: &str,
        inner: Option<SessionCredentials>,
        routes: Arc<RouteInfoManager>,
    ) -> Result<Self, String> {
        let gate = SuperUserGate::new("the name server", init_user, inner)?;
        Ok(Self { gate, routes })
    }

    /// Whether the change `request` is signed by an enabled super user.
    pub async fn check_change(
        &self,
        peer: std::net::SocketAddr,
        request: &RemotingCommand,
    ) -> Result<(), String> {
        let masters = || {
            self.routes
                .cluster_info()
                .broker_addr_table
                .values()
                .filter_map(|b| b.master_addr().map(str::to_owned))
                .collect()
        };
        self.gate.check(masters, peer, request).await
    }
}
