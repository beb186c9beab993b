//! Who this broker is, as processors need to say it.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::replicas::role::RuntimeRole;

/// Identity fixed at startup, and the role (brokerId) that controller mode changes at runtime.
#[derive(Debug, Clone)]
pub struct BrokerIdentity {
    pub cluster_name: String,
    pub broker_name: String,
    /// brokerId and master epoch; fixed for a classic broker.
    pub role: Arc<RuntimeRole>,
    /// `brokerIP1:listenPort`: what clients dial and every record's STOREHOST.
    pub store_host: SocketAddr,
    pub broker_addr: String,
    pub ha_server_addr: String,
    pub region_id: String,
    pub trace_on: bool,
}

impl BrokerIdentity {
    pub fn is_master(&self) -> bool {
        self.role.is_master()
    }

    /// The brokerId now (0 = master).
    pub fn broker_id(&self) -> i64 {
        self.role.broker_id()
    }
}

pub use stellmq_remoting::protocol::message::{now_ms, Clock};
