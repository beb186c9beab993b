//! Choosing a new master (RocketMQ's `DefaultElectPolicy`): among the alive members of the
//! SyncStateSet (then, with `enableElectUncleanMaster`, among all alive replicas), keep the
//! old master if it is alive, take the designated broker if one is asked for, else prefer the
//! highest epoch, then the highest max offset, then the lowest election priority value.

use std::collections::BTreeSet;

use crate::liveness::Liveness;
use crate::state::BrokerSet;

/// What an election is asked to do.
#[derive(Debug, Clone, Copy, Default)]
pub struct ElectRequest {
    /// The broker asking (its id), or the admin's choice; `None` when the controller itself
    /// elects after a master died.
    pub broker_id: Option<i64>,
    /// Elect exactly `broker_id` (admin `electMaster`).
    pub designate: bool,
    pub unclean: bool,
}

/// The new master, or `None` when no candidate is alive.
pub fn choose_master(set: &BrokerSet, live: &Liveness, request: ElectRequest) -> Option<i64> {
    if set.is_first_election() {
        if let Some(id) = request.broker_id.filter(|id| *id > 0) {
            return Some(id);
        }
    }
    let prefer = request.broker_id.filter(|_| request.designate);
    let mut chosen = try_elect(set, live, &set.sync_state_set, prefer);
    if chosen.is_none() && request.unclean {
        let all: BTreeSet<i64> = set.brokers.keys().copied().collect();
        chosen = try_elect(set, live, &all, prefer);
    }
    chosen
}

fn try_elect(
    set: &BrokerSet,
    live: &Liveness,
    candidates: &BTreeSet<i64>,
    prefer: Option<i64>,
) -> Option<i64> {
    let alive: Vec<i64> = candidates
        .iter()
        .copied()
        .filter(|id| set.brokers.contains_key(id) && live.is_alive(&set.broker_name, *id))
        .collect();
    if alive.is_empty() {
        return None;
    }
    if let Some(old) = set.master_broker_id.filter(|m| alive.contains(m)) {
        if prefer.is_none_or(|p| p == old) {
            return Some(old);
        }
    }
    if let Some(p) = prefer {
        return alive.contains(&p).then_some(p);
    }
    alive.into_iter().min_by_key(|id| {
        let info = live.get(&set.broker_name, *id);
        let (epoch, offset, priority) = info.map_or((i32::MIN, i64::MIN, i32::MAX), |i| {
            (i.epoch, i.max_offset, i.election_priority)
        });
        (
            std::cmp::Reverse(epoch),
            std::cmp::Reverse(offset),
            priority,
            *id,
        )
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::liveness::BrokerLiveInfo;
    use crate::state::BrokerIdInfo;

    fn set(master: Option<i64>, in_sync: &[i64]) -> BrokerSet {
        let mut set = BrokerSet {
            broker_name: "b".into(),
            master_broker_id: master,
            master_epoch: 1,
            sync_state_set: in_sync.iter().copied().collect(),
            ..BrokerSet::default()
        };
        for id in 1..=3 {
            set.brokers.insert(
                id,
                BrokerIdInfo {
                    address: format!("a{id}"),
                    register_check_code: String::new(),
                },
            );
        }
        set
    }

    fn beat(live: &Liveness, id: i64, epoch: i32, offset: i64) {
        live.on_heartbeat(
            "b",
            id,
            BrokerLiveInfo {
                cluster_name: "c".into(),
                broker_addr: format!("a{id}"),
                last_update: Instant::now(),
                timeout: Duration::from_secs(60),
                epoch,
                max_offset: offset,
                confirm_offset: offset,
                election_priority: 0,
            },
        );
    }

    #[test]
    fn prefers_alive_in_sync_replica_with_most_data() {
        let live = Liveness::default();
        beat(&live, 2, 1, 100);
        beat(&live, 3, 1, 200);
        let request = ElectRequest::default();
        assert_eq!(
            choose_master(&set(Some(1), &[1, 2, 3]), &live, request),
            Some(3)
        );
        assert_eq!(
            choose_master(&set(Some(1), &[1, 2]), &live, request),
            Some(2)
        );
    }

    #[test]
    fn out_of_sync_replica_only_when_unclean() {
        let live = Liveness::default();
        beat(&live, 3, 1, 500);
        let s = set(Some(1), &[1, 2]);
        assert_eq!(choose_master(&s, &live, ElectRequest::default()), None);
        let unclean = ElectRequest {
            unclean: true,
            ..ElectRequest::default()
        };
        assert_eq!(choose_master(&s, &live, unclean), Some(3));
    }

    #[test]
    fn alive_old_master_stays_and_designation_is_honoured() {
        let live = Liveness::default();
        beat(&live, 1, 1, 10);
        beat(&live, 2, 1, 10);
        let s = set(Some(1), &[1, 2]);
        assert_eq!(choose_master(&s, &live, ElectRequest::default()), Some(1));
        let designate = ElectRequest {
            broker_id: Some(2),
            designate: true,
            unclean: false,
        };
        assert_eq!(choose_master(&s, &live, designate), Some(2));
        let absent = ElectRequest {
            broker_id: Some(3),
            designate: true,
            unclean: false,
        };
        assert_eq!(choose_master(&s, &live, absent), None);
    }
}
