//! The mqadmin commands that front the broker's less common admin requests, as users run
//! them (the `mqadmin` binary, RocketMQ's option letters) against an in-process name server
//! and broker, one test per command: consumerStatus, getConsumerStatus, getConsumerConfig,
//! queryMsgById -g/-d and -s, cleanExpiredCQ, cleanUnusedTopic, deleteExpiredCommitLog,
//! sendMsgStatus, skipAccumulatedMessage, checkMsgSendRT, printMsgByQueue, allocateMQ and
//! producer.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_client::{
    AdminClient, ConsumeResult, ConsumerConfig, Message, Producer, ProducerConfig, PushConsumer,
};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumeFromWhere, ConsumeStats, SubscriptionGroupConfig, TopicConfig,
};
use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::process::command;
use stellmq_testkit::{request, wait_for, NameServer, RawClient, Stack, TestBroker};

const LONG: Duration = Duration::from_secs(30);

/// Runs mqadmin with `-n ns` in `dir` (the temp dir when `None`); returns (success, stdout,
/// stderr).
async fn mqadmin_in(dir: Option<PathBuf>, ns: &str, args: &[&str]) -> (bool, String, String) {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["-n".to_owned(), ns.to_owned()]);
    let dir = dir.unwrap_or_else(std::env::temp_dir);
    let out = tokio::task::spawn_blocking(move || {
        command("mqadmin")
            .args(&all)
            .current_dir(dir)
            .env_remove("NAMESRV_ADDR")
            .output()
    })
    .await
    .expect("join")
    .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn ok(ns: &str, args: &[&str]) -> String {
    let (success, out, err) = mqadmin_in(None, ns, args).await;
    assert!(success, "mqadmin {args:?} failed: {err}\n{out}");
    out
}

/// A name server and broker-a with `topics` (4 queues each), registered.
async fn stack_with(
    topics: &[&str],
    tweak: impl FnOnce(&mut stellmq_broker::BrokerStartConfig),
) -> Stack {
    let stack = Stack::start_with(tweak).await;
    create_topics(stack.ns_addr(), stack.addr(), topics, 4).await;
    stack.broker().register_now().await;
    stack
}

async fn create_topics(ns: &str, broker: &str, topics: &[&str], queues: i32) {
    let admin = AdminClient::new(ns).expect("admin");
    for topic in topics {
        admin
            .create_topic(broker, &TopicConfig::with_queues(*topic, queues, queues, 6))
            .await
            .expect("topic");
    }
    admin.shutdown().await;
}

async fn producer(ns: &str, group: &str) -> Producer {
    Producer::start(ProducerConfig {
        namesrv_addr: ns.to_owned(),
        group: group.into(),
        ..Default::default()
    })
    .await
    .expect("producer")
}

type Seen = Arc<Mutex<Vec<String>>>;

/// A push consumer of `group` on `topic` recording bodies.
async fn consumer(stack: &Stack, group: &str, topic: &str) -> (PushConsumer, Seen) {
    let seen = Seen::default();
    let recorder = seen.clone();
    let config = ConsumerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: group.into(),
        instance_name: group.into(),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    };
    let c = PushConsumer::start_concurrently(config, &[(topic, "*")], move |msgs| {
        for m in msgs {
            recorder
                .lock()
                .push(String::from_utf8_lossy(&m.body).into_owned());
        }
        ConsumeResult::Success
    })
    .await
    .expect("consumer");
    wait_for("the consumer owns queues", LONG, || {
        !c.assigned_queues().is_empty()
    })
    .await;
    // The name server learns the group's retry topic, which the tools look the group up by.
    stack.broker().register_now().await;
    (c, seen)
}

