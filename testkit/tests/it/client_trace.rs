//! Message trace end to end: producers and push consumers with `enable_msg_trace` write
//! RocketMQ's trace records to the trace topic of a broker with `traceTopicEnable`, and
//! `mqadmin queryMsgTraceById` finds a message's send and consumptions by its id.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stellmq_client::trace::{decode, TraceMessageType, TraceRecord, TraceType};
use stellmq_client::{
    AdminClient, ConsumeResult, Message, Producer, ProducerConfig, PushConsumer,
    TransactionProducer, TransactionState,
};
use stellmq_remoting::protocol::body::TopicConfig;
use stellmq_remoting::protocol::headers::QueryMessageRequestHeader;
use stellmq_testkit::process::command;
use stellmq_testkit::{consumer_config, eventually_some, eventually_within, Stack};

const WAIT: Duration = Duration::from_secs(30);

async fn traced_stack(topics: &[&str]) -> Stack {
    let stack = Stack::start_with(|c| c.broker.trace_topic_enable = true).await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    for topic in topics {
        admin
            .create_topic(stack.addr(), &TopicConfig::with_queues(*topic, 2, 2, 6))
            .await
            .expect("topic");
    }
    stack.broker().register_now().await;
    stack
}

fn traced_producer_config(ns: &str, group: &str, topic: Option<&str>) -> ProducerConfig {
    ProducerConfig {
        namesrv_addr: ns.to_owned(),
        group: group.into(),
        instance_name: group.into(),
        enable_msg_trace: true,
        customized_trace_topic: topic.map(str::to_owned),
        ..Default::default()
    }
}

/// A traced push consumer of `topic` answering `answer`, and how many calls it had.
async fn traced_consumer(
    ns: &str,
    group: &str,
    topic: &str,
    answer: ConsumeResult,
) -> (PushConsumer, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let mut config = consumer_config(ns, group);
    config.enable_msg_trace = true;
    let consumer = PushConsumer::start_concurrently(config, &[(topic, "*")], move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        answer
    })
    .await
    .expect("consumer");
    (consumer, calls)
}

async fn mqadmin(ns: &str, args: &[&str]) -> String {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["-n".to_owned(), ns.to_owned()]);
    let out = tokio::task::spawn_blocking(move || command("mqadmin").args(&all).output())
        .await
        .expect("join")
        .expect("runs");
    assert!(
        out.status.success(),
        "mqadmin {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_and_its_consumptions_are_found_by_message_id() {
    let stack = traced_stack(&["TracedTopic"]).await;
    let ns = stack.ns_addr().to_owned();
    let producer = Producer::start(traced_producer_config(&ns, "trace_producer", None))
        .await
        .expect("producer");
    let sent = producer
        .send(
            Message::new("TracedTopic", "traced body")
                .with_tags("TagA")
                .with_keys(["order-7"]),
        )
        .await
        .expect("send");
    let (ok, ok_calls) =
        traced_consumer(&ns, "trace_ok", "TracedTopic", ConsumeResult::Success).await;
    let (failing, failing_calls) = traced_consumer(
        &ns,
        "trace_fail",
        "TracedTopic",
        ConsumeResult::ReconsumeLater,
    )
    .await;
    eventually_within("both groups got the message", WAIT, async || {
        ok_calls.load(Ordering::SeqCst) > 0 && failing_calls.load(Ordering::SeqCst) > 0
    })
    .await;
    // Shutting down sends what each tracer still holds.
    producer.shutdown().await;
    ok.shutdown().await;
    failing.shutdown().await;

    let trace = eventually_some("the whole trace is indexed", WAIT, async || {
        let out = mqadmin(&ns, &["queryMsgTraceById", "-i", &sent.msg_id]).await;
        let whole = out.lines().any(|l| l.starts_with("Pub "))
            && out.contains("trace_ok")
            && out.contains("trace_fail");
        whole.then_some(out)
    })
    .await;
    let line = |prefix: &str, group: &str| {
        trace
            .lines()
            .find(|l| l.starts_with(prefix) && l.contains(group))
            .unwrap_or_else(|| panic!("no {prefix} line of {group} in\n{trace}"))
            .to_owned()
    };
    assert!(line("Pub", "trace_producer").contains("success"), "{trace}");
    assert!(line("Sub", "trace_ok").contains("success"), "{trace}");
    assert!(line("Sub", "trace_fail").contains("failed"), "{trace}");
    assert!(trace.contains("#ProducerGroup") && trace.contains("#ConsumerGroup"));

    // The trace message is indexed by the message's keys too.
    let by_key = mqadmin(
        &ns,
        &[
            "queryMsgByKey",
            "-t",
            "RMQ_SYS_TRACE_TOPIC",
            "-k",
            "order-7",
        ],
    )
    .await;
    assert!(by_key.lines().count() > 1, "{by_key}");

    // Another id has no trace.
    let none = mqadmin(
        &ns,
        &["queryMsgTraceById", "-i", "0A0000000000000000000000000"],
    )
    .await;
    assert!(!none.contains("Pub"), "{none}");
}

