//! `mqbench lite`: lite topics at scale (RocketMQ 5.5's headline), against a running broker.
//!
//! 1. Makes a LITE parent topic and a group bound to it, then sends one message to each of
//!    `--liteTopics` lite topics (`--concurrency` senders) and waits until the broker counts
//!    them all: the rate of lite topic creation and the time until every one is visible.
//! 2. One client subscribes to the first `--subscribed` of them in one LITE_SUBSCRIPTION_CTL
//!    and pops and acks their backlog (one message each).
//! 3. `--samples` messages go, one at a time, to lite topics of that subscription chosen at
//!    random while the client long-polls: the time from send to receipt (median, p99).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use stellmq_client::admin::AdminClient;
use stellmq_client::ClientError;
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::lite::{LiteSubscriptionCtlRequestBody, LiteSubscriptionDto};
use stellmq_remoting::protocol::body::{SubscriptionGroupConfig, TopicConfig};
use stellmq_remoting::protocol::headers::{
    AckMessageRequestHeader, CommandHeader, PopLiteMessageRequestHeader,
    PopLiteMessageResponseHeader, SendMessageRequestHeader,
};
use stellmq_remoting::protocol::message::{property, MessageRecord, Properties};
use stellmq_remoting::protocol::pop::{ExtraInfo, TopicType, POP_ORDER_REVIVE_QUEUE};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

use crate::stats::Latency;

#[derive(clap::Args, Debug)]
pub struct LiteArgs {
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv: Option<String>,
    /// The broker's address (`ip:port`).
    #[arg(short = 'b', long = "brokerAddr")]
    broker: String,
    /// Lite topics to create (one message each).
    #[arg(long = "liteTopics", default_value_t = 100_000)]
    lite_topics: usize,
    /// Lite topics one client subscribes to.
    #[arg(long = "subscribed", default_value_t = 10_000)]
    subscribed: usize,
    /// Messages timed from send to receipt.
    #[arg(long = "samples", default_value_t = 1_000)]
    samples: usize,
    /// Senders at once while creating.
    #[arg(long = "concurrency", default_value_t = 64)]
    concurrency: usize,
    /// The parent topic.
    #[arg(long = "topic", default_value = "LiteBench")]
    topic: String,
}

const GROUP: &str = "LiteBenchGroup";
const CLIENT: &str = "lite-bench-client";

fn lite_name(i: usize) -> String {
    format!("lite-{i:07}")
}

fn send_request(topic: &str, lite: &str, body: Vec<u8>) -> RemotingCommand {
    let mut props = Properties::new();
    props.insert(property::LITE_TOPIC, lite);
    let header = SendMessageRequestHeader {
        producer_group: "lite_bench_producer".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: stellmq_remoting::protocol::message::now_ms(),
        flag: 0,
        properties: Some(props.encode()),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE, header.to_ext_fields()).with_body(body)
}

pub async fn run(a: LiteArgs) -> Result<(), ClientError> {
    let admin = Arc::new(AdminClient::new(&crate::namesrv_addr(&a.namesrv))?);
    admin
        .create_topic_with_attribute_changes(
            &a.broker,
            &TopicConfig::with_queues(a.topic.clone(), 4, 4, 6),
            Some("+message.type=LITE"),
        )
        .await?;
    let mut group = SubscriptionGroupConfig::new(GROUP);
    group
        .attributes
        .insert("+lite.bind.topic".into(), a.topic.clone());
    admin.create_group(&a.broker, &group).await?;
    create(&admin, &a).await?;
    subscribe(&admin, &a).await?;
    latency(&admin, &a).await
}