async fn max_offset(raw: &RawClient, topic: &str, queue_id: i32) -> i64 {
    let q = queue_id.to_string();
    raw.call_ok(request(
        RequestCode::GET_MAX_OFFSET,
        &[("topic", topic), ("queueId", &q)],
    ))
    .await
    .ext_fields
    .get("offset")
    .and_then(|o| o.parse().ok())
    .expect("offset")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_status_prints_running_info_and_writes_a_file_per_member() {
    let stack = stack_with(&["Watched"], |_| {}).await;
    let p = producer(stack.ns_addr(), "cs-p").await;
    p.send(Message::new("Watched", "one")).await.expect("send");
    let (c, seen) = consumer(&stack, "cs-g", "Watched").await;
    wait_for("consumed", LONG, || !seen.lock().is_empty()).await;
    let ns = stack.ns_addr();

    let one = ok(ns, &["consumerStatus", "-g", "cs-g", "-i", c.client_id()]).await;
    for part in [
        "#Consumer Properties#",
        "CONSUME_PASSIVELY",
        "#Consumer Subscription#",
        "Topic: Watched",
        "#Consumer MQ Detail#",
        "ProcessQueueInfo [commitOffset=",
        "#Consumer RT&TPS#",
    ] {
        assert!(one.contains(part), "{part} missing from:\n{one}");
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let (success, all, err) = mqadmin_in(
        Some(dir.path().to_owned()),
        ns,
        &["consumerStatus", "-g", "cs-g"],
    )
    .await;
    assert!(success, "{err}\n{all}");
    assert!(all.contains("#ConsumerRunningInfoFile"), "{all}");
    assert!(
        all.contains("Same subscription in the same group of consumer"),
        "{all}"
    );
    assert!(all.contains("Rebalance OK"), "{all}");
    let file = all
        .lines()
        .find(|l| l.contains(c.client_id()))
        .and_then(|l| l.split_whitespace().last())
        .expect("a row for the member")
        .to_owned();
    let written = std::fs::read_to_string(dir.path().join(&file)).expect("the member's file");
    assert!(written.contains("#Consumer Properties#"), "{written}");

    let (success, _, err) = mqadmin_in(
        None,
        ns,
        &["consumerStatus", "-g", "cs-g", "-i", "1.2.3.4@x"],
    )
    .await;
    assert!(!success && err.contains("not online"), "{err}");
    p.shutdown().await;
    c.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_consumer_status_lists_each_members_offsets() {
    let stack = stack_with(&["Counted"], |_| {}).await;
    let p = producer(stack.ns_addr(), "gs-p").await;
    for i in 0..8 {
        p.send(Message::new("Counted", format!("m{i}")))
            .await
            .expect("send");
    }
    let (c, seen) = consumer(&stack, "gs-g", "Counted").await;
    wait_for("consumed", LONG, || seen.lock().len() >= 8).await;
    stellmq_testkit::wait_consumed_all(stack.raw(), "gs-g", "Counted", LONG).await;
    let out = ok(
        stack.ns_addr(),
        &["getConsumerStatus", "-g", "gs-g", "-t", "Counted"],
    )
    .await;
    assert!(out.contains("#clientId"), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with(c.client_id()))
        .collect();
    assert_eq!(rows.len(), 4, "{out}");
    let total: i64 = rows
        .iter()
        .filter_map(|r| r.split_whitespace().last()?.parse::<i64>().ok())
        .sum();
    assert_eq!(total, 8, "{out}");
    p.shutdown().await;
    c.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_consumer_config_prints_the_group_config_per_broker() {
    let stack = stack_with(&[], |_| {}).await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    let mut config = SubscriptionGroupConfig::new("cfg-g");
    config.retry_max_times = 5;
    admin
        .create_group(stack.addr(), &config)
        .await
        .expect("group");
    admin.shutdown().await;
    let out = ok(stack.ns_addr(), &["getConsumerConfig", "-g", "cfg-g"]).await;
    assert!(
        out.contains("=============================DefaultCluster:broker-a="),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("retryMaxTimes") && l.ends_with("=  5")),
        "{out}"
    );
    assert_eq!(
        ok(stack.ns_addr(), &["getConsumerConfig", "-g", "no-such-g"]).await,
        ""
    );
    stack.stop().await;
}

/// The offset message id of a message sent to `topic`.
async fn send_one(p: &Producer, topic: &str, body: &str) -> String {
    p.send(Message::new(topic, body.to_owned()))
        .await
        .expect("send")
        .offset_msg_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_msg_by_id_hands_a_message_to_a_consumer() {
    let stack = stack_with(&["Subscribed", "Aside"], |_| {}).await;
    let p = producer(stack.ns_addr(), "qd-p").await;
    let (c, seen) = consumer(&stack, "qd-g", "Subscribed").await;
    let id = send_one(&p, "Aside", "handed-over").await;
    let out = ok(
        stack.ns_addr(),
        &["queryMsgById", "-i", &id, "-g", "qd-g", "-d", c.client_id()],
    )
    .await;
    assert!(
        out.contains(
            "ConsumeMessageDirectlyResult [order=false, autoCommit=true, consumeResult=CR_SUCCESS"
        ),
        "{out}"
    );
    assert_eq!(seen.lock().as_slice(), ["handed-over"]);
    p.shutdown().await;
    c.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_msg_by_id_resends_a_message() {
    let stack = stack_with(&["Again"], |_| {}).await;
    let p = producer(stack.ns_addr(), "qs-p").await;
    let id = send_one(&p, "Again", "twice").await;
    let out = ok(stack.ns_addr(), &["queryMsgById", "-i", &id, "-s", "true"]).await;
    assert!(
        out.contains(&format!("prepare resend msg. originalMsgId={id}")),
        "{out}"
    );
    assert!(out.contains("SendResult [sendStatus=SEND_OK"), "{out}");
    stack.broker().store().wait_dispatched(LONG);
    let mut total = 0;
    for q in 0..4 {
        total += max_offset(stack.raw(), "Again", q).await;
    }
    assert_eq!(total, 2);
    p.shutdown().await;
    stack.stop().await;
}

/// A broker whose first CommitLog file holds only `Old`'s messages, and the second `Filler`.
async fn aged_stack() -> Stack {
    let stack = stack_with(&["Old", "Filler"], |c| {
        c.store.mapped_file_size_commit_log = 64 * 1024;
        c.store.max_message_size = 32 * 1024;
        c.store.file_reserved_time = 0;
    })
    .await;
    let body = "x".repeat(8 * 1024);
    for (topic, n) in [("Old", 5), ("Filler", 8)] {
        for _ in 0..n {
            assert_eq!(stack.send(topic, 0, &body, &[]).await.code, 0);
        }
    }
    stack.broker().store().wait_dispatched(LONG);
    stack
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_expired_commit_log_runs_retention_now() {
    let stack = aged_stack().await;
    assert_eq!(stack.broker().store().commit_log_min_offset(), 0);
    let out = ok(
        stack.ns_addr(),
        &["deleteExpiredCommitLog", "-b", stack.addr()],
    )
    .await;
    assert_eq!(out.trim(), "success");
    assert!(stack.broker().store().commit_log_min_offset() >= 64 * 1024);
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_expired_cq_deletes_queues_left_without_messages() {
    let stack = aged_stack().await;
    stack
        .raw()
        .call_ok(request(RequestCode::DELETE_EXPIRED_COMMITLOG, &[]))
        .await;
    let cq = stack.dir().join("store").join("consumequeue");
    assert!(cq.join("Old").exists());
    let out = ok(stack.ns_addr(), &["cleanExpiredCQ", "-c", "DefaultCluster"]).await;
    assert_eq!(out.trim(), "success");
    assert!(!cq.join("Old").exists());
    assert_eq!(max_offset(stack.raw(), "Filler", 0).await, 8);
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_unused_topic_deletes_queues_of_forgotten_topics() {
    let ns = NameServer::start().await;
    let mut broker = TestBroker::start(ns.addr(), |_| {}).await;
    create_topics(ns.addr(), broker.addr(), &["Ghost", "Kept"], 1).await;
    let raw = RawClient::new(broker.addr());
    for topic in ["Ghost", "Kept"] {
        raw.call_ok(stellmq_testkit::send_request(topic, 0, b"m", &[]))
            .await;
    }
    raw.shutdown().await;
    broker.store().wait_dispatched(LONG);
    let root = broker.config().store.store_path_root_dir.clone();
    broker
        .restart(|_| stellmq_testkit::forget_topic(&root, "Ghost"))
        .await;
    broker.register_now().await;
    let cq = root.join("consumequeue");
    assert!(cq.join("Ghost").exists());
    let out = ok(ns.addr(), &["cleanUnusedTopic", "-b", broker.addr()]).await;
    assert_eq!(out.trim(), "success");
    assert!(!cq.join("Ghost").exists() && cq.join("Kept").exists());
    broker.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_msg_status_sends_to_the_brokers_own_topic() {
    let stack = stack_with(&[], |_| {}).await;
    let out = ok(
        stack.ns_addr(),
        &["sendMsgStatus", "-b", "broker-a", "-s", "64", "-c", "3"],
    )
    .await;
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("rt=")).collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(
        rows.iter()
            .all(|r| r.contains("sendStatus=SEND_OK") && r.contains("topic=broker-a")),
        "{out}"
    );
    stack.broker().store().wait_dispatched(LONG);
    assert_eq!(max_offset(stack.raw(), "broker-a", 0).await, 4);
    stack.stop().await;
}

async fn consumer_offset(raw: &RawClient, group: &str, topic: &str) -> ConsumeStats {
    let r = raw
        .call_ok(request(
            RequestCode::GET_CONSUME_STATS,
            &[("consumerGroup", group), ("topic", topic)],
        ))
        .await;
    fastjson::decode(&r.body).expect("consume stats")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_accumulated_message_moves_the_group_to_the_end() {
    let stack = stack_with(&["Backlog"], |_| {}).await;
    for i in 0..6 {
        stack.send("Backlog", i % 2, &format!("m{i}"), &[]).await;
    }
    stack.broker().store().wait_dispatched(LONG);
    let out = ok(
        stack.ns_addr(),
        &["skipAccumulatedMessage", "-g", "skip-g", "-t", "Backlog"],
    )
    .await;
    assert!(out.contains("#brokerName"), "{out}");
    let stats = consumer_offset(stack.raw(), "skip-g", "Backlog").await;
    assert_eq!(stats.offset_table.0.len(), 4, "{stats:?}");
    assert!(
        stats
            .offset_table
            .0
            .values()
            .all(|o| o.consumer_offset == o.broker_offset),
        "{stats:?}"
    );
    assert_eq!(
        stats
            .offset_table
            .0
            .values()
            .map(|o| o.consumer_offset)
            .sum::<i64>(),
        6
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_msg_send_rt_spreads_messages_over_the_queues() {
    let stack = stack_with(&["Timed"], |_| {}).await;
    let out = ok(
        stack.ns_addr(),
        &["checkMsgSendRT", "-t", "Timed", "-a", "8", "-s", "10"],
    )
    .await;
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("broker-a")).collect();
    assert_eq!(rows.len(), 8, "{out}");
    assert!(rows.iter().all(|r| r.contains("true")), "{out}");
    assert!(out.contains("Avg RT:"), "{out}");
    stack.broker().store().wait_dispatched(LONG);
    for q in 0..4 {
        assert_eq!(max_offset(stack.raw(), "Timed", q).await, 2, "queue {q}");
    }
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_msg_by_queue_filters_by_tag_and_counts() {
    let stack = stack_with(&["Tagged"], |_| {}).await;
    for (body, tag) in [("a1", "A"), ("b1", "B"), ("a2", "A"), ("a3", "A")] {
        stack.send("Tagged", 0, body, &[("TAGS", tag)]).await;
    }
    stack.send("Tagged", 1, "elsewhere", &[("TAGS", "A")]).await;
    stack.broker().store().wait_dispatched(LONG);
    let args = [
        "printMsgByQueue",
        "-t",
        "Tagged",
        "-a",
        "broker-a",
        "-i",
        "0",
        "-s",
        "A",
        "-p",
        "true",
        "-d",
        "true",
        "-f",
        "true",
    ];
    let out = ok(stack.ns_addr(), &args).await;
    let bodies: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("MSGID:"))
        .filter_map(|l| l.rsplit("BODY: ").next())
        .collect();
    assert_eq!(bodies, ["a1", "a2", "a3"], "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("Tag: A") && l.ends_with("Count: 3")),
        "{out}"
    );
    assert!(!out.contains("Tag: B"), "{out}");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocate_mq_splits_queues_averagely() {
    let stack = stack_with(&["Split"], |_| {}).await;
    let out = ok(
        stack.ns_addr(),
        &["allocateMQ", "-t", "Split", "-i", "c1,c2,c3"],
    )
    .await;
    let json: serde_json::Value =
        serde_json::from_str(&fastjson::to_standard(out.trim()).expect("fastjson")).expect("json");
    let sizes: Vec<usize> = ["c1", "c2", "c3"]
        .iter()
        .map(|c| json["result"][c].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(sizes, [2, 1, 1], "{out}");
    assert_eq!(json["result"]["c1"][0]["queueId"], 0, "{out}");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_lists_the_brokers_producers() {
    let stack = stack_with(&["Produced"], |_| {}).await;
    let p = producer(stack.ns_addr(), "listed-p").await;
    p.send(Message::new("Produced", "x")).await.expect("send");
    // The producer's first heartbeat comes a moment after its first send.
    let ns = stack.ns_addr().to_owned();
    let addr = stack.addr().to_owned();
    let line = stellmq_testkit::eventually_some("the producer is listed", LONG, async || {
        let out = ok(&ns, &["producer", "-b", &addr]).await;
        out.lines()
            .find(|l| l.starts_with("producer group (listed-p) instance : clientId="))
            .map(str::to_owned)
    })
    .await;
    assert!(
        line.contains("language=JAVA") && line.contains("remoteIP=127.0.0.1:"),
        "{line}"
    );
    p.shutdown().await;
    stack.stop().await;
}

/// `updateTopicList` and `updateSubGroupList` (RocketMQ 5): a JSON file of configs, one
/// request per broker, every entry created.
#[tokio::test]
async fn topic_and_group_lists_are_created_from_a_file() {
    let stack = stellmq_testkit::Stack::start().await;
    stack.broker().register_now().await;
    let dir = tempfile::tempdir().expect("dir");
    let topics = dir.path().join("topics.json");
    std::fs::write(
        &topics,
        r#"[{"topicName":"BatchA","readQueueNums":2,"writeQueueNums":2,"perm":6},
            {"topicName":"BatchB","readQueueNums":3,"writeQueueNums":3,"perm":6,
             "attributes":{"+message.type":"FIFO"}}]"#,
    )
    .expect("file");
    let groups = dir.path().join("groups.json");
    std::fs::write(
        &groups,
        r#"[{"groupName":"BatchG1"},{"groupName":"BatchG2","consumeMessageOrderly":true}]"#,
    )
    .expect("file");
    let ns = stack.ns_addr();
    let (ok, out, err) = mqadmin_in(
        None,
        ns,
        &[
            "updateTopicList",
            "-c",
            "DefaultCluster",
            "-f",
            &topics.display().to_string(),
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.contains("submit batch of topic config to"), "{out}");
    let (ok, _, err) = mqadmin_in(
        None,
        ns,
        &[
            "updateSubGroupList",
            "-b",
            stack.addr(),
            "-f",
            &groups.display().to_string(),
        ],
    )
    .await;
    assert!(ok, "{err}");
    let admin = stellmq_client::AdminClient::new(ns).expect("admin");
    let topics = admin.all_topic_config(stack.addr()).await.expect("topics");
    let b = &topics.topic_config_table["BatchB"];
    assert_eq!(b.read_queue_nums, 3);
    assert_eq!(
        b.attributes.get("message.type").map(String::as_str),
        Some("FIFO")
    );
    assert!(topics.topic_config_table.contains_key("BatchA"));
    let g2 = admin
        .subscription_group_config(stack.addr(), "BatchG2")
        .await
        .expect("groups")
        .expect("BatchG2 created");
    assert!(g2.consume_message_orderly);
    admin.shutdown().await;

    let (ok, out, err) = mqadmin_in(
        None,
        ns,
        &[
            "updateTopicList",
            "-b",
            stack.addr(),
            "-f",
            "/no/such/file.json",
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.contains("does not exists"), "{out}");
    stack.stop().await;
}
