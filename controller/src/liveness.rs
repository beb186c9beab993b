//! Broker liveness (RocketMQ's `DefaultBrokerHeartbeatManager`): the last heartbeat of every
//! broker with its timeout, epoch, offsets and election priority.
//!
//! Brokers send their heartbeats to every controller, as RocketMQ's do, and every controller
//! records them, leader or not; only the leader acts on them. So a new leader already knows
//! who is alive, and a master that dies just after a leader change is replaced within its own
//! heartbeat timeout. A broker a new leader has never heard from counts as alive for a grace
//! period (the default heartbeat timeout) after it took over, so a leader change alone never
//! makes a master look dead. When the connection a broker heartbeats over closes (the broker
//! process died), it counts as dead at once and the leader scans right away, as RocketMQ's
//! `onBrokerChannelClose` does.

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
    /// The connection the heartbeat came over (0: unknown).
    pub channel: u64,
    /// That connection closed: the broker counts as dead until it heartbeats again.
    pub closed: bool,
}

impl BrokerLiveInfo {
    pub fn is_alive(&self, now: Instant) -> bool {
        !self.closed && now.saturating_duration_since(self.last_update) <= self.timeout
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

    /// Starts (or stops) counting the leader's grace period. A controller that becomes
    /// leader may hold heartbeats from long ago (brokers heartbeat the leader only, and the
    /// connection a broker once used may have closed since): each broker it knows gets the
    /// grace of one it never heard from, so a leader change alone never makes a master look
    /// dead. One that is gone is found dead a heartbeat timeout later.
    pub fn reset(&self, leader: bool) {
        let mut table = self.table.lock();
        let now = Instant::now();
        table.leader_since = leader.then_some(now);
        if leader {
            for info in table.brokers.values_mut() {
                info.last_update = now;
                info.closed = false;
            }
        }
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

    /// A broker's connection closed (RocketMQ's `onBrokerChannelClose`): the brokers that
    /// heartbeat over it count as dead at once. True when there was one.
    pub fn on_channel_closed(&self, channel: u64) -> bool {
        let mut table = self.table.lock();
        let mut any = false;
        for info in table.brokers.values_mut() {
            if info.channel == channel && channel != 0 && !info.closed {
                info.closed = true;
                any = true;
            }
        }
        any
    }

    /// Forgets the heartbeats of `broker_name`'s brokers `ids` (cleaned broker data).
    pub fn remove(&self, broker_name: &str, ids: &[i64]) {
        let mut table = self.table.lock();
        for id in ids {
            table.brokers.remove(&(broker_name.to_owned(), *id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heard_at(last_update: Instant) -> BrokerLiveInfo {
        BrokerLiveInfo {
            cluster_name: "c".into(),
            broker_addr: "127.0.0.1:10911".into(),
            last_update,
            timeout: Duration::from_secs(1),
            epoch: 1,
            max_offset: 0,
            confirm_offset: 0,
            election_priority: 0,
            channel: 7,
            closed: false,
        }
    }

    #[test]
    fn a_new_leader_does_not_take_old_heartbeats_for_deaths() {
        let liveness = Liveness::default();
        let long_ago = Instant::now()
            .checked_sub(Duration::from_secs(5))
            .unwrap_or_else(Instant::now);
        liveness.on_heartbeat("a", 1, heard_at(long_ago));
        liveness.on_heartbeat("a", 2, heard_at(Instant::now()));
        assert!(liveness.on_channel_closed(7));
        assert!(!liveness.is_alive("a", 1), "stale");
        assert!(!liveness.is_alive("a", 2), "its connection closed");
        liveness.reset(true);
        assert!(liveness.is_alive("a", 1), "a fresh grace on leading");
        assert!(liveness.is_alive("a", 2), "a fresh grace on leading");
        assert!(liveness.is_alive("b", 0), "an unknown broker too");
    }
}
