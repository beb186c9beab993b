//! The options RocketMQ 4.9.8's mqadmin has and StellMQ's lacked, run as users run them
//! (the `mqadmin` binary) against an in-process name server and broker: `topicRoute -l`,
//! `deleteSubGroup -r`, `brokerConsumeStats -l`, `clusterList -m`, `consumerProgress -s`,
//! `queryMsgByUniqueKey -a`, `resetOffsetByTime -s yyyy-MM-dd#HH:mm:ss:SSS`,
//! `updateTopic -u/-s`.

use std::time::Duration;

use crate::tools_mqadmin::{mqadmin, ok};
use stellmq_client::{
    AdminClient, ConsumeResult, ConsumerConfig, Message, Producer, ProducerConfig, PushConsumer,
};
use stellmq_remoting::protocol::body::{ConsumeFromWhere, TopicConfig};
use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::{request, wait_for, Stack};

const LONG: Duration = Duration::from_secs(30);

async fn stack_with(topics: &[&str]) -> Stack {
    let stack = Stack::start().await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    for topic in topics {
        admin
            .create_topic(stack.addr(), &TopicConfig::with_queues(*topic, 2, 2, 6))
            .await
            .expect("topic");
    }
    admin.shutdown().await;
    stack.broker().register_now().await;
    stack
}

async fn producer(ns: &str) -> Producer {
    Producer::start(ProducerConfig {
        namesrv_addr: ns.to_owned(),
        group: "letters-p".into(),
        ..Default::default()
    })
    .await
    .expect("producer")
}

