//! Running consumers of the Rust client answer the questions an admin asks them through the
//! broker (protocol.md 2.7): GET_CONSUMER_RUNNING_INFO (307), INVOKE_BROKER_TO_GET_CONSUMER_STATUS
//! (223, fanned out as GET_CONSUMER_STATUS_FROM_CLIENT, 221) and CONSUME_MESSAGE_DIRECTLY (309).
//! Every question goes over TCP to an in-process broker, which relays it on the consumer's
//! own connection.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_client::{
    AdminClient, ConsumeResult, ConsumerConfig, LitePullConsumer, Message, Producer,
    ProducerConfig, PushConsumer, ReceivedMessage,
};
use stellmq_remoting::protocol::body::{
    fastjson, running_prop, CmResult, ConsumeFromWhere, ConsumeMessageDirectlyResult,
    ConsumerRunningInfo, GetConsumerStatusBody, TopicConfig,
};
use stellmq_remoting::protocol::message::now_ms;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use stellmq_testkit::{request, wait_consumed_all, wait_for, Stack};

const LONG: Duration = Duration::from_secs(30);

/// A name server and broker-a with 4-queue topics `Probe` and `Elsewhere`.
async fn stack() -> Stack {
    let stack = Stack::start().await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    for topic in ["Probe", "Elsewhere"] {
        admin
            .create_topic(stack.addr(), &TopicConfig::with_queues(topic, 4, 4, 6))
            .await
            .expect("topic");
    }
    admin.shutdown().await;
    stack.broker().register_now().await;
    stack
}

fn config(stack: &Stack, group: &str, instance: &str) -> ConsumerConfig {
    ConsumerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: group.into(),
        instance_name: instance.into(),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    }
}

async fn producer(stack: &Stack) -> Producer {
    Producer::start(ProducerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: "probe-producer".into(),
        ..Default::default()
    })
    .await
    .expect("producer")
}

/// Sends `n` messages `<prefix>-<i>` to `topic`; returns the offset message ids.
async fn send(p: &Producer, topic: &str, prefix: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let sent = p
            .send(Message::new(topic, format!("{prefix}-{i}")))
            .await
            .expect("send");
        ids.push(sent.offset_msg_id);
    }
    ids
}

type Seen = Arc<Mutex<Vec<String>>>;

/// A listener that records bodies; `later` asks for a message again, `boom` panics while
/// `armed` is set.
fn listener(
    seen: &Seen,
    armed: &Arc<AtomicBool>,
) -> impl Fn(&[ReceivedMessage]) -> ConsumeResult + Send + Sync + 'static {
    let (seen, armed) = (seen.clone(), armed.clone());
    move |msgs| {
        let mut result = ConsumeResult::Success;
        for m in msgs {
            let body = String::from_utf8_lossy(&m.body).into_owned();
            if body == "boom-0" && armed.load(Ordering::SeqCst) {
                panic!("boom at {}", m.queue_offset());
            }
            if body.starts_with("later") {
                result = ConsumeResult::ReconsumeLater;
            }
            seen.lock().push(body);
        }
        result
    }
}

