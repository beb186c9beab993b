//! RESUME_CHECK_HALF_MESSAGE as mqadmin's resumeCheckHalfMessage sends it, over an in-memory
//! connection to a real broker.

use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::{property, MessageRecord};
use stellmq_remoting::protocol::{RequestCode, ResponseCode};
use stellmq_store::AcceptAll;

use crate::testing::{assert_success, request, send_request, Fixture};
use crate::topic::TRANS_HALF_TOPIC;

fn resume(msg_id: &str) -> stellmq_remoting::protocol::RemotingCommand {
    request(RequestCode::RESUME_CHECK_HALF_MESSAGE, &[("msgId", msg_id)])
}

/// The half topic's message at `offset`.
fn half_at(broker: &Fixture, offset: i64) -> MessageRecord {
    let got = broker
        .state
        .store
        .get_messages(TRANS_HALF_TOPIC, 0, offset, 1, &AcceptAll);
    let raw = got.messages.first().expect("a half message there");
    MessageRecord::decode(raw, false).expect("a record").0
}

#[tokio::test]
async fn a_half_goes_back_to_the_half_queue_with_its_checks_at_zero() {
    let broker = Fixture::start().await;
    let properties =
        "TRAN_MSG\u{1}true\u{2}PGROUP\u{1}fixture_producer\u{2}TRANSACTION_CHECK_TIMES\u{1}15\u{2}";
    let sent = broker
        .call(send_request("Orders", 0, b"pending", properties))
        .await;
    assert_success(&sent);
    let h = SendMessageResponseHeader::from_ext_fields(&sent.ext_fields).expect("a header");
    assert_success(&broker.call(resume(&h.msg_id)).await);
    broker.dispatched().await;
    assert_eq!(
        broker.state.store.max_offset_in_queue(TRANS_HALF_TOPIC, 0),
        2
    );
    let again = half_at(&broker, 1);
    assert_eq!(&again.body[..], b"pending");
    assert_eq!(
        again.properties.get(property::TRANSACTION_CHECK_TIMES),
        Some("0")
    );
    assert_eq!(again.properties.get(property::REAL_TOPIC), Some("Orders"));
}

#[tokio::test]
async fn a_bad_or_unknown_message_id_is_refused_and_stores_nothing() {
    let broker = Fixture::start().await;
    let bad = broker.call(resume("not-an-id")).await;
    assert_eq!(bad.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(bad.remark.is_some_and(|r| r.contains("bad msgId")));
    // A well-formed id of an offset past the CommitLog's end.
    let unknown = broker
        .call(resume("7F00000100002A9F00000000FFFFFFFF"))
        .await;
    assert_eq!(unknown.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(unknown
        .remark
        .is_some_and(|r| r.contains("can not find message")));
    assert_eq!(
        broker.state.store.max_offset_in_queue(TRANS_HALF_TOPIC, 0),
        0
    );
}
