//! END_TRANSACTION as a transactional producer sees it, over an in-memory connection to a
//! real broker.

use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::id::decode_offset_msg_id;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, request, send_request, Fixture};

const COMMIT: &str = "8";
const ROLLBACK: &str = "12";

/// A half message's place: its CommitLog offset and its offset in the half topic.
struct Half {
    commit_log_offset: i64,
    queue_offset: i64,
    msg_id: String,
}

async fn send_half(broker: &Fixture, body: &str) -> Half {
    let properties = "TRAN_MSG\u{1}true\u{2}PGROUP\u{1}fixture_producer\u{2}";
    let response = broker
        .call(send_request("Orders", 0, body.as_bytes(), properties))
        .await;
    assert_success(&response);
    let h = SendMessageResponseHeader::from_ext_fields(&response.ext_fields).expect("a header");
    let (_, commit_log_offset) = decode_offset_msg_id(&h.msg_id).expect("an offsetMsgId");
    Half {
        commit_log_offset,
        queue_offset: h.queue_offset,
        msg_id: h.msg_id,
    }
}

fn end(half: &Half, group: &str, decision: &str) -> RemotingCommand {
    request(
        RequestCode::END_TRANSACTION,
        &[
            ("producerGroup", group),
            ("tranStateTableOffset", &half.queue_offset.to_string()),
            ("commitLogOffset", &half.commit_log_offset.to_string()),
            ("commitOrRollback", decision),
            ("msgId", &half.msg_id),
        ],
    )
}

async fn visible_in_orders(broker: &Fixture) -> i64 {
    broker.dispatched().await;
    broker.state.store.max_offset_in_queue("Orders", 0)
}

#[tokio::test]
async fn a_committed_half_becomes_consumable_once_and_a_rolled_back_one_never() {
    let broker = Fixture::start().await;
    let kept = send_half(&broker, "kept").await;
    let dropped = send_half(&broker, "dropped").await;
    assert_eq!(
        visible_in_orders(&broker).await,
        0,
        "halves are not consumable"
    );
    assert_success(&broker.call(end(&kept, "fixture_producer", COMMIT)).await);
    assert_success(
        &broker
            .call(end(&dropped, "fixture_producer", ROLLBACK))
            .await,
    );
    assert_eq!(
        visible_in_orders(&broker).await,
        1,
        "only the committed one"
    );
    // A repeated decision (the check service asked twice) changes nothing.
    assert_success(&broker.call(end(&kept, "fixture_producer", COMMIT)).await);
    assert_eq!(visible_in_orders(&broker).await, 1);
}

#[tokio::test]
async fn forged_or_malformed_decisions_are_refused_and_change_nothing() {
    let broker = Fixture::start().await;
    let half = send_half(&broker, "half").await;
    let refusal = |response: RemotingCommand| {
        assert_eq!(response.code, ResponseCode::SYSTEM_ERROR.as_i32());
        response.remark.unwrap_or_default()
    };
    let remark = refusal(broker.call(end(&half, "another_producer", COMMIT)).await);
    assert!(remark.contains("producer group wrong"), "{remark}");
    let remark = refusal(broker.call(end(&half, "fixture_producer", "5")).await);
    assert!(remark.contains("must be 0, 8 or 12"), "{remark}");
    let normal = broker.call(send_request("Orders", 0, b"plain", "")).await;
    let id = SendMessageResponseHeader::from_ext_fields(&normal.ext_fields).expect("a header");
    let (_, offset) = decode_offset_msg_id(&id.msg_id).expect("an offsetMsgId");
    let not_half = Half {
        commit_log_offset: offset,
        queue_offset: id.queue_offset,
        msg_id: id.msg_id,
    };
    let remark = refusal(
        broker
            .call(end(&not_half, "fixture_producer", COMMIT))
            .await,
    );
    assert!(
        remark.contains("not a prepared transaction message"),
        "{remark}"
    );
    assert_eq!(
        visible_in_orders(&broker).await,
        1,
        "only the plain message"
    );
}