async fn running_info(stack: &Stack, group: &str, client_id: &str) -> RemotingCommand {
    stack
        .call(request(
            RequestCode::GET_CONSUMER_RUNNING_INFO,
            &[("consumerGroup", group), ("clientId", client_id)],
        ))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_info_reports_settings_queues_and_rates() {
    let stack = stack().await;
    let p = producer(&stack).await;
    let before = now_ms();
    let (seen, armed) = (Seen::default(), Arc::new(AtomicBool::new(false)));
    let c = PushConsumer::start_concurrently(
        config(&stack, "info-g", "info-1"),
        &[("Probe", "*")],
        listener(&seen, &armed),
    )
    .await
    .expect("consumer");
    send(&p, "Probe", "m", 12).await;
    wait_for("everything consumed", LONG, || seen.lock().len() >= 12).await;
    wait_consumed_all(stack.raw(), "info-g", "Probe", LONG).await;

    let r = running_info(&stack, "info-g", c.client_id()).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let info: ConsumerRunningInfo = fastjson::decode(&r.body).expect("ConsumerRunningInfo");
    let prop = |k: &str| info.properties.get(k).cloned().unwrap_or_default();
    assert_eq!(prop(running_prop::CONSUME_TYPE), "CONSUME_PASSIVELY");
    assert_eq!(prop("messageModel"), "CLUSTERING");
    assert_eq!(prop("consumeFromWhere"), "CONSUME_FROM_FIRST_OFFSET");
    assert_eq!(prop("consumerGroup"), "info-g");
    assert_eq!(prop(running_prop::CONSUME_ORDERLY), "false");
    assert_eq!(
        prop(running_prop::NAMESERVER_ADDR),
        format!("{};", stack.ns_addr())
    );
    let started: i64 = prop(running_prop::CONSUMER_START_TIMESTAMP)
        .parse()
        .expect("start timestamp");
    assert!(started >= before && started <= now_ms(), "{started}");
    let topics: Vec<&str> = info
        .subscription_set
        .iter()
        .map(|s| s.topic.as_str())
        .collect();
    assert!(
        topics.contains(&"Probe") && topics.contains(&"%RETRY%info-g"),
        "{topics:?}"
    );

    // Every queue of Probe is owned, its whole content consumed and nothing cached.
    let probe: Vec<_> = info
        .mq_table
        .0
        .iter()
        .filter(|(mq, _)| mq.topic == "Probe")
        .collect();
    assert_eq!(probe.len(), 4, "{:?}", info.mq_table);
    assert_eq!(probe.iter().map(|(_, q)| q.commit_offset).sum::<i64>(), 12);
    for (mq, q) in &probe {
        assert!(!q.droped && q.cached_msg_count == 0, "{mq:?} {q:?}");
        assert!(q.last_pull_timestamp >= before, "{mq:?} {q:?}");
    }
    let rates = info.status_table.get("Probe").expect("Probe rates");
    assert!(
        rates.pull_tps > 0.0 && rates.consume_ok_tps > 0.0,
        "{rates:?}"
    );
    assert_eq!(rates.consume_failed_msgs, 0, "{rates:?}");

    // A client the group does not have is named in the refusal.
    let r = running_info(&stack, "info-g", "10.9.9.9@nobody").await;
    assert_eq!(r.code, 1);
    assert!(r.remark_str().contains("not online"), "{}", r.remark_str());
    p.shutdown().await;
    c.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_status_is_gathered_from_every_member() {
    let stack = stack().await;
    let p = producer(&stack).await;
    send(&p, "Probe", "s", 20).await;
    let (seen, armed) = (Seen::default(), Arc::new(AtomicBool::new(false)));
    let c1 = PushConsumer::start_concurrently(
        config(&stack, "status-g", "status-1"),
        &[("Probe", "*")],
        listener(&seen, &armed),
    )
    .await
    .expect("consumer 1");
    let c2 = PushConsumer::start_concurrently(
        config(&stack, "status-g", "status-2"),
        &[("Probe", "*")],
        listener(&seen, &armed),
    )
    .await
    .expect("consumer 2");
    wait_for("both share the queues", LONG, || {
        c1.assigned_queues()
            .iter()
            .filter(|q| q.topic == "Probe")
            .count()
            == 2
            && c2
                .assigned_queues()
                .iter()
                .filter(|q| q.topic == "Probe")
                .count()
                == 2
    })
    .await;
    wait_for("everything consumed", LONG, || seen.lock().len() >= 20).await;
    wait_consumed_all(stack.raw(), "status-g", "Probe", LONG).await;

    let status = |client: &str| {
        request(
            RequestCode::INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            &[
                ("topic", "Probe"),
                ("group", "status-g"),
                ("clientAddr", client),
            ],
        )
    };
    let r = stack.call(status("")).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let body: GetConsumerStatusBody = fastjson::decode(&r.body).expect("status body");
    assert_eq!(body.consumer_table.len(), 2, "{body:?}");
    let mut by_queue = BTreeMap::new();
    for (client, offsets) in &body.consumer_table {
        assert!(
            [c1.client_id(), c2.client_id()].contains(&client.as_str()),
            "{client}"
        );
        assert!(
            offsets.0.keys().all(|mq| mq.topic == "Probe"),
            "{offsets:?}"
        );
        for (mq, offset) in &offsets.0 {
            by_queue.insert(mq.queue_id, *offset);
        }
    }
    assert_eq!(by_queue.len(), 4, "{body:?}");
    assert_eq!(by_queue.values().sum::<i64>(), 20, "{body:?}");

    // One member only, by its client id.
    let r = stack.call(status(c1.client_id())).await;
    let body: GetConsumerStatusBody = fastjson::decode(&r.body).expect("status body");
    assert_eq!(
        body.consumer_table.keys().collect::<Vec<_>>(),
        [c1.client_id()]
    );
    assert_eq!(body.consumer_table[c1.client_id()].0.len(), 2);

    // A group without members is refused with RocketMQ's remark.
    let r = stack
        .call(request(
            RequestCode::INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            &[("topic", "Probe"), ("group", "nobody-g")],
        ))
        .await;
    assert_eq!(r.code, 1);
    assert!(
        r.remark_str().contains("No Any Consumer online"),
        "{}",
        r.remark_str()
    );
    p.shutdown().await;
    c1.shutdown().await;
    c2.shutdown().await;
    stack.stop().await;
}

async fn consume_directly(
    stack: &Stack,
    group: &str,
    client_id: &str,
    msg_id: &str,
) -> RemotingCommand {
    stack
        .call(request(
            RequestCode::CONSUME_MESSAGE_DIRECTLY,
            &[
                ("consumerGroup", group),
                ("clientId", client_id),
                ("msgId", msg_id),
                ("topic", "Elsewhere"),
            ],
        ))
        .await
}

fn direct_result(r: &RemotingCommand) -> ConsumeMessageDirectlyResult {
    assert_eq!(r.code, 0, "{}", r.remark_str());
    fastjson::decode(&r.body).expect("ConsumeMessageDirectlyResult")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_consumed_directly_by_the_named_client() {
    let stack = stack().await;
    let p = producer(&stack).await;
    let (seen, armed) = (Seen::default(), Arc::new(AtomicBool::new(false)));
    let c = PushConsumer::start_concurrently(
        config(&stack, "direct-g", "direct-1"),
        &[("Probe", "*")],
        listener(&seen, &armed),
    )
    .await
    .expect("consumer");
    let ordered = PushConsumer::start_orderly(
        config(&stack, "direct-o", "direct-2"),
        &[("Probe", "*")],
        listener(&seen, &armed),
    )
    .await
    .expect("orderly consumer");
    // Messages of a topic neither subscribes: only the direct calls hand them over.
    let ok = send(&p, "Elsewhere", "direct", 1).await;
    let later = send(&p, "Elsewhere", "later", 1).await;
    let boom = send(&p, "Elsewhere", "boom", 1).await;
    wait_for("both consumers are online", LONG, || {
        !c.assigned_queues().is_empty() && !ordered.assigned_queues().is_empty()
    })
    .await;

    let r = direct_result(&consume_directly(&stack, "direct-g", c.client_id(), &ok[0]).await);
    assert_eq!(r.consume_result, CmResult::Success);
    assert!(!r.order && r.auto_commit, "{r:?}");
    assert_eq!(seen.lock().as_slice(), ["direct-0"]);
    let r = direct_result(&consume_directly(&stack, "direct-g", c.client_id(), &later[0]).await);
    assert_eq!(r.consume_result, CmResult::Later);
    let r = direct_result(&consume_directly(&stack, "direct-o", ordered.client_id(), &ok[0]).await);
    assert_eq!(r.consume_result, CmResult::Success);
    assert!(r.order, "{r:?}");
    armed.store(true, Ordering::SeqCst);
    let r = direct_result(&consume_directly(&stack, "direct-g", c.client_id(), &boom[0]).await);
    assert_eq!(r.consume_result, CmResult::ThrowException);
    assert!(
        r.remark.as_deref().is_some_and(|m| m.contains("boom at 0")),
        "{r:?}"
    );
    // Handed over only when asked: the normal flow never saw these messages.
    assert_eq!(seen.lock().as_slice(), ["direct-0", "later-0", "direct-0"]);

    // A client that is not a member, and a message that does not exist, are refused.
    let r = consume_directly(&stack, "direct-g", "10.9.9.9@nobody", &ok[0]).await;
    assert_eq!(r.code, 1);
    assert!(r.remark_str().contains("not online"), "{}", r.remark_str());
    let missing = stellmq_remoting::protocol::message::id::offset_msg_id(
        &stack.addr().parse().expect("addr"),
        1 << 40,
    );
    let r = consume_directly(&stack, "direct-g", c.client_id(), &missing).await;
    assert_eq!(r.code, 1);
    assert!(
        r.remark_str().contains("can not find message"),
        "{}",
        r.remark_str()
    );
    p.shutdown().await;
    c.shutdown().await;
    ordered.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lite_pull_consumer_reports_itself_active_and_has_no_listener() {
    let stack = stack().await;
    let p = producer(&stack).await;
    let ids = send(&p, "Elsewhere", "lite", 1).await;
    let lite =
        LitePullConsumer::subscribe(config(&stack, "lite-g", "lite-1"), &[("Probe", "*")], true)
            .await
            .expect("lite consumer");
    let client_id = lite.client_id().to_owned();
    wait_for("the lite consumer owns its queues", LONG, || {
        lite.assigned_queues().len() >= 4
    })
    .await;
    let r = running_info(&stack, "lite-g", &client_id).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let info: ConsumerRunningInfo = fastjson::decode(&r.body).expect("running info");
    assert_eq!(
        info.properties[running_prop::CONSUME_TYPE],
        "CONSUME_ACTIVELY"
    );
    let r = consume_directly(&stack, "lite-g", &client_id, &ids[0]).await;
    assert_eq!(r.code, 1);
    assert!(
        r.remark_str().contains("not exist in this consumer"),
        "{}",
        r.remark_str()
    );
    p.shutdown().await;
    lite.shutdown().await;
    stack.stop().await;
}
