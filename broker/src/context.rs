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

pub use stellmq_remoting::protocol::message::now_ms;

/// The wall clock of time-driven request state (POP invisible times, revive, POP long-poll
/// deadlines): the system's, moved forward by what [`Clock::advance`] added. Tests jump past
/// an invisible time instead of sleeping through it; in production nothing advances it.
#[derive(Debug, Default)]
pub struct Clock {
    advanced_ms: std::sync::atomic::AtomicI64,
}

impl Clock {
    /// Milliseconds since the Unix epoch, as [`now_ms`] plus what was advanced.
    pub fn now_ms(&self) -> i64 {
        now_ms().saturating_add(self.advanced_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Moves this clock forward by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.advanced_ms
            .fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
    }
}
