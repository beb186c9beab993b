//! Timer messages (RocketMQ 5.x arbitrary delays) over TCP: held back until due, in due
//! order rather than send order, delivered once even across a restart.

use std::time::{Duration, Instant};

use stellmq_remoting::protocol::ResponseCode;
use stellmq_testkit::{Pull, Stack};

fn bodies(records: &[stellmq_remoting::protocol::message::MessageRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect()
}

#[tokio::test]
async fn timers_are_delivered_when_due_in_due_order() {
    let stack = Stack::start().await;
    let sent = Instant::now();
    for (body, delay) in [("late", "900"), ("early", "300")] {
        let r = stack
            .send("Timed", 0, body, &[("TIMER_DELAY_MS", delay)])
            .await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
    }
    let past = (stellmq_broker::context::now_ms() - 1000).to_string();
    let r = stack
        .send("Timed", 0, "overdue", &[("TIMER_DELIVER_MS", &past)])
        .await;
    assert_eq!(r.code, 0);

    let first = stack.pull_until("timed", "Timed", 0, 1).await;
    assert_eq!(
        bodies(&first),
        ["overdue"],
        "an overdue timer is an ordinary send"
    );
    let all = stack.pull_until("timed", "Timed", 0, 3).await;
    assert_eq!(bodies(&all), ["overdue", "early", "late"]);
    assert!(
        sent.elapsed() >= Duration::from_millis(850),
        "the late timer waited for its time"
    );
    let late = &all[2];
    assert!(late.properties.get("REAL_TOPIC").is_none());
    // As in RocketMQ, a delivered timer keeps its timer properties (a RocketMQ 5 client's
    // delivery timestamp), and TIMER_OUT_MS keeps it from being parked again.
    assert_eq!(late.properties.get("TIMER_DELAY_MS"), Some("900"));
    assert!(late.properties.get("TIMER_OUT_MS").is_some());

    let too_far = stack
        .send("Timed", 0, "never", &[("TIMER_DELAY_SEC", "99999999")])
        .await;
    assert_eq!(too_far.code, ResponseCode::MESSAGE_ILLEGAL.as_i32());
    assert!(too_far.remark_str().contains("timerMaxDelaySec"));
    let both = stack
        .send(
            "Timed",
            0,
            "x",
            &[("TIMER_DELAY_MS", "500"), ("DELAY", "1")],
        )
        .await;
    assert_eq!(both.code, ResponseCode::MESSAGE_ILLEGAL.as_i32());
    stack.stop().await;
}

#[tokio::test]
async fn timers_survive_a_restart_and_are_delivered_once() {
    let mut stack = Stack::start().await;
    let r = stack
        .send("TimedRestart", 0, "before", &[("TIMER_DELAY_MS", "100")])
        .await;
    assert_eq!(r.code, 0);
    assert_eq!(stack.pull_until("t", "TimedRestart", 0, 1).await.len(), 1);
    let r = stack
        .send("TimedRestart", 0, "pending", &[("TIMER_DELAY_MS", "1500")])
        .await;
    assert_eq!(r.code, 0);
    stack.restart_broker(|_| {}).await;

    let got = stack.pull_until("t", "TimedRestart", 0, 2).await;
    assert_eq!(bodies(&got), ["before", "pending"]);
    // Timers are delivered in due order, and each delivery round first reloads what is not
    // yet marked delivered: once a timer due after both is delivered, a repeat of either
    // would have been delivered before it.
    let r = stack
        .send("TimedRestart", 0, "after", &[("TIMER_DELAY_MS", "100")])
        .await;
    assert_eq!(r.code, 0);
    let got = stack.pull_until("t", "TimedRestart", 0, 3).await;
    assert_eq!(
        bodies(&got),
        ["before", "pending", "after"],
        "nothing delivered twice after the restart"
    );
    let fourth = stack
        .pull(Pull::new("t", "TimedRestart", 0, 3).subscribe("*"))
        .await;
    assert_ne!(fourth.code, 0, "nothing delivered twice after the restart");
    stack.stop().await;
}

/// RECALL_MESSAGE from the Rust producer: the recalled timer never arrives, the other one
/// does, and a second recall is refused. Time passes on the broker's clock, moved forward.
#[tokio::test]
async fn a_producer_recalls_a_timer_message_before_it_is_due() {
    use stellmq_client::{Message, Producer, ProducerConfig};
    let stack = Stack::start_with(|c| c.broker.recall_message_enable = true).await;
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: "recalling_producer".into(),
        ..Default::default()
    })
    .await
    .expect("producer");
    let due = stellmq_broker::context::now_ms() + 60_000;
    let queue = stellmq_remoting::protocol::body::MessageQueue {
        topic: "Recalled".into(),
        broker_name: "broker-a".into(),
        queue_id: 0,
    };
    let mut sent = Vec::new();
    for body in ["kept", "gone"] {
        let msg = Message::new("Recalled", body).with_deliver_time_ms(due);
        sent.push(producer.send_to_queue(msg, &queue).await.expect("sent"));
    }
    let handle = sent[1]
        .recall_handle
        .clone()
        .expect("a timer send answers a handle");
    let recalled = producer
        .recall_message("Recalled", &handle)
        .await
        .expect("recalled");
    assert_eq!(recalled, sent[1].msg_id);
    let again = producer
        .recall_message("Recalled", &handle)
        .await
        .expect_err("a second recall is refused");
    assert!(
        again.to_string().contains("not waiting on this broker"),
        "{again}"
    );

    stack.broker().clock().advance(Duration::from_secs(61));
    let got = stack.pull_until("recall_check", "Recalled", 0, 1).await;
    assert_eq!(bodies(&got), ["kept"]);
    stellmq_testkit::wait_for("every timer handled", stellmq_testkit::TIMEOUT, || {
        stack.broker().timer_backlog() == 0
    })
    .await;
    let all = stack.pull_until("recall_check", "Recalled", 0, 1).await;
    assert_eq!(bodies(&all), ["kept"], "the recalled one never arrives");
    producer.shutdown().await;
    stack.stop().await;
}
