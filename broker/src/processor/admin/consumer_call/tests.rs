//! GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY and INVOKE_BROKER_TO_GET_CONSUMER_STATUS
//! as mqadmin sends them: relayed to consumer clients on their connections, over in-memory
//! connections to a real broker.

use std::time::Duration;

use stellmq_remoting::protocol::body::{fastjson, GetConsumerStatusBody};
use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, heartbeat, request, send_request, Client, Fixture};

const GROUP: &str = "called";

/// A consumer of [`GROUP`] as `client_id` that answers the broker with `answer`.
async fn consumer(
    broker: &Fixture,
    port: u16,
    client_id: &str,
    answer: impl Fn(&RemotingCommand) -> RemotingCommand + Send + Sync + 'static,
) -> Client {
    let client = broker.connect_answering(port, answer);
    let response = client
        .channel
        .invoke(heartbeat(client_id, GROUP, "Feed"), Duration::from_secs(10))
        .await
        .expect("answered");
    assert_success(&response);
    client
}

/// The next question the broker asked `client` of `code` (notifications aside).
async fn asked(client: &mut Client, code: RequestCode) -> RemotingCommand {
    loop {
        let question = tokio::time::timeout(Duration::from_secs(10), client.asked.recv())
            .await
            .expect("asked within 10 s")
            .expect("the connection is open");
        if question.code == code.as_i32() {
            return question;
        }
    }
}

fn running_info(client_id: &str) -> RemotingCommand {
    request(
        RequestCode::GET_CONSUMER_RUNNING_INFO,
        &[("consumerGroup", GROUP), ("clientId", client_id)],
    )
}

#[tokio::test]
async fn running_info_is_asked_of_the_named_client_and_its_answer_returned_as_it_is() {
    let broker = Fixture::start().await;
    let mut one = consumer(&broker, 1001, "client-1", |q| {
        q.success_to()
            .with_body(&b"{\"properties\":{\"who\":\"one\"}}"[..])
    })
    .await;
    let _two = consumer(&broker, 1002, "client-2", |q| {
        let mut refused = q.success_to();
        refused.code = ResponseCode::SYSTEM_ERROR.as_i32();
        refused.remark = Some("listener is busy".into());
        refused
    })
    .await;
    let answer = broker.call(running_info("client-1")).await;
    assert_success(&answer);
    assert_eq!(&answer.body[..], b"{\"properties\":{\"who\":\"one\"}}");
    let question = asked(&mut one, RequestCode::GET_CONSUMER_RUNNING_INFO).await;
    assert_eq!(question.ext_fields.get("clientId"), Some("client-1"));
    // A client's refusal comes back with its own code and words.
    let refused = broker.call(running_info("client-2")).await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert_eq!(refused.remark.as_deref(), Some("listener is busy"));
}

#[tokio::test]
async fn a_client_not_in_the_group_is_refused_without_asking_anyone() {
    let broker = Fixture::start().await;
    let mut one = consumer(&broker, 1001, "client-1", |q| q.success_to()).await;
    let refused = broker.call(running_info("client-9")).await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(refused.remark.is_some_and(|r| r.contains("not online")));
    // Only the membership notice of its own heartbeat reached the member.
    while let Ok(question) = one.asked.try_recv() {
        assert_eq!(
            question.code,
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED.as_i32()
        );
    }
}

#[tokio::test]
async fn a_message_consumed_directly_reaches_the_client_as_stored() {
    let broker = Fixture::start().await;
    let sent = broker
        .call(send_request("Feed", 0, b"direct", "KEYS\u{1}k1\u{2}"))
        .await;
    assert_success(&sent);
    let msg_id = SendMessageResponseHeader::from_ext_fields(&sent.ext_fields)
        .expect("a header")
        .msg_id;
    let mut one = consumer(&broker, 1001, "client-1", |q| {
        q.success_to()
            .with_body(&b"{\"consumeResult\":\"CR_SUCCESS\",\"order\":false}"[..])
    })
    .await;
    let answer = broker
        .call(request(
            RequestCode::CONSUME_MESSAGE_DIRECTLY,
            &[
                ("consumerGroup", GROUP),
                ("clientId", "client-1"),
                ("msgId", &msg_id),
                ("topic", "Feed"),
            ],
        ))
        .await;
    assert_success(&answer);
    assert!(String::from_utf8_lossy(&answer.body).contains("CR_SUCCESS"));
    let question = asked(&mut one, RequestCode::CONSUME_MESSAGE_DIRECTLY).await;
    assert_eq!(
        question.ext_fields.get("brokerName"),
        Some("broker-fixture")
    );
    let (record, _) = MessageRecord::decode(&question.body, false).expect("the stored record");
    assert_eq!(&record.body[..], b"direct");
    assert_eq!(record.topic, "Feed");
}

#[tokio::test]
async fn every_member_is_asked_for_its_status_and_the_answers_are_gathered() {
    let broker = Fixture::start().await;
    let status = |q: &RemotingCommand| {
        q.success_to()
            .with_body(&b"{\"messageQueueTable\":{},\"consumerTable\":{}}"[..])
    };
    let _one = consumer(&broker, 1001, "client-1", status).await;
    let _two = consumer(&broker, 1002, "client-2", status).await;
    let answer = broker
        .call(request(
            RequestCode::INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            &[("topic", "Feed"), ("group", GROUP)],
        ))
        .await;
    assert_success(&answer);
    let body: GetConsumerStatusBody = fastjson::decode(&answer.body).expect("a status body");
    let clients: Vec<&String> = body.consumer_table.keys().collect();
    assert_eq!(clients, ["client-1", "client-2"]);
    let nobody = broker
        .call(request(
            RequestCode::INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            &[("topic", "Feed"), ("group", "empty_group")],
        ))
        .await;
    assert_eq!(nobody.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(nobody
        .remark
        .is_some_and(|r| r.contains("No Any Consumer online")));
}
