//! POP, ACK, CHANGE_MESSAGE_INVISIBLETIME and revive as a RocketMQ 5 consumer (or mqproxy)
//! sees them, over an in-memory connection to a real broker. Invisible times pass on the
//! broker's POP clock, advanced by the test: nothing here sleeps.

use std::time::Duration;

use stellmq_remoting::protocol::body::{fastjson, SubscriptionGroupConfig};
use stellmq_remoting::protocol::headers::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    CommandHeader, PopMessageRequestHeader, PopMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{property, MessageRecord};
use stellmq_remoting::protocol::pop::{attach_handles, ExtraInfo};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use stellmq_remoting::net::{Channel, RemotingError};

use crate::testing::{assert_success, eventually, send_request, Fixture};

const GROUP: &str = "pop_tests";
const BROKER: &str = "broker-fixture";

/// A message as a POP consumer holds it.
#[derive(Clone)]
struct Popped {
    body: String,
    handle: String,
    /// The topic it was read from (the POP retry topic for a retried message).
    read_from: String,
    reconsume_times: i32,
}

fn pop_request(group: &str, topic: &str, invisible_ms: i64, poll_ms: i64) -> RemotingCommand {
    let header = PopMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id: -1,
        max_msg_nums: 32,
        invisible_time: invisible_ms,
        poll_time: poll_ms,
        init_mode: Some(0),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::POP_MESSAGE, header.to_ext_fields())
}

/// The code of a POP answer of `group` and what it brought, each message with its handle.
fn popped(group: &str, response: &RemotingCommand) -> (i32, Vec<Popped>) {
    popped_as(group, false, response)
}

/// [`popped`] for a POP answer that is orderly when `order` is.
fn popped_as(group: &str, order: bool, response: &RemotingCommand) -> (i32, Vec<Popped>) {
    if response.code != ResponseCode::SUCCESS.as_i32() {
        return (response.code, Vec::new());
    }
    let h = PopMessageResponseHeader::from_ext_fields(&response.ext_fields).expect("a header");
    let mut records = MessageRecord::decode_all(response.body.clone(), true).expect("records");
    attach_handles(BROKER, order, &h, &mut records).expect("handles");
    let mut out: Vec<Popped> = records
        .into_iter()
        .map(|r| {
            let handle = r.properties.get(property::POP_CK).unwrap_or_default();
            let extra = ExtraInfo::parse(handle).expect("a handle");
            Popped {
                body: String::from_utf8_lossy(&r.body).into_owned(),
                handle: handle.to_owned(),
                read_from: extra.real_topic(&r.topic, group),
                reconsume_times: r.head.reconsume_times,
            }
        })
        .collect();
    out.sort_by(|a, b| a.body.cmp(&b.body));
    (response.code, out)
}

async fn pop(broker: &Fixture, topic: &str, invisible_ms: i64) -> Vec<Popped> {
    popped(
        GROUP,
        &broker
            .call(pop_request(GROUP, topic, invisible_ms, 0))
            .await,
    )
    .1
}

fn bodies(messages: &[Popped]) -> Vec<&str> {
    messages.iter().map(|m| m.body.as_str()).collect()
}

fn ack_request(group: &str, m: &Popped) -> RemotingCommand {
    let extra = ExtraInfo::parse(&m.handle).expect("a handle");
    let header = AckMessageRequestHeader {
        consumer_group: group.into(),
        topic: m.read_from.clone(),
        queue_id: extra.queue_id,
        extra_info: m.handle.clone(),
        offset: extra.queue_offset.expect("an eight-field handle"),
        lite_topic: None,
    };
    RemotingCommand::request(RequestCode::ACK_MESSAGE, header.to_ext_fields())
}

async fn ack(broker: &Fixture, m: &Popped) -> RemotingCommand {
    broker.call(ack_request(GROUP, m)).await
}

/// CHANGE_MESSAGE_INVISIBLETIME; the new handle when accepted.
async fn change(
    broker: &Fixture,
    m: &Popped,
    invisible_ms: i64,
) -> Result<String, RemotingCommand> {
    let extra = ExtraInfo::parse(&m.handle).expect("a handle");
    let header = ChangeInvisibleTimeRequestHeader {
        consumer_group: GROUP.into(),
        topic: m.read_from.clone(),
        queue_id: extra.queue_id,
        extra_info: m.handle.clone(),
        offset: extra.queue_offset.expect("an eight-field handle"),
        invisible_time: invisible_ms,
        lite_topic: None,
    };
    let response = broker
        .call(RemotingCommand::request(
            RequestCode::CHANGE_MESSAGE_INVISIBLETIME,
            header.to_ext_fields(),
        ))
        .await;
    if response.code != ResponseCode::SUCCESS.as_i32() {
        return Err(response);
    }
    let h = ChangeInvisibleTimeResponseHeader::from_ext_fields(&response.ext_fields)
        .expect("a change header");
    let new = ExtraInfo {
        ck_queue_offset: extra.queue_offset.unwrap_or_default(),
        pop_time: h.pop_time,
        invisible_time: h.invisible_time,
        revive_qid: h.revive_qid,
        ..extra
    };
    Ok(new.to_string())
}

