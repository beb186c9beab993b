//! RECALL_MESSAGE as a RocketMQ 5.3.2+ producer sends it, with the handle its timer send
//! answered, over an in-memory connection to a real broker. Timers fall due on the broker's
//! clock, which the tests move: nothing here sleeps.

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::recall::RecallHandle;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_store::AcceptAll;

use crate::testing::{assert_success, request, send_request, Fixture};
use crate::timer::{TimerService, TIMER_TOPIC};

async fn recalling_broker() -> Fixture {
    Fixture::start_with(|c| c.broker.recall_message_enable = true).await
}

/// A timer message of `topic` with UNIQ_KEY `uniq`, due in a minute; its recall handle.
async fn timer_sent(broker: &Fixture, topic: &str, uniq: &str) -> String {
    let due = crate::context::now_ms() + 60_000;
    let properties = format!("UNIQ_KEY\u{1}{uniq}\u{2}TIMER_DELIVER_MS\u{1}{due}\u{2}");
    let sent = broker
        .call(send_request(topic, 0, uniq.as_bytes(), &properties))
        .await;
    assert_success(&sent);
    sent.ext_fields
        .get("recallHandle")
        .expect("a timer send answers a recall handle")
        .to_owned()
}

fn recall(topic: &str, handle: &str) -> RemotingCommand {
    request(
        RequestCode::RECALL_MESSAGE,
        &[
            ("producerGroup", "pg"),
            ("topic", topic),
            ("recallHandle", handle),
        ],
    )
}

/// The bodies and TIMER_DELIVER_MS of the messages delivered to queue 0 of `topic`.
fn delivered(broker: &Fixture, topic: &str) -> Vec<(String, Option<String>)> {
    let got = broker.state.store.get_messages(topic, 0, 0, 32, &AcceptAll);
    got.messages
        .iter()
        .map(|raw| {
            let (record, _) = MessageRecord::decode(raw, false).expect("a record");
            let deliver_ms = record.properties.get("TIMER_DELIVER_MS").map(str::to_owned);
            (
                String::from_utf8_lossy(&record.body).into_owned(),
                deliver_ms,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_recalled_timer_message_is_never_delivered_and_the_others_are() {
    let broker = recalling_broker().await;
    let first = timer_sent(&broker, "Later", "U1").await;
    let second = timer_sent(&broker, "Later", "U2").await;
    let decoded = RecallHandle::decode(&first).expect("a valid handle");
    assert_eq!(
        (
            decoded.topic.as_str(),
            decoded.broker_name.as_str(),
            decoded.message_id.as_str()
        ),
        ("Later", "broker-fixture", "U1")
    );
    let plain = broker.call(send_request("Later", 0, b"now", "")).await;
    assert!(plain.ext_fields.get("recallHandle").is_none());

    let recalled = broker.call(recall("Later", &first)).await;
    assert_success(&recalled);
    assert_eq!(recalled.ext_fields.get("msgId"), Some("U1"));

    broker.advance(Duration::from_secs(61));
    assert_eq!(broker.state.timers.tick().await, 1, "only the other one");
    broker.dispatched().await;
    let got = delivered(&broker, "Later");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "now");
    assert_eq!(got[1].0, "U2");
    assert!(
        got[1].1.is_some(),
        "a delivered timer keeps TIMER_DELIVER_MS (its delivery timestamp)"
    );

    for (handle, why) in [(&first, "recalled already"), (&second, "delivered")] {
        let refused = broker.call(recall("Later", handle)).await;
        assert_eq!(
            refused.code,
            ResponseCode::ILLEGAL_OPERATION.as_i32(),
            "{why}"
        );
        assert!(refused
            .remark
            .is_some_and(|r| r.contains("not waiting on this broker")));
    }
}

#[tokio::test]
async fn a_recall_is_kept_in_the_timer_queue_for_whoever_loads_it_next() {
    let broker = recalling_broker().await;
    let handle = timer_sent(&broker, "Later", "U1").await;
    assert_success(&broker.call(recall("Later", &handle)).await);
    broker.dispatched().await;
    // A service loading the queue afresh (a restart, a promoted slave) sees the marker.
    let elsewhere = tempfile::tempdir().expect("a directory");
    let clock = Arc::new(crate::context::Clock::default());
    clock.advance(Duration::from_secs(61));
    let reloaded = TimerService::load(
        broker.state.store.clone(),
        elsewhere.path().join("timerProgress.json"),
        clock,
    )
    .expect("loads");
    assert_eq!(
        reloaded.tick().await,
        0,
        "the recalled timer is not delivered"
    );
    assert_eq!(reloaded.backlog(), 0);
    assert!(delivered(&broker, "Later").is_empty());
}

#[tokio::test]
async fn bad_forged_and_disallowed_recalls_are_refused_and_store_nothing() {
    let broker = recalling_broker().await;
    let handle = timer_sent(&broker, "Later", "U1").await;
    broker.dispatched().await;
    let timer_queue = || broker.state.store.max_offset_in_queue(TIMER_TOPIC, 0);
    let before = timer_queue();
    let forge = |topic: &str, broker_name: &str, at: i64, id: &str| {
        RecallHandle::for_timer(topic, broker_name, at, id).encode()
    };
    let soon = crate::context::now_ms() + 30_000;
    let illegal = ResponseCode::ILLEGAL_OPERATION.as_i32();
    for (topic, handle, code, says) in [
        (
            "Later",
            "not a handle".to_owned(),
            illegal,
            "recall handle is invalid",
        ),
        (
            "Other",
            handle.clone(),
            ResponseCode::TOPIC_NOT_EXIST.as_i32(),
            "not exist",
        ),
        (
            "Later",
            forge("Later2", "broker-fixture", soon, "U1"),
            illegal,
            "topic not match",
        ),
        (
            "Later",
            forge("Later", "broker-b", soon, "U1"),
            illegal,
            "not available",
        ),
        (
            "Later",
            forge("Later", "broker-fixture", soon - 60_000, "U1"),
            illegal,
            "timestamp invalid",
        ),
        (
            "Later",
            forge("Later", "broker-fixture", soon, "U9"),
            illegal,
            "not waiting",
        ),
    ] {
        let refused = broker.call(recall(topic, &handle)).await;
        assert_eq!(refused.code, code, "{says}: {:?}", refused.remark);
        assert!(
            refused.remark.as_deref().is_some_and(|r| r.contains(says)),
            "{:?} should say {says}",
            refused.remark
        );
    }
    assert_eq!(timer_queue(), before, "no marker stored");

    let off = Fixture::start().await;
    let handle = timer_sent(&off, "Later", "U1").await;
    let refused = off.call(recall("Later", &handle)).await;
    assert_eq!(refused.code, ResponseCode::NO_PERMISSION.as_i32());
    assert!(refused
        .remark
        .is_some_and(|r| r.contains("recallMessageEnable")));
}
