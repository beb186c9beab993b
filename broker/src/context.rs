//! Who this broker is, as processors need to say it.

use std::net::SocketAddr;

/// Identity fixed at startup.
#[derive(Debug, Clone)]
pub struct BrokerIdentity {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    /// `brokerIP1:listenPort`: what clients dial and every record's STOREHOST.
    pub store_host: SocketAddr,
    pub broker_addr: String,
    pub ha_server_addr: String,
    pub region_id: String,
    pub trace_on: bool,
}

impl BrokerIdentity {
    pub fn is_master(&self) -> bool {
        self.broker_id == 0
    }
}

pub use stellmq_remoting::protocol::message::now_ms;
