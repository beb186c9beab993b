//! NOTIFY_BROKER_ROLE_CHANGED and GET_BROKER_EPOCH_CACHE as a controller and mqadmin send
//! them, over an in-memory connection to a real broker.

use std::collections::BTreeSet;

use stellmq_remoting::protocol::body::{fastjson, ElectMasterResponseBody};
use stellmq_remoting::protocol::{RequestCode, ResponseCode};

use crate::replicas::manager::notice_channel;
use crate::testing::{assert_success, request, Fixture};

fn role_changed(
    fields: &[(&str, &str)],
    members: &[i64],
) -> stellmq_remoting::protocol::RemotingCommand {
    let body = ElectMasterResponseBody {
        broker_member_group: None,
        sync_state_set: members.iter().copied().collect(),
    };
    request(RequestCode::NOTIFY_BROKER_ROLE_CHANGED, fields).with_body(fastjson::encode(&body))
}

const ELECTED: &[(&str, &str)] = &[
    ("masterBrokerId", "2"),
    ("masterAddress", "127.0.0.1:20911"),
    ("masterEpoch", "3"),
    ("syncStateSetEpoch", "4"),
];

#[tokio::test]
async fn a_classic_broker_refuses_controller_requests() {
    let broker = Fixture::start().await;
    for asked in [
        role_changed(ELECTED, &[2]),
        request(RequestCode::GET_BROKER_EPOCH_CACHE, &[]),
    ] {
        let refused = broker.call(asked).await;
        assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
        assert!(refused
            .remark
            .is_some_and(|r| r.contains("only for controllerMode")));
    }
}

#[tokio::test]
async fn an_election_notice_reaches_the_controller_loop_as_sent() {
    let broker = Fixture::start().await;
    let (sender, mut notices) = notice_channel();
    assert!(broker.state.replication.role_notices.set(sender).is_ok());
    assert_success(&broker.call(role_changed(ELECTED, &[1, 2])).await);
    let notice = notices.try_recv().expect("the notice was passed on");
    assert_eq!(notice.master_id, 2);
    assert_eq!(notice.master_addr, "127.0.0.1:20911");
    assert_eq!(notice.master_epoch, 3);
    assert_eq!(notice.sync_state_set_epoch, 4);
    assert_eq!(notice.sync_state_set, BTreeSet::from([1, 2]));
}

#[tokio::test]
async fn a_notice_naming_no_master_is_refused_and_passes_nothing_on() {
    let broker = Fixture::start().await;
    let (sender, mut notices) = notice_channel();
    assert!(broker.state.replication.role_notices.set(sender).is_ok());
    let no_address = role_changed(&[("masterBrokerId", "2"), ("masterEpoch", "3")], &[2]);
    let refused = broker.call(no_address).await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(refused.remark.is_some_and(|r| r.contains("masterAddress")));
    let bad_body = request(RequestCode::NOTIFY_BROKER_ROLE_CHANGED, ELECTED).with_body(&b"{"[..]);
    let refused = broker.call(bad_body).await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(refused.remark.is_some_and(|r| r.contains("bad body")));
    assert!(notices.try_recv().is_err(), "nothing reached the loop");
}
