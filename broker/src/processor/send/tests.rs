//! SEND_MESSAGE as a client sees it, over an in-memory connection to a real broker.

use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::testing::{send_request, Fixture};

fn sent(response: &RemotingCommand) -> SendMessageResponseHeader {
    assert_eq!(
        response.code,
        ResponseCode::SUCCESS.as_i32(),
        "refused: {:?}",
        response.remark
    );
    SendMessageResponseHeader::from_ext_fields(&response.ext_fields).expect("a send header")
}

fn refused(response: &RemotingCommand, code: ResponseCode) -> String {
    assert_eq!(
        response.code,
        code.as_i32(),
        "remark: {:?}",
        response.remark
    );
    response.remark.clone().unwrap_or_default()
}

#[tokio::test]
async fn sends_to_one_queue_take_consecutive_offsets() {
    let broker = Fixture::start().await;
    let first = sent(&broker.call(send_request("Orders", 2, b"a", "")).await);
    let second = sent(&broker.call(send_request("Orders", 2, b"b", "")).await);
    assert_eq!((first.queue_id, first.queue_offset), (2, 0));
    assert_eq!((second.queue_id, second.queue_offset), (2, 1));
    assert_ne!(first.msg_id, second.msg_id);
}

#[tokio::test]
async fn an_unknown_topic_is_refused_by_name_when_auto_creation_is_off() {
    let broker = Fixture::start_with(|c| c.broker.auto_create_topic_enable = false).await;
    let remark = refused(
        &broker.call(send_request("Nowhere", 0, b"x", "")).await,
        ResponseCode::TOPIC_NOT_EXIST,
    );
    assert!(remark.contains("topic[Nowhere] not exist"), "{remark}");
}

#[tokio::test]
async fn a_queue_past_the_topic_is_refused() {
    let broker = Fixture::start().await;
    sent(&broker.call(send_request("Orders", 0, b"a", "")).await);
    let remark = refused(
        &broker.call(send_request("Orders", 99, b"a", "")).await,
        ResponseCode::SYSTEM_ERROR,
    );
    assert!(remark.contains("queueId[99] is illegal"), "{remark}");
}

#[tokio::test]
async fn a_body_over_the_maximum_size_is_refused_and_not_stored() {
    let broker = Fixture::start().await;
    let max = broker.state.store.config().max_message_size;
    let remark = refused(
        &broker
            .call(send_request("Orders", 0, &vec![7u8; max + 1], ""))
            .await,
        ResponseCode::MESSAGE_ILLEGAL,
    );
    assert!(remark.contains("body size over max value"), "{remark}");
    let next = sent(&broker.call(send_request("Orders", 0, b"ok", "")).await);
    assert_eq!(next.queue_offset, 0, "the refused message took no offset");
}

#[tokio::test]
async fn system_topics_and_illegal_names_are_refused() {
    let broker = Fixture::start().await;
    for topic in ["SCHEDULE_TOPIC_XXXX", "rmq_sys_anything"] {
        let remark = refused(
            &broker.call(send_request(topic, 0, b"x", "")).await,
            ResponseCode::NO_PERMISSION,
        );
        assert!(remark.contains(topic), "{remark}");
    }
    let response = broker.call(send_request("bad/name", 0, b"x", "")).await;
    assert_ne!(response.code, ResponseCode::SUCCESS.as_i32());
    assert!(broker.state.topics.read("bad/name", |_| ()).is_none());
}

#[tokio::test]
async fn a_slave_refuses_sends() {
    let broker = Fixture::start_slave_with(|_| {}).await;
    let remark = refused(
        &broker.call(send_request("Orders", 0, b"x", "")).await,
        ResponseCode::SERVICE_NOT_AVAILABLE,
    );
    assert!(remark.contains("slave"), "{remark}");
}

/// The bodies of queue 0 of `lmq`, read from the store.
fn lmq_bodies(broker: &Fixture, lmq: &str) -> Vec<String> {
    let got = broker
        .state
        .store
        .get_messages(lmq, 0, 0, 32, &stellmq_store::AcceptAll);
    got.messages
        .iter()
        .map(|m| {
            let (record, _) = stellmq_remoting::protocol::message::MessageRecord::decode(m, true)
                .expect("a record");
            String::from_utf8_lossy(&record.body).into_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_lite_message_also_goes_to_its_lite_topics_queue_and_senders_name_no_other() {
    let broker = Fixture::start().await;
    let lite = "__LITE_TOPIC\u{1}session-1\u{2}";
    sent(&broker.call(send_request("Chat", 1, b"hello", lite)).await);
    // A sender naming light message queues itself is not obeyed.
    let forged =
        "INNER_MULTI_DISPATCH\u{1}%LMQ%$Chat$victim\u{2}INNER_MULTI_QUEUE_OFFSET\u{1}0\u{2}";
    sent(
        &broker
            .call(send_request("Chat", 1, b"forged", forged))
            .await,
    );
    let bad = "__LITE_TOPIC\u{1}../x\u{2}";
    let remark = refused(
        &broker.call(send_request("Chat", 1, b"bad", bad)).await,
        ResponseCode::MESSAGE_ILLEGAL,
    );
    assert!(remark.contains("lite topic"), "{remark}");
    broker.dispatched().await;
    assert_eq!(lmq_bodies(&broker, "%LMQ%$Chat$session-1"), ["hello"]);
    assert!(lmq_bodies(&broker, "%LMQ%$Chat$victim").is_empty());
    assert_eq!(broker.state.store.max_offset_in_queue("Chat", 1), 2);
}
