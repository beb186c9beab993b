//! `consumeMessage -s/-e`, `printMsg -c/-s/-b/-e/-d` and `updateTopic -a`, run as users
//! run them (the `mqadmin` binary) against an in-process name server and broker. The time
//! windows are exact: a message is printed iff its store time lies in `[begin, end]`.

use std::time::Duration;

use crate::tools_mqadmin::{mqadmin, ok};
use stellmq_client::{AdminClient, Message, Producer, ProducerConfig};
use stellmq_remoting::protocol::body::TopicConfig;
use stellmq_remoting::protocol::message::UtcTime;
use stellmq_testkit::Stack;

fn now_ms() -> i64 {
    stellmq_client::admin::now_ms()
}

/// RocketMQ's `yyyy-MM-dd#HH:mm:ss:SSS` (UTC here).
fn rocketmq_time(ms: i64) -> String {
    let t = UtcTime::from_ms(ms);
    format!(
        "{:04}-{:02}-{:02}#{:02}:{:02}:{:02}:{:03}",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
    )
}

/// A stack with `topic` on one queue, so that store order is send order.
async fn one_queue_stack(topic: &str) -> (Stack, Producer) {
    let stack = Stack::start().await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    admin
        .create_topic(stack.addr(), &TopicConfig::with_queues(topic, 1, 1, 6))
        .await
        .expect("topic");
    admin.shutdown().await;
    stack.broker().register_now().await;
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: "print-p".into(),
        ..Default::default()
    })
    .await
    .expect("producer");
    (stack, producer)
}

/// Sends `bodies` 30 ms apart; returns the times taken between sends: `marks[i]` lies after
/// message i was stored and before message i+1 was.
async fn send_spaced(p: &Producer, topic: &str, bodies: &[(&str, &str)]) -> Vec<i64> {
    let mut marks = Vec::new();
    for (i, (tag, body)) in bodies.iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            marks.push(now_ms());
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let m = Message::new(topic, body.as_bytes().to_vec()).with_tags(*tag);
        p.send(m).await.expect("send");
    }
    marks
}

