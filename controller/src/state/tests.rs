use super::*;

fn apply_id(state: &mut ControllerState, id: i64, code: &str) -> Applied {
    state.apply(&Event::ApplyBrokerId {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        broker_id: id,
        address: format!("127.0.0.1:{}", 10000 + id),
        register_check_code: code.into(),
    })
}

fn three_brokers() -> ControllerState {
    let mut state = ControllerState::default();
    for id in 1..=3 {
        assert!(apply_id(&mut state, id, &format!("a{id}")).is_ok());
    }
    state
}

fn elect(state: &mut ControllerState, id: Option<i64>) -> Applied {
    let epoch = state.broker_set("b").map_or(0, |s| s.master_epoch);
    state.apply(&Event::ElectMaster {
        broker_name: "b".into(),
        new_master: id,
        expected_master_epoch: epoch,
    })
}

fn alter(
    state: &mut ControllerState,
    master: i64,
    epoch: i32,
    set_epoch: i32,
    ids: &[i64],
) -> Applied {
    state.apply(&Event::AlterSyncStateSet {
        broker_name: "b".into(),
        master_broker_id: master,
        master_epoch: epoch,
        sync_state_set_epoch: set_epoch,
        new_sync_state_set: ids.iter().copied().collect(),
    })
}

#[test]
fn ids_are_assigned_in_order_and_checked() {
    let mut state = ControllerState::default();
    assert_eq!(state.next_broker_id("b"), 1);
    let refused = apply_id(&mut state, 2, "x");
    assert_eq!(
        refused.code,
        ResponseCode::CONTROLLER_BROKER_ID_INVALID.as_i32()
    );
    assert!(apply_id(&mut state, 1, "a1").is_ok());
    assert_eq!(state.next_broker_id("b"), 2);
    assert!(
        apply_id(&mut state, 1, "a1").is_ok(),
        "the same broker may apply again"
    );
    let taken = apply_id(&mut state, 1, "other");
    assert_eq!(
        taken.code,
        ResponseCode::CONTROLLER_BROKER_ID_INVALID.as_i32()
    );
    assert!(apply_id(&mut state, 2, "a2").is_ok());
    assert_eq!(state.next_broker_id("b"), 3);
}

#[test]
fn first_election_sets_epoch_one_and_fences_stale_proposals() {
    let mut state = three_brokers();
    assert!(elect(&mut state, Some(1)).is_ok());
    let set = state.broker_set("b").expect("set");
    assert_eq!(
        (
            set.master_broker_id,
            set.master_epoch,
            set.sync_state_set_epoch
        ),
        (Some(1), 1, 1)
    );
    let stale = state.apply(&Event::ElectMaster {
        broker_name: "b".into(),
        new_master: Some(2),
        expected_master_epoch: 0,
    });
    assert_eq!(
        stale.code,
        ResponseCode::CONTROLLER_FENCED_MASTER_EPOCH.as_i32()
    );
}

#[test]
fn alter_follows_rocketmq_rules() {
    let mut state = three_brokers();
    assert!(elect(&mut state, Some(1)).is_ok());
    let code = |a: Applied| ResponseCode::from_i32(a.code);
    assert_eq!(
        code(alter(&mut state, 2, 1, 1, &[1, 2])),
        Some(ResponseCode::CONTROLLER_INVALID_MASTER)
    );
    assert_eq!(
        code(alter(&mut state, 1, 0, 1, &[1, 2])),
        Some(ResponseCode::CONTROLLER_FENCED_MASTER_EPOCH)
    );
    assert_eq!(
        code(alter(&mut state, 1, 1, 0, &[1, 2])),
        Some(ResponseCode::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH)
    );
    assert_eq!(
        code(alter(&mut state, 1, 1, 1, &[2, 3])),
        Some(ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED)
    );
    assert_eq!(
        code(alter(&mut state, 1, 1, 1, &[1, 9])),
        Some(ResponseCode::CONTROLLER_INVALID_REPLICAS)
    );
    assert!(alter(&mut state, 1, 1, 1, &[1, 2]).is_ok());
    let set = state.broker_set("b").expect("set");
    assert_eq!(set.sync_state_set_epoch, 2);
    assert_eq!(set.sync_state_set, [1, 2].into_iter().collect());
}

#[test]
fn no_master_election_bumps_epoch_and_keeps_set() {
    let mut state = three_brokers();
    assert!(elect(&mut state, Some(1)).is_ok());
    assert!(alter(&mut state, 1, 1, 1, &[1, 2]).is_ok());
    assert!(elect(&mut state, None).is_ok());
    let set = state.broker_set("b").expect("set");
    assert_eq!((set.master_broker_id, set.master_epoch), (None, 2));
    assert_eq!(set.sync_state_set, [1, 2].into_iter().collect());
}

#[test]
fn clean_removes_ids_or_the_whole_set() {
    let mut state = three_brokers();
    assert!(state
        .apply(&Event::CleanBrokerData {
            broker_name: "b".into(),
            broker_ids: Some([3].into_iter().collect()),
        })
        .is_ok());
    assert!(!state.broker_set("b").expect("set").brokers.contains_key(&3));
    assert!(state
        .apply(&Event::CleanBrokerData {
            broker_name: "b".into(),
            broker_ids: None,
        })
        .is_ok());
    assert!(state.broker_set("b").is_none());
    let again = state.apply(&Event::CleanBrokerData {
        broker_name: "b".into(),
        broker_ids: None,
    });
    assert_eq!(
        again.code,
        ResponseCode::CONTROLLER_INVALID_CLEAN_BROKER_METADATA.as_i32()
    );
}