async fn send_all(broker: &Fixture, topic: &str, bodies: &[&str]) {
    for body in bodies {
        let response = broker
            .call(send_request(topic, 0, body.as_bytes(), ""))
            .await;
        assert_eq!(response.code, ResponseCode::SUCCESS.as_i32());
    }
    broker.dispatched().await;
}

#[tokio::test]
async fn popped_messages_are_invisible_and_acked_ones_never_come_back() {
    let broker = Fixture::start().await;
    send_all(&broker, "PopAck", &["m0", "m1", "m2"]).await;
    let got = pop(&broker, "PopAck", 60_000).await;
    assert_eq!(bodies(&got), ["m0", "m1", "m2"]);
    assert!(got
        .iter()
        .all(|m| m.reconsume_times == 0 && m.read_from == "PopAck"));
    assert!(pop(&broker, "PopAck", 60_000).await.is_empty(), "invisible");
    assert_success(&ack(&broker, &got[0]).await);
    assert_success(&ack(&broker, &got[0]).await); // repeated while its batch is in flight
    for m in &got[1..] {
        assert_success(&ack(&broker, m).await);
    }
    let done = ack(&broker, &got[0]).await;
    assert_eq!(
        done.code,
        ResponseCode::NO_MESSAGE.as_i32(),
        "its batch is over"
    );
    broker.advance(Duration::from_secs(61));
    assert_eq!(broker.revive().await, 0, "nothing unacked to put back");
    assert!(pop(&broker, "PopAck", 60_000).await.is_empty());
    let other = popped(
        "other",
        &broker.call(pop_request("other", "PopAck", 60_000, 0)).await,
    )
    .1;
    assert_eq!(
        bodies(&other),
        ["m0", "m1", "m2"],
        "another group reads on its own"
    );
}

#[tokio::test]
async fn unacked_messages_come_back_through_the_retry_topic_after_their_invisible_time() {
    let broker = Fixture::start().await;
    send_all(&broker, "PopRevive", &["m0", "m1"]).await;
    let got = pop(&broker, "PopRevive", 60_000).await;
    assert_success(&ack(&broker, &got[0]).await);
    broker.advance(Duration::from_secs(30));
    assert_eq!(broker.revive().await, 0, "not due yet");
    broker.advance(Duration::from_secs(31));
    assert_eq!(broker.revive().await, 1, "only the unacked one is due");
    let back = pop(&broker, "PopRevive", 60_000).await;
    assert_eq!(bodies(&back), ["m1"]);
    assert_eq!(back[0].reconsume_times, 1);
    assert_eq!(back[0].read_from, format!("%RETRY%{GROUP}_PopRevive"));
    assert_success(&ack(&broker, &back[0]).await);
    broker.advance(Duration::from_secs(61));
    assert_eq!(broker.revive().await, 0, "the acked retry copy ends it");
    assert!(pop(&broker, "PopRevive", 60_000).await.is_empty());
}

#[tokio::test]
async fn a_late_ack_or_change_is_refused_and_the_message_comes_back() {
    let broker = Fixture::start().await;
    send_all(&broker, "PopLate", &["m0"]).await;
    let got = pop(&broker, "PopLate", 5_000).await;
    broker.advance(Duration::from_secs(6));
    let late = ack(&broker, &got[0]).await;
    assert_eq!(late.code, ResponseCode::NO_MESSAGE.as_i32());
    let remark = late.remark.unwrap_or_default();
    assert!(remark.contains("expired"), "{remark}");
    let refused = change(&broker, &got[0], 10_000).await.expect_err("refused");
    assert_eq!(refused.code, ResponseCode::NO_MESSAGE.as_i32());
    assert_eq!(broker.revive().await, 1);
    assert_eq!(bodies(&pop(&broker, "PopLate", 5_000).await), ["m0"]);
}