/// Every trace record of `id` in `topic`.
async fn records_of(stack: &Stack, topic: &str, id: &str) -> Vec<TraceRecord> {
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    let query = QueryMessageRequestHeader {
        topic: topic.to_owned(),
        key: id.to_owned(),
        max_num: 32,
        begin_timestamp: 0,
        end_timestamp: i64::MAX,
        unique_key_query: None,
    };
    let found = admin
        .query_message(stack.addr(), &query)
        .await
        .unwrap_or_default();
    found
        .iter()
        .flat_map(|m| {
            let body = m.uncompressed_body(1 << 20).expect("body");
            decode(&String::from_utf8_lossy(&body))
        })
        .filter(|r| r.msg_id == id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_trace_their_half_and_end_to_a_customized_topic() {
    let stack = traced_stack(&["TracedTx", "MyTraceTopic"]).await;
    let ns = stack.ns_addr().to_owned();
    let producer = TransactionProducer::start(
        traced_producer_config(&ns, "trace_tx", Some("MyTraceTopic")),
        |_| TransactionState::Commit,
    )
    .await
    .expect("producer");
    let sent = producer
        .send_in_transaction(Message::new("TracedTx", "tx body"), |_, _| {
            TransactionState::Commit
        })
        .await
        .expect("send");
    let id = sent.send.msg_id.clone();
    producer.shutdown().await;

    let records = eventually_some("the half and end are traced", WAIT, async || {
        let records = records_of(&stack, "MyTraceTopic", &id).await;
        (records.len() >= 2).then_some(records)
    })
    .await;
    let half = records
        .iter()
        .find(|r| r.kind == TraceType::Pub)
        .expect("Pub");
    assert_eq!(half.msg_type, TraceMessageType::TransactionHalf);
    assert_eq!(
        (half.group.as_str(), half.topic.as_str()),
        ("trace_tx", "TracedTx")
    );
    assert_eq!(half.store_host, stack.addr());
    let end = records
        .iter()
        .find(|r| r.kind == TraceType::EndTransaction)
        .expect("EndTransaction");
    assert_eq!(end.transaction_state, "COMMIT_MESSAGE");
    assert!(!end.from_transaction_check);
    // Nothing went to the default trace topic.
    assert!(records_of(&stack, "RMQ_SYS_TRACE_TOPIC", &id)
        .await
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_send_message_with_trace_is_found_by_its_id() {
    let stack = traced_stack(&["AdminTraced"]).await;
    let ns = stack.ns_addr().to_owned();
    let sent = mqadmin(
        &ns,
        &[
            "sendMessage",
            "-t",
            "AdminTraced",
            "-p",
            "from mqadmin",
            "-k",
            "adm-1",
            "-m",
            "true",
        ],
    )
    .await;
    let id = sent
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("no message id in\n{sent}"))
        .to_owned();
    assert!(sent.contains("SEND_OK"), "{sent}");
    let trace = eventually_some("the send's trace is indexed", WAIT, async || {
        let out = mqadmin(&ns, &["queryMsgTraceById", "-i", &id]).await;
        out.lines().any(|l| l.starts_with("Pub ")).then_some(out)
    })
    .await;
    assert!(trace.contains("success"), "{trace}");
}
