//! Broker liveness (RocketMQ's `DefaultBrokerHeartbeatManager`): the last heartbeat of every
//! broker with its timeout, epoch, offsets and election priority.
//!
//! Brokers send their heartbeats to every controller, as RocketMQ's do, and every controller
//! records them, leader or not; only the leader acts on them. So a new leader already knows
//! who is alive, and a master that dies just after a leader change is replaced within its own
//! heartbeat timeout. A broker a new leader has never heard from counts as alive for a grace
//! period (the default heartbeat timeout) after it took over, so a leader change alone never
//! makes a master look dead.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// RocketMQ's `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME` for the controller: 10 s.
pub const DEFAULT_HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(10);

/// One broker's last heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerLiveInfo {
    pub cluster_name: String,
    pub broker_addr: String,
    pub last_update: Instant,
    pub timeout: Duration,
    pub epoch: i32,
    pub max_offset: i64,
    pub confirm_offset: i64,
    /// Lower is preferred (RocketMQ's `electionPriority`).
    pub election_priority: i32,
}

impl BrokerLiveInfo {
    pub fn is_alive(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_update) <= self.timeout
    }
}

#[derive(Default)]
struct Table {
    brokers: HashMap<(String, i64), BrokerLiveInfo>,
    /// When this controller last became leader; `None` while it is not.
    leader_since: Option<Instant>,
}

/// The heartbeat table.
#[derive(Default)]
pub struct Liveness {
    table: Mutex<Table>,
}

impl Liveness {
    /// Records a heartbeat of `broker_name`/`broker_id`.
    pub fn on_heartbeat(&self, broker_name: &str, broker_id: i64, info: BrokerLiveInfo) {
        self.table
            .lock()
            .brokers
            .insert((broker_name.to_owned(), broker_id), info);
    }

    /// Starts (or stops) counting the leader's grace period; the heartbeats stay.
    pub fn reset(&self, leader: bool) {
        self.table.lock().leader_since = leader.then(Instant::now);
    }

    pub fn get(&self, broker_name: &str, broker_id: i64) -> Option<BrokerLiveInfo> {
        self.table
            .lock()
            .brokers
            .get(&(broker_name.to_owned(), broker_id))
            .cloned()
    }

    /// Alive by its last heartbeat, or unknown within the new leader's grace period.
    pub fn is_alive(&self, broker_name: &str, broker_id: i64) -> bool {
        let now = Instant::now();
        let table = self.table.lock();
        match table.brokers.get(&(broker_name.to_owned(), broker_id)) {
            Some(info) => info.is_alive(now),
            None => table.leader_since.is_some_and(|since| {
                now.saturating_duration_since(since) < DEFAULT_HEARTBEAT_TIMEOUT
            }),
        }
    }

    /// Alive by a heartbeat actually received.
    pub fn is_heard(&self, broker_name: &str, broker_id: i64) -> bool {
        self.get(broker_name, broker_id)
            .is_some_and(|info| info.is_alive(Instant::now()))
    }

    /// Forgets the heartbeats of `broker_name`'s brokers `ids` (cleaned broker data).
    pub fn remove(&self, broker_name: &str, ids: &[i64]) {
        let mut table = self.table.lock();
        for id in ids {
            table.brokers.remove(&(broker_name.to_owned(), *id));
        }
    }
}