/// The committed offset of `group` on queue 0 of `topic`, `None` when there is none.
async fn committed(stack: &Stack, group: &str, topic: &str) -> Option<i64> {
    let response = stack
        .call(request(
            RequestCode::QUERY_CONSUMER_OFFSET,
            &[("consumerGroup", group), ("topic", topic), ("queueId", "0")],
        ))
        .await;
    (response.code == 0)
        .then(|| {
            response
                .ext_fields
                .get("offset")
                .and_then(|o| o.parse().ok())
        })
        .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_route_list_and_unit_flags() {
    let stack = stack_with(&[]).await;
    let (ns, broker) = (stack.ns_addr(), stack.addr());
    let out = ok(
        ns,
        &[
            "updateTopic",
            "-b",
            broker,
            "-t",
            "Units",
            "-r",
            "3",
            "-w",
            "3",
            "-u",
            "true",
            "-s",
            "true",
        ],
    )
    .await;
    assert!(out.contains("topicSysFlag=3"), "{out}");
    stack.broker().register_now().await;
    let list = ok(ns, &["topicRoute", "-t", "Units", "-l"]).await;
    assert!(list.starts_with("#ClusterName"), "{list}");
    let row = list
        .lines()
        .find(|l| l.contains(broker))
        .unwrap_or_else(|| panic!("no row for the broker:\n{list}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[cols.len() - 3..], ["3", "3", "6"], "{row}");
    assert!(list.contains("Total:"), "{list}");
    let json = ok(ns, &["topicRoute", "-t", "Units"]).await;
    assert!(json.contains("\"queueDatas\""), "{json}");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_sub_group_removes_offsets_only_when_asked() {
    let stack = stack_with(&["Kept"]).await;
    let (ns, broker) = (stack.ns_addr(), stack.addr());
    let admin = AdminClient::new(ns).expect("admin");
    for group in ["keep-g", "drop-g"] {
        ok(ns, &["updateSubGroup", "-b", broker, "-g", group]).await;
        admin
            .update_consumer_offset(broker, group, "Kept", 0, 7)
            .await
            .expect("commit");
        assert_eq!(committed(&stack, group, "Kept").await, Some(7));
    }
    admin.shutdown().await;
    ok(ns, &["deleteSubGroup", "-b", broker, "-g", "keep-g"]).await;
    assert_eq!(committed(&stack, "keep-g", "Kept").await, Some(7));
    ok(
        ns,
        &["deleteSubGroup", "-b", broker, "-g", "drop-g", "-r", "true"],
    )
    .await;
    // Without an offset the broker answers the queue's minimum, 0.
    assert_ne!(committed(&stack, "drop-g", "Kept").await, Some(7));
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_stats_level_more_stats_and_unique_key_show_all() {
    let stack = stack_with(&["Lagging"]).await;
    let (ns, broker) = (stack.ns_addr(), stack.addr());
    let p = producer(ns).await;
    let mut sent = Vec::new();
    for i in 0..6 {
        sent.push(
            p.send(Message::new("Lagging", format!("m{i}")))
                .await
                .expect("send"),
        );
    }
    let admin = AdminClient::new(ns).expect("admin");
    admin
        .update_consumer_offset(broker, "lag-g", "Lagging", 0, 0)
        .await
        .expect("commit");
    admin.shutdown().await;
    let all = ok(ns, &["brokerConsumeStats", "-b", broker, "-t", "3000"]).await;
    assert!(all.contains("lag-g"), "{all}");
    let none = ok(ns, &["brokerConsumeStats", "-b", broker, "-l", "1000000"]).await;
    assert!(!none.contains("lag-g"), "{none}");

    let more = ok(ns, &["clusterList", "-m"]).await;
    assert!(more.contains("#InTotalToday"), "{more}");
    let row = more
        .lines()
        .find(|l| l.contains("broker-"))
        .expect("a broker row");
    let in_today: i64 = row
        .split_whitespace()
        .nth(4)
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1);
    assert!(in_today >= 6, "{more}");

    let id = sent[0].msg_id.clone();
    let shown = ok(
        ns,
        &["queryMsgByUniqueKey", "-t", "Lagging", "-i", &id, "-a"],
    )
    .await;
    assert_eq!(shown.matches("OffsetID:").count(), 1, "{shown}");
    p.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_progress_shows_each_queues_client_ip() {
    let stack = stack_with(&["Owned"]).await;
    let ns = stack.ns_addr();
    let config = ConsumerConfig {
        namesrv_addr: ns.to_owned(),
        group: "ip-g".into(),
        instance_name: "ip-g".into(),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    };
    let c = PushConsumer::start_concurrently(config, &[("Owned", "*")], |_| ConsumeResult::Success)
        .await
        .expect("consumer");
    let owned = || {
        c.assigned_queues()
            .iter()
            .filter(|q| q.topic == "Owned")
            .count()
    };
    wait_for("both queues owned", LONG, || owned() == 2).await;
    stack.broker().register_now().await;
    let p = producer(ns).await;
    for i in 0..4 {
        p.send(Message::new("Owned", format!("m{i}")))
            .await
            .expect("send");
    }
    stellmq_testkit::wait_consumed_all(stack.raw(), "ip-g", "Owned", LONG).await;
    p.shutdown().await;
    let ip = c
        .client_id()
        .split('@')
        .next()
        .unwrap_or_default()
        .to_owned();
    // Offsets are committed with pulls and every 5 s: ask until both queues show.
    let mut out = String::new();
    for _ in 0..60 {
        out = ok(ns, &["consumerProgress", "-g", "ip-g", "-s", "true"]).await;
        let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("Owned ")).collect();
        if rows.len() == 2 && rows.iter().all(|r| r.contains(&ip)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(out.contains("#Client IP"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("Owned ")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows.iter().all(|r| r.contains(&ip)), "{ip} missing:\n{out}");
    let plain = ok(ns, &["consumerProgress", "-g", "ip-g"]).await;
    assert!(!plain.contains("#Client IP"), "{plain}");
    c.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_offset_by_time_takes_rocketmq_dates() {
    let stack = stack_with(&["Dated"]).await;
    let (success, _, err) = mqadmin(
        stack.ns_addr(),
        &[
            "resetOffsetByTime",
            "-g",
            "no-g",
            "-t",
            "Dated",
            "-s",
            "yesterday",
        ],
    )
    .await;
    assert!(!success && err.contains("yyyy-MM-dd#HH:mm:ss:SSS"), "{err}");
    let (_, _, err) = mqadmin(
        stack.ns_addr(),
        &[
            "resetOffsetByTime",
            "-g",
            "no-g",
            "-t",
            "Dated",
            "-s",
            "2024-01-02#03:04:05:006",
            "-c",
        ],
    )
    .await;
    assert!(!err.contains("cannot parse"), "{err}");
    stack.stop().await;
}