fn bodies_of(out: &str, marker: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split(marker).nth(1))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_message_window_is_exact() {
    let (stack, p) = one_queue_stack("Windowed").await;
    let ns = stack.ns_addr();
    let marks = send_spaced(&p, "Windowed", &[("a", "m0"), ("a", "m1"), ("a", "m2")]).await;
    let (b, e) = (marks[0].to_string(), marks[1].to_string());
    let out = ok(
        ns,
        &["consumeMessage", "-t", "Windowed", "-s", &b, "-e", &e],
    )
    .await;
    assert_eq!(bodies_of(&out, "body: "), ["m1"], "{out}");
    // RocketMQ's date form, and open ends.
    let from = rocketmq_time(marks[0]);
    let out = ok(ns, &["consumeMessage", "-t", "Windowed", "-s", &from]).await;
    assert_eq!(bodies_of(&out, "body: "), ["m1", "m2"], "{out}");
    let out = ok(ns, &["consumeMessage", "-t", "Windowed", "-e", &b]).await;
    assert_eq!(bodies_of(&out, "body: "), ["m0"], "{out}");
    // With a count, by queue and offset.
    let out = ok(
        ns,
        &["consumeMessage", "-t", "Windowed", "-s", &b, "-c", "1"],
    )
    .await;
    assert_eq!(bodies_of(&out, "body: "), ["m1"], "{out}");
    // Bad input is named.
    let future = (now_ms() + 3_600_000).to_string();
    let (success, _, err) = mqadmin(ns, &["consumeMessage", "-t", "Windowed", "-s", &future]).await;
    assert!(!success && err.contains("before now"), "{err}");
    let (success, _, err) = mqadmin(
        ns,
        &["consumeMessage", "-t", "Windowed", "-s", &e, "-e", &b],
    )
    .await;
    assert!(!success && err.contains("after the end time"), "{err}");
    let (success, _, err) = mqadmin(ns, &["consumeMessage", "-t", "Windowed", "-s", "noon"]).await;
    assert!(!success && err.contains("cannot parse time"), "{err}");
    p.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_msg_filters_by_tag_time_and_prints_bodies_as_asked() {
    let (stack, p) = one_queue_stack("Printed").await;
    let ns = stack.ns_addr();
    let marks = send_spaced(
        &p,
        "Printed",
        &[("TagA", "first"), ("TagB", "café"), ("TagA", "third")],
    )
    .await;
    let all = ok(ns, &["printMsg", "-t", "Printed"]).await;
    assert_eq!(
        bodies_of(&all, "BODY: "),
        ["first", "café", "third"],
        "{all}"
    );
    assert!(all.contains("MessageExt [brokerName="), "{all}");

    let tag_a = ok(ns, &["printMsg", "-t", "Printed", "-s", "TagA"]).await;
    assert_eq!(bodies_of(&tag_a, "BODY: "), ["first", "third"], "{tag_a}");
    let either = ok(ns, &["printMsg", "-t", "Printed", "-s", "TagA || TagB"]).await;
    assert_eq!(bodies_of(&either, "BODY: ").len(), 3, "{either}");

    let (b, e) = (rocketmq_time(marks[0]), rocketmq_time(marks[1]));
    let window = ok(ns, &["printMsg", "-t", "Printed", "-b", &b, "-e", &e]).await;
    assert_eq!(bodies_of(&window, "BODY: "), ["café"], "{window}");

    let hidden = ok(ns, &["printMsg", "-t", "Printed", "-d", "false"]).await;
    assert_eq!(
        bodies_of(&hidden, "BODY: "),
        ["NOT PRINT BODY"; 3],
        "{hidden}"
    );

    let latin = ok(
        ns,
        &[
            "printMsg",
            "-t",
            "Printed",
            "-s",
            "TagB",
            "-c",
            "ISO-8859-1",
        ],
    )
    .await;
    assert_eq!(bodies_of(&latin, "BODY: "), ["cafÃ©"], "{latin}");
    let (success, _, err) = mqadmin(ns, &["printMsg", "-t", "Printed", "-c", "GBK"]).await;
    assert!(
        !success && err.contains("charset GBK is not supported"),
        "{err}"
    );
    p.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_topic_attributes_reach_the_broker() {
    let stack = Stack::start().await;
    let (ns, broker) = (stack.ns_addr(), stack.addr());
    let out = ok(
        ns,
        &[
            "updateTopic",
            "-b",
            broker,
            "-t",
            "Typed",
            "-a",
            "+message.type=NORMAL",
        ],
    )
    .await;
    assert!(out.contains("create topic to"), "{out}");
    let admin = AdminClient::new(ns).expect("admin");
    let attrs = |w: &stellmq_remoting::protocol::body::TopicConfigSerializeWrapper| {
        w.topic_config_table
            .get("Typed")
            .map(|t| t.attributes.clone())
            .unwrap_or_default()
    };
    let configs = admin.all_topic_config(broker).await.expect("configs");
    assert_eq!(
        attrs(&configs).get("message.type").map(String::as_str),
        Some("NORMAL")
    );
    // A second change replaces the value; `-key` removes it.
    ok(
        ns,
        &[
            "updateTopic",
            "-b",
            broker,
            "-t",
            "Typed",
            "-a",
            "+message.type=FIFO",
        ],
    )
    .await;
    let configs = admin.all_topic_config(broker).await.expect("configs");
    assert_eq!(
        attrs(&configs).get("message.type").map(String::as_str),
        Some("FIFO")
    );
    ok(
        ns,
        &[
            "updateTopic",
            "-b",
            broker,
            "-t",
            "Typed",
            "-a",
            "-message.type",
        ],
    )
    .await;
    let configs = admin.all_topic_config(broker).await.expect("configs");
    assert!(!attrs(&configs).contains_key("message.type"));
    let (success, _, err) = mqadmin(
        ns,
        &[
            "updateTopic",
            "-b",
            broker,
            "-t",
            "Typed",
            "-a",
            "+message.type=BOGUS",
        ],
    )
    .await;
    assert!(!success, "a bad attribute value is refused: {err}");
    admin.shutdown().await;
    stack.stop().await;
}