/// Phase 1: one message to each lite topic, then until the broker counts them all.
async fn create(admin: &Arc<AdminClient>, a: &LiteArgs) -> Result<(), ClientError> {
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut senders = Vec::new();
    for _ in 0..a.concurrency.max(1) {
        let (admin, next, broker, topic, n) = (
            admin.clone(),
            next.clone(),
            a.broker.clone(),
            a.topic.clone(),
            a.lite_topics,
        );
        senders.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<(), ClientError>(());
                }
                admin
                    .call(&broker, send_request(&topic, &lite_name(i), b"x".to_vec()))
                    .await?;
            }
        }));
    }
    for s in senders {
        s.await.map_err(|e| ClientError::Invalid(e.to_string()))??;
    }
    let sent = started.elapsed();
    crate::outln!(
        "created {} lite topics (one message each) in {:.1} s: {:.0} lite topics/s",
        a.lite_topics,
        sent.as_secs_f64(),
        a.lite_topics as f64 / sent.as_secs_f64()
    );
    loop {
        let info = admin.parent_topic_info(&a.broker, &a.topic).await?;
        if info.lite_topic_count as usize >= a.lite_topics {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    crate::outln!(
        "every lite topic visible {:.1} s after the first send ({:.1} s after the last)",
        started.elapsed().as_secs_f64(),
        (started.elapsed() - sent).as_secs_f64()
    );
    Ok(())
}

fn pop_request(topic: &str, max: i32, poll_ms: i64) -> RemotingCommand {
    let header = PopLiteMessageRequestHeader {
        client_id: CLIENT.into(),
        consumer_group: GROUP.into(),
        topic: topic.into(),
        max_msg_num: max,
        invisible_time: 60_000,
        poll_time: poll_ms,
        born_time: stellmq_remoting::protocol::message::now_ms(),
        attempt_id: None,
    };
    RemotingCommand::request(RequestCode::POP_LITE_MESSAGE, header.to_ext_fields())
}

/// One POP_LITE_MESSAGE, every message acked; the bodies.
async fn pop_and_ack(
    admin: &AdminClient,
    a: &LiteArgs,
    poll_ms: i64,
) -> Result<Vec<Vec<u8>>, ClientError> {
    let response = admin
        .call_any(&a.broker, pop_request(&a.topic, 32, poll_ms))
        .await?;
    if response.code != 0 {
        return Ok(Vec::new());
    }
    let h = PopLiteMessageResponseHeader::from_ext_fields(&response.ext_fields)
        .map_err(|e| ClientError::Invalid(e.to_string()))?;
    let records = MessageRecord::decode_all(response.body.clone(), false)
        .map_err(|e| ClientError::Invalid(e.to_string()))?;
    let mut bodies = Vec::with_capacity(records.len());
    for r in records {
        let (Some(lite), Some(offset)) = (
            r.properties.get(property::LITE_TOPIC),
            r.properties
                .get(property::INNER_MULTI_QUEUE_OFFSET)
                .and_then(|o| o.parse::<i64>().ok()),
        ) else {
            continue;
        };
        let handle = ExtraInfo {
            ck_queue_offset: 0,
            pop_time: h.pop_time,
            invisible_time: h.invisible_time,
            revive_qid: POP_ORDER_REVIVE_QUEUE,
            topic_type: TopicType::Normal,
            broker_name: "bench".into(),
            queue_id: 0,
            queue_offset: Some(offset),
        };
        let ack = AckMessageRequestHeader {
            consumer_group: GROUP.into(),
            topic: a.topic.clone(),
            queue_id: 0,
            extra_info: handle.to_string(),
            offset,
            lite_topic: Some(lite.to_owned()),
        };
        admin
            .call(
                &a.broker,
                RemotingCommand::request(RequestCode::ACK_MESSAGE, ack.to_ext_fields()),
            )
            .await?;
        bodies.push(r.body.to_vec());
    }
    Ok(bodies)
}

/// Phase 2: one subscription to `--subscribed` lite topics, and their backlog drained.
async fn subscribe(admin: &AdminClient, a: &LiteArgs) -> Result<(), ClientError> {
    let n = a.subscribed.min(a.lite_topics);
    let body = LiteSubscriptionCtlRequestBody {
        subscription_set: vec![LiteSubscriptionDto {
            action: "PARTIAL_ADD".into(),
            client_id: CLIENT.into(),
            group: GROUP.into(),
            topic: a.topic.clone(),
            lite_topic_set: (0..n).map(lite_name).collect(),
            version: None,
        }],
    };
    let started = Instant::now();
    admin
        .call(
            &a.broker,
            RemotingCommand::request(RequestCode::LITE_SUBSCRIPTION_CTL, ExtFields::default())
                .with_body(fastjson::encode(&body)),
        )
        .await?;
    crate::outln!(
        "one client subscribed to {n} lite topics in {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    let started = Instant::now();
    let mut drained = 0;
    while drained < n {
        let got = pop_and_ack(admin, a, 1_000).await?;
        if got.is_empty() {
            break;
        }
        drained += got.len();
    }
    crate::outln!(
        "its backlog ({drained} messages, one per lite topic) popped and acked in {:.1} s: {:.0} msg/s",
        started.elapsed().as_secs_f64(),
        drained as f64 / started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Phase 3: send to a random subscribed lite topic, time until the long-polling client has
/// it.
async fn latency(admin: &AdminClient, a: &LiteArgs) -> Result<(), ClientError> {
    let n = a.subscribed.min(a.lite_topics).max(1);
    let mut latency = Latency::default();
    let mut rng = rand::thread_rng();
    for _ in 0..a.samples {
        let lite = lite_name(rng.gen_range(0..n));
        let receiver = pop_and_ack(admin, a, 5_000);
        let sent = Instant::now();
        let send = admin.call(&a.broker, send_request(&a.topic, &lite, b"t".to_vec()));
        let (got, sent_ok) = tokio::join!(receiver, send);
        sent_ok?;
        if !got?.is_empty() {
            latency.record(sent.elapsed());
        }
    }
    crate::outln!(
        "send to receipt, {} samples over {n} subscribed lite topics: {}",
        a.samples,
        latency.summary()
    );
    Ok(())
}