#[tokio::test]
async fn a_changed_invisible_time_replaces_the_handle_and_the_deadline() {
    let broker = Fixture::start().await;
    send_all(&broker, "PopChange", &["m0", "m1"]).await;
    let got = pop(&broker, "PopChange", 10_000).await;
    let extended = change(&broker, &got[0], 120_000).await.expect("extended");
    assert_ne!(extended, got[0].handle);
    change(&broker, &got[1], 0).await.expect("shortened");
    let spent = ack(&broker, &got[0]).await;
    assert_eq!(
        spent.code,
        ResponseCode::NO_MESSAGE.as_i32(),
        "the old handle is spent"
    );
    assert_eq!(broker.revive().await, 1, "the shortened one is due at once");
    assert_eq!(bodies(&pop(&broker, "PopChange", 120_000).await), ["m1"]);
    broker.advance(Duration::from_secs(11));
    assert_eq!(
        broker.revive().await,
        0,
        "past its first deadline the extended one stays"
    );
    let renewed = Popped {
        handle: extended,
        ..got[0].clone()
    };
    assert_success(&ack(&broker, &renewed).await);
    broker.advance(Duration::from_secs(120));
    assert_eq!(
        broker.revive().await,
        1,
        "only m1, popped again and never acked"
    );
}

#[tokio::test]
async fn past_the_groups_retries_a_message_goes_to_the_dead_letter_queue() {
    let broker = Fixture::start().await;
    let group = SubscriptionGroupConfig {
        retry_max_times: 1,
        ..SubscriptionGroupConfig::new(GROUP)
    };
    assert_success(
        &broker
            .call(
                RemotingCommand::request(
                    RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                    ExtFields::default(),
                )
                .with_body(fastjson::encode(&group)),
            )
            .await,
    );
    send_all(&broker, "PopDlq", &["m0"]).await;
    assert_eq!(pop(&broker, "PopDlq", 1_000).await.len(), 1);
    broker.advance(Duration::from_secs(2));
    assert_eq!(broker.revive().await, 1);
    let second = pop(&broker, "PopDlq", 1_000).await;
    assert_eq!(second[0].reconsume_times, 1);
    broker.advance(Duration::from_secs(2));
    broker.revive().await;
    let dlq = format!("%DLQ%{GROUP}");
    assert_eq!(
        broker.state.store.max_offset_in_queue(&dlq, 0),
        1,
        "in the DLQ"
    );
    broker.advance(Duration::from_secs(60));
    broker.revive().await;
    assert!(
        pop(&broker, "PopDlq", 1_000).await.is_empty(),
        "and never back"
    );
}

/// A POP of `PopWait` with a 30 s poll time sent on `channel`, once the broker holds it.
async fn held_pop(
    broker: &Fixture,
    channel: &Channel,
) -> tokio::task::JoinHandle<Result<RemotingCommand, RemotingError>> {
    let channel = channel.clone();
    let waiting = tokio::spawn(async move {
        let request = pop_request(GROUP, "PopWait", 60_000, 30_000);
        channel.invoke(request, Duration::from_secs(20)).await
    });
    eventually("the POP is held", || {
        broker.state.consumption.pop_hold.parked_count() == 1
    })
    .await;
    waiting
}

#[tokio::test]
async fn a_long_polling_pop_is_answered_by_a_new_message_or_at_its_poll_time() {
    let broker = Fixture::start().await;
    send_all(&broker, "PopWait", &["m0"]).await;
    assert_eq!(pop(&broker, "PopWait", 60_000).await.len(), 1);
    let consumer = broker.connect(2);
    let waiting = held_pop(&broker, &consumer.channel).await;
    send_all(&broker, "PopWait", &["m1"]).await;
    let answer = waiting.await.expect("ran").expect("answered");
    assert_eq!(bodies(&popped(GROUP, &answer).1), ["m1"]);

    // Nothing comes: the held POP ends when its poll time has passed on the broker's clock.
    let waiting = held_pop(&broker, &consumer.channel).await;
    broker.state.consumption.pop_hold.check_all();
    assert!(!waiting.is_finished(), "still within its poll time");
    broker.advance(Duration::from_secs(31));
    broker.state.consumption.pop_hold.check_all();
    let answer = waiting.await.expect("ran").expect("answered");
    assert_eq!(answer.code, ResponseCode::POLLING_TIMEOUT.as_i32());
}

/// An orderly POP of two messages of `PopFifo`'s queue 0, invisible for a minute.
async fn pop_in_order(broker: &Fixture) -> Vec<Popped> {
    let header = PopMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: "PopFifo".into(),
        queue_id: 0,
        max_msg_nums: 2,
        invisible_time: 60_000,
        poll_time: 0,
        init_mode: Some(0),
        order: Some(true),
        ..Default::default()
    };
    let request = RemotingCommand::request(RequestCode::POP_MESSAGE, header.to_ext_fields());
    popped_as(GROUP, true, &broker.call(request).await).1
}

