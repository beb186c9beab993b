//! The replicated state machine's data: every broker set's members, master, epochs and
//! SyncStateSet, changed only by [`Event`]s applied in log order.
//!
//! `apply` is deterministic and validates each event against the state it meets (epochs,
//! membership), so a stale or duplicated proposal is refused the same way on every
//! controller. Checks that need broker liveness happen on the leader before proposing.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use stellmq_remoting::protocol::ResponseCode;

/// RocketMQ's `MixAll.FIRST_BROKER_CONTROLLER_ID`.
pub const FIRST_BROKER_ID: i64 = 1;

/// One broker of a set: where it listens and the code it applied its id with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerIdInfo {
    pub address: String,
    pub register_check_code: String,
}

/// One broker set (`brokerName`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BrokerSet {
    pub cluster_name: String,
    pub broker_name: String,
    pub brokers: BTreeMap<i64, BrokerIdInfo>,
    pub next_broker_id: i64,
    pub master_broker_id: Option<i64>,
    pub master_epoch: i32,
    pub sync_state_set: BTreeSet<i64>,
    pub sync_state_set_epoch: i32,
}

impl BrokerSet {
    pub fn address_of(&self, broker_id: i64) -> Option<&str> {
        self.brokers.get(&broker_id).map(|b| b.address.as_str())
    }

    pub fn master_address(&self) -> Option<&str> {
        self.master_broker_id.and_then(|id| self.address_of(id))
    }

    /// No master was ever elected in this set.
    pub fn is_first_election(&self) -> bool {
        self.master_epoch == 0
    }
}

/// A change of the controller state, proposed by the leader and applied by every controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    ApplyBrokerId {
        cluster_name: String,
        broker_name: String,
        broker_id: i64,
        address: String,
        register_check_code: String,
    },
    UpdateBrokerAddress {
        broker_name: String,
        broker_id: i64,
        address: String,
    },
    /// `new_master: None` records that the master is gone and nobody could replace it.
    ElectMaster {
        broker_name: String,
        new_master: Option<i64>,
        expected_master_epoch: i32,
    },
    AlterSyncStateSet {
        broker_name: String,
        master_broker_id: i64,
        master_epoch: i32,
        sync_state_set_epoch: i32,
        new_sync_state_set: BTreeSet<i64>,
    },
    /// `broker_ids: None` removes the whole set.
    CleanBrokerData {
        broker_name: String,
        broker_ids: Option<BTreeSet<i64>>,
    },
}

/// The result of applying an event: SUCCESS or a RocketMQ response code with a remark.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Applied {
    pub code: i32,
    pub remark: String,
}

impl Applied {
    fn ok() -> Self {
        Self::default()
    }

    fn refused(code: ResponseCode, remark: String) -> Self {
        Self {
            code: code.as_i32(),
            remark,
        }
    }

    pub fn is_ok(&self) -> bool {
        self.code == ResponseCode::SUCCESS.as_i32()
    }
}

/// All broker sets by name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ControllerState {
    pub broker_sets: BTreeMap<String, BrokerSet>,
}

impl ControllerState {
    pub fn broker_set(&self, broker_name: &str) -> Option<&BrokerSet> {
        self.broker_sets.get(broker_name)
    }

    /// The id a new broker of `broker_name` should apply for.
    pub fn next_broker_id(&self, broker_name: &str) -> i64 {
        self.broker_set(broker_name)
            .map_or(FIRST_BROKER_ID, |set| set.next_broker_id)
    }

    /// Applies one event; refusals leave the state unchanged.
    pub fn apply(&mut self, event: &Event) -> Applied {
        match event {
            Event::ApplyBrokerId {
                cluster_name,
                broker_name,
                broker_id,
                address,
                register_check_code,
            } => self.apply_broker_id(
                cluster_name,
                broker_name,
                *broker_id,
                address,
                register_check_code,
            ),
            Event::UpdateBrokerAddress {
                broker_name,
                broker_id,
                address,
            } => self.update_address(broker_name, *broker_id, address),
            Event::ElectMaster {
                broker_name,
                new_master,
                expected_master_epoch,
            } => self.elect_master(broker_name, *new_master, *expected_master_epoch),
            Event::AlterSyncStateSet {
                broker_name,
                master_broker_id,
                master_epoch,
                sync_state_set_epoch,
                new_sync_state_set,
            } => self.alter_sync_state_set(
                broker_name,
                *master_broker_id,
                *master_epoch,
                *sync_state_set_epoch,
                new_sync_state_set,
            ),
            Event::CleanBrokerData {
                broker_name,
                broker_ids,
            } => self.clean(broker_name, broker_ids.as_ref()),
        }
    }

    fn apply_broker_id(
        &mut self,
        cluster_name: &str,
        broker_name: &str,
        broker_id: i64,
        address: &str,
        check_code: &str,
    ) -> Applied {
        let info = BrokerIdInfo {
            address: address.to_owned(),
            register_check_code: check_code.to_owned(),
        };
        let Some(set) = self.broker_sets.get_mut(broker_name) else {
            if broker_id != FIRST_BROKER_ID {
                return Applied::refused(
                    ResponseCode::CONTROLLER_BROKER_ID_INVALID,
                    format!("Broker-set: {broker_name} hasn't been registered in controller, but broker try to apply brokerId: {broker_id}"),
                );
            }
            let mut set = BrokerSet {
                cluster_name: cluster_name.to_owned(),
                broker_name: broker_name.to_owned(),
                next_broker_id: broker_id + 1,
                ..BrokerSet::default()
            };
            set.brokers.insert(broker_id, info);
            self.broker_sets.insert(broker_name.to_owned(), set);
            return Applied::ok();
        };
        match set.brokers.get(&broker_id) {
            Some(known) if known.register_check_code == check_code => Applied::ok(),
            Some(_) => Applied::refused(
                ResponseCode::CONTROLLER_BROKER_ID_INVALID,
                format!("Fail to apply brokerId: {broker_id} in broker-set: {broker_name}"),
            ),
            None if broker_id < FIRST_BROKER_ID => Applied::refused(
                ResponseCode::CONTROLLER_BROKER_ID_INVALID,
                format!("brokerId {broker_id} is not a controller-assigned id (they start at 1)"),
            ),
            None => {
                set.brokers.insert(broker_id, info);
                set.next_broker_id = set.next_broker_id.max(broker_id + 1);
                Applied::ok()
            }
        }
    }

