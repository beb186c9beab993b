//! SEND_REPLY_MESSAGE as a replying consumer sends it: pushed to the requesting producer's
//! connection and stored in the cluster's reply topic, over in-memory connections to a real
//! broker.

use std::time::Duration;

use stellmq_remoting::protocol::body::{fastjson, HeartbeatData, ProducerData};
use stellmq_remoting::protocol::message::{property, Properties};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, send_request, Client, Fixture};

const REPLY_TOPIC: &str = "DefaultCluster_REPLY_TOPIC";

/// A producer of group `pg` connected as `client_id`, answering pushed replies with `code`.
async fn requester(broker: &Fixture, client_id: &str, code: ResponseCode) -> Client {
    let client = broker.connect_answering(3001, move |q| {
        let mut answer = q.success_to();
        answer.code = code.as_i32();
        answer
    });
    let data = HeartbeatData {
        client_id: client_id.into(),
        producer_data_set: vec![ProducerData {
            group_name: "pg".into(),
        }],
        consumer_data_set: Vec::new(),
    };
    let beat = RemotingCommand::request(RequestCode::HEART_BEAT, ExtFields::default())
        .with_body(fastjson::encode(&data));
    let answer = client
        .channel
        .invoke(beat, Duration::from_secs(10))
        .await
        .expect("answered");
    assert_success(&answer);
    client
}

fn reply(properties: &str) -> RemotingCommand {
    let mut request = send_request(REPLY_TOPIC, 0, b"the answer", properties);
    request.code = RequestCode::SEND_REPLY_MESSAGE.as_i32();
    request
}

#[tokio::test]
async fn a_reply_is_pushed_to_its_requester_and_stored() {
    let broker = Fixture::start().await;
    let mut asking = requester(&broker, "requester-1", ResponseCode::SUCCESS).await;
    let answered = broker
        .call(reply(
            "REPLY_TO_CLIENT\u{1}requester-1\u{2}CORRELATION_ID\u{1}c-7\u{2}",
        ))
        .await;
    assert_success(&answered);
    let pushed = tokio::time::timeout(Duration::from_secs(10), asking.asked.recv())
        .await
        .expect("pushed within 10 s")
        .expect("the connection is open");
    assert_eq!(
        pushed.code,
        RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT.as_i32()
    );
    assert_eq!(&pushed.body[..], b"the answer");
    let props = Properties::decode(pushed.ext_fields.get("properties").unwrap_or(""));
    assert_eq!(props.get(property::CORRELATION_ID), Some("c-7"));
    assert!(props.get(property::PUSH_REPLY_TIME).is_some());
    broker.dispatched().await;
    assert_eq!(broker.state.store.max_offset_in_queue(REPLY_TOPIC, 0), 1);
}

#[tokio::test]
async fn a_reply_that_reaches_no_requester_is_refused_with_the_reason() {
    let broker = Fixture::start().await;
    let _busy = requester(&broker, "requester-2", ResponseCode::SYSTEM_BUSY).await;
    for (properties, says) in [
        ("CORRELATION_ID\u{1}c-1\u{2}", "REPLY_TO_CLIENT] is null"),
        (
            "REPLY_TO_CLIENT\u{1}gone\u{2}",
            "channel of <gone> not found",
        ),
        (
            "REPLY_TO_CLIENT\u{1}requester-2\u{2}",
            "push reply message to requester-2 fail",
        ),
    ] {
        let refused = broker.call(reply(properties)).await;
        assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
        assert!(
            refused.remark.as_deref().is_some_and(|r| r.contains(says)),
            "{:?} should say {says}",
            refused.remark
        );
    }
}
