//! QUERY_MESSAGE and VIEW_MESSAGE_BY_ID as mqadmin's queryMsgByKey and queryMsgById see them,
//! over an in-memory connection to a real broker.

use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::id::decode_offset_msg_id;
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, request, send_request, Fixture};

/// Sends `body` to `Orders` with keys `keys` (space-separated); its offsetMsgId.
async fn send_with_keys(broker: &Fixture, body: &str, keys: &str) -> String {
    let properties = format!("KEYS\u{1}{keys}\u{2}");
    let response = broker
        .call(send_request("Orders", 0, body.as_bytes(), &properties))
        .await;
    assert_success(&response);
    SendMessageResponseHeader::from_ext_fields(&response.ext_fields)
        .expect("a send header")
        .msg_id
}

fn by_key(key: &str) -> RemotingCommand {
    request(
        RequestCode::QUERY_MESSAGE,
        &[
            ("topic", "Orders"),
            ("key", key),
            ("maxNum", "32"),
            ("beginTimestamp", "0"),
            ("endTimestamp", &i64::MAX.to_string()),
        ],
    )
}

fn bodies(response: &RemotingCommand) -> Vec<String> {
    let mut out: Vec<String> = MessageRecord::decode_all(response.body.clone(), true)
        .expect("records")
        .into_iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn messages_are_found_by_each_of_their_keys() {
    let broker = Fixture::start().await;
    send_with_keys(&broker, "first", "order-1 customer-7").await;
    send_with_keys(&broker, "second", "order-2 customer-7").await;
    broker.dispatched().await;
    let one = broker.call(by_key("order-1")).await;
    assert_success(&one);
    assert_eq!(bodies(&one), ["first"]);
    let both = broker.call(by_key("customer-7")).await;
    assert_eq!(bodies(&both), ["first", "second"]);
    let none = broker.call(by_key("order-3")).await;
    assert_eq!(none.code, ResponseCode::QUERY_NOT_FOUND.as_i32());
}

#[tokio::test]
async fn a_message_is_viewed_by_the_offset_in_its_id_and_a_bad_offset_is_refused() {
    let broker = Fixture::start().await;
    send_with_keys(&broker, "before", "k0").await;
    let id = send_with_keys(&broker, "wanted", "k1").await;
    let (_, offset) = decode_offset_msg_id(&id).expect("an offsetMsgId");
    let view = |offset: i64| {
        request(
            RequestCode::VIEW_MESSAGE_BY_ID,
            &[("offset", &offset.to_string())],
        )
    };
    let found = broker.call(view(offset)).await;
    assert_success(&found);
    assert_eq!(bodies(&found), ["wanted"]);
    let refused = broker.call(view(offset + 3)).await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
    let remark = refused.remark.unwrap_or_default();
    assert!(
        remark.contains("can not find message by the offset"),
        "{remark}"
    );
}