    fn update_address(&mut self, broker_name: &str, broker_id: i64, address: &str) -> Applied {
        match self
            .broker_sets
            .get_mut(broker_name)
            .and_then(|set| set.brokers.get_mut(&broker_id))
        {
            Some(info) => {
                info.address = address.to_owned();
                Applied::ok()
            }
            None => Applied::refused(
                ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                format!(
                    "BrokerId: {broker_id} hasn't been registered in broker-set: {broker_name}"
                ),
            ),
        }
    }

    fn elect_master(
        &mut self,
        broker_name: &str,
        new_master: Option<i64>,
        expected: i32,
    ) -> Applied {
        let Some(set) = self.broker_sets.get_mut(broker_name) else {
            return Applied::refused(
                ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                "Broker hasn't been registered".to_owned(),
            );
        };
        if set.master_epoch != expected {
            return Applied::refused(
                ResponseCode::CONTROLLER_FENCED_MASTER_EPOCH,
                format!(
                    "master epoch changed to {} (election based on {expected})",
                    set.master_epoch
                ),
            );
        }
        if let Some(id) = new_master {
            if !set.brokers.contains_key(&id) {
                return Applied::refused(
                    ResponseCode::CONTROLLER_ELECT_MASTER_FAILED,
                    format!("brokerId {id} is not a member of broker-set {broker_name}"),
                );
            }
            set.sync_state_set = [id].into_iter().collect();
            set.sync_state_set_epoch += 1;
        }
        set.master_broker_id = new_master;
        set.master_epoch += 1;
        Applied::ok()
    }

    fn alter_sync_state_set(
        &mut self,
        broker_name: &str,
        master: i64,
        master_epoch: i32,
        set_epoch: i32,
        new_set: &BTreeSet<i64>,
    ) -> Applied {
        let Some(set) = self.broker_sets.get_mut(broker_name) else {
            return Applied::refused(
                ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "Broker metadata is not existed".to_owned(),
            );
        };
        if let Some(refusal) = check_alter(set, master, master_epoch, set_epoch, new_set) {
            return refusal;
        }
        set.sync_state_set = new_set.clone();
        set.sync_state_set_epoch += 1;
        Applied::ok()
    }

    fn clean(&mut self, broker_name: &str, ids: Option<&BTreeSet<i64>>) -> Applied {
        let Some(ids) = ids.filter(|ids| !ids.is_empty()) else {
            return match self.broker_sets.remove(broker_name) {
                Some(_) => Applied::ok(),
                None => not_existed(broker_name),
            };
        };
        let Some(set) = self.broker_sets.get_mut(broker_name) else {
            return not_existed(broker_name);
        };
        for id in ids {
            set.brokers.remove(id);
            set.sync_state_set.remove(id);
            if set.master_broker_id == Some(*id) {
                set.master_broker_id = None;
            }
        }
        if set.brokers.is_empty() {
            self.broker_sets.remove(broker_name);
        }
        Applied::ok()
    }
}

fn not_existed(broker_name: &str) -> Applied {
    Applied::refused(
        ResponseCode::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
        format!("Broker {broker_name} is not existed,clean broker data failure."),
    )
}

/// RocketMQ's rules for a SyncStateSet change, minus liveness (checked by the leader).
pub fn check_alter(
    set: &BrokerSet,
    master: i64,
    master_epoch: i32,
    set_epoch: i32,
    new_set: &BTreeSet<i64>,
) -> Option<Applied> {
    if set.master_broker_id != Some(master) {
        return Some(Applied::refused(
            ResponseCode::CONTROLLER_INVALID_MASTER,
            format!("Rejecting alter syncStateSet request because the current leader is:{{{}}}, not {{{master}}}",
                set.master_broker_id.map_or("null".to_owned(), |m| m.to_string())),
        ));
    }
    if master_epoch != set.master_epoch {
        return Some(Applied::refused(
            ResponseCode::CONTROLLER_FENCED_MASTER_EPOCH,
            format!("Rejecting alter syncStateSet request because the current master epoch is:{{{}}}, not {{{master_epoch}}}", set.master_epoch),
        ));
    }
    if set_epoch != set.sync_state_set_epoch {
        return Some(Applied::refused(
            ResponseCode::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            format!("Rejecting alter syncStateSet request because the current syncStateSet epoch is:{{{}}}, not {{{set_epoch}}}", set.sync_state_set_epoch),
        ));
    }
    if let Some(unknown) = new_set.iter().find(|id| !set.brokers.contains_key(id)) {
        return Some(Applied::refused(
            ResponseCode::CONTROLLER_INVALID_REPLICAS,
            format!("Rejecting alter syncStateSet request because the replicas {{{unknown}}} don't exist"),
        ));
    }
    if !new_set.contains(&master) {
        return Some(Applied::refused(
            ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            format!("Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {{{master}}}"),
        ));
    }
    if *new_set == set.sync_state_set {
        return Some(Applied::refused(
            ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet"
                .to_owned(),
        ));
    }
    None
}

#[cfg(test)]
mod tests;