#[tokio::test]
async fn an_orderly_pop_holds_its_queue_until_the_batch_is_acked_or_its_time_is_up() {
    let broker = Fixture::start().await;
    send_all(&broker, "PopFifo", &["m0", "m1", "m2"]).await;
    let first = pop_in_order(&broker).await;
    assert_eq!(bodies(&first), ["m0", "m1"]);
    assert!(first.iter().all(|m| m.reconsume_times == 0));
    assert!(pop_in_order(&broker).await.is_empty(), "the queue is held");
    assert_success(&ack(&broker, &first[0]).await);
    assert!(
        pop_in_order(&broker).await.is_empty(),
        "still held: m1 is in flight"
    );
    broker.advance(Duration::from_secs(61));
    let again = pop_in_order(&broker).await;
    assert_eq!(
        bodies(&again),
        ["m1", "m2"],
        "in order, from the first unacked"
    );
    let m1 = again.iter().find(|m| m.body == "m1").expect("m1");
    assert_eq!(m1.reconsume_times, 1, "its second delivery");
    for m in &again {
        assert_success(&ack(&broker, m).await);
    }
    send_all(&broker, "PopFifo", &["m3"]).await;
    assert_eq!(
        bodies(&pop_in_order(&broker).await),
        ["m3"],
        "after the acked batch"
    );
}

#[tokio::test]
async fn a_runtime_permission_change_reaches_the_next_pop() {
    let broker = Fixture::start().await;
    send_all(&broker, "PopPerm", &["m"]).await;
    let update = |perm: &'static str| {
        crate::testing::request(RequestCode::UPDATE_BROKER_CONFIG, &[]).with_body(perm.as_bytes())
    };
    assert_success(&broker.call(update("brokerPermission=2\n")).await);
    let refused = broker.call(pop_request(GROUP, "PopPerm", 30_000, 0)).await;
    assert_eq!(refused.code, ResponseCode::NO_PERMISSION.as_i32());
    assert_success(&broker.call(update("brokerPermission=6\n")).await);
    assert_eq!(bodies(&pop(&broker, "PopPerm", 30_000).await), ["m"]);
}

fn peek_like(code: RequestCode, topic: &str, extra: &[(&str, &str)]) -> RemotingCommand {
    let mut fields = vec![("consumerGroup", GROUP), ("topic", topic), ("queueId", "0")];
    fields.extend_from_slice(extra);
    crate::testing::request(code, &fields)
}

async fn has_message(broker: &Fixture, topic: &str) -> bool {
    let answer = broker
        .call(peek_like(
            RequestCode::NOTIFICATION,
            topic,
            &[("pollTime", "0")],
        ))
        .await;
    assert_success(&answer);
    answer.ext_fields.get("hasMsg") == Some("true")
}

#[tokio::test]
async fn a_peek_reads_without_popping_and_a_notification_tells_what_a_pop_would_find() {
    let broker = Fixture::start().await;
    send_all(&broker, "Peeked", &["p0", "p1"]).await;
    let peek = broker
        .call(peek_like(
            RequestCode::PEEK_MESSAGE,
            "Peeked",
            &[("maxMsgNums", "32")],
        ))
        .await;
    assert_success(&peek);
    let peeked = MessageRecord::decode_all(peek.body.clone(), false).expect("records");
    let peeked: Vec<&[u8]> = peeked.iter().map(|r| &r.body[..]).collect();
    assert_eq!(peeked, [&b"p0"[..], &b"p1"[..]]);
    assert!(has_message(&broker, "Peeked").await);
    // Peeking took nothing: a POP still gets both.
    let popped = pop(&broker, "Peeked", 60_000).await;
    assert_eq!(bodies(&popped), ["p0", "p1"]);
    assert!(!has_message(&broker, "Peeked").await, "all popped");
}

#[tokio::test]
async fn polling_info_counts_the_pops_held_on_a_queue() {
    let broker = Fixture::start().await;
    send_all(&broker, "PopWait", &["m0"]).await;
    assert_eq!(pop(&broker, "PopWait", 60_000).await.len(), 1);
    let info = || broker.call(peek_like(RequestCode::POLLING_INFO, "PopWait", &[]));
    let before = info().await;
    assert_success(&before);
    assert_eq!(before.ext_fields.get("pollingNum"), Some("0"));
    // A POP of queue 0 (POLLING_INFO names one queue, as in RocketMQ), held.
    let mut on_queue_0 = pop_request(GROUP, "PopWait", 60_000, 30_000);
    on_queue_0.ext_fields.insert("queueId", "0");
    let channel = broker.connect(2).channel;
    let waiting =
        tokio::spawn(async move { channel.invoke(on_queue_0, Duration::from_secs(20)).await });
    eventually("the POP is held", || {
        broker.state.consumption.pop_hold.parked_count() == 1
    })
    .await;
    let held = info().await;
    assert_eq!(held.ext_fields.get("pollingNum"), Some("1"));
    send_all(&broker, "PopWait", &["m1"]).await;
    let answer = waiting.await.expect("ran").expect("answered");
    assert_eq!(bodies(&popped(GROUP, &answer).1), ["m1"]);
}
