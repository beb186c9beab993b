//! The broker's Prometheus endpoint on loopback: RocketMQ 5's names and labels, counters of
//! what the Rust client sent and consumed, lag of an offline group, and an endpoint that
//! survives hostile HTTP clients.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use stellmq_client::{AdminClient, Message, Producer, ProducerConfig};
use stellmq_metrics::ExporterType;
use stellmq_remoting::protocol::body::TopicConfig;
use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::{
    consumer_config, eventually_some, http_get, recording_consumer, request, scrape,
    wait_consumed_all, RawClient, Stack,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOPIC: &str = "MetricsTopic";
const QUEUES: i32 = 4;

async fn stack_with_metrics() -> (Stack, SocketAddr) {
    let stack = Stack::start_with(|c| {
        c.broker.metrics_exporter_type = ExporterType::Prom;
        c.broker.metrics_prom_exporter_host = "127.0.0.1".into();
        c.broker.metrics_prom_exporter_port = 0;
    })
    .await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    admin
        .create_topic(
            stack.addr(),
            &TopicConfig::with_queues(TOPIC, QUEUES, QUEUES, 6),
        )
        .await
        .expect("topic");
    admin.shutdown().await;
    stack.broker().register_now().await;
    let addr = stack
        .broker()
        .handle()
        .metrics_addr()
        .expect("metricsExporterType=PROM serves an endpoint");
    (stack, addr)
}

async fn commit(raw: &RawClient, group: &str, queue_id: i32, offset: i64) {
    let (q, o) = (queue_id.to_string(), offset.to_string());
    raw.call_ok(request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", group),
            ("topic", TOPIC),
            ("queueId", &q),
            ("commitOffset", &o),
        ],
    ))
    .await;
}

async fn send_all(stack: &Stack, n: usize) {
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        group: "MetricsProducer".into(),
        ..Default::default()
    })
    .await
    .expect("producer");
    for i in 0..n {
        producer
            .send(Message::new(TOPIC, format!("m{i}").repeat(200)))
            .await
            .expect("send");
    }
    producer.shutdown().await;
}

#[tokio::test]
async fn counts_traffic_and_lag_with_rocketmq_names() {
    let (stack, addr) = stack_with_metrics().await;
    // A group with committed offsets at 0 and no member: its lag is everything sent.
    for q in 0..QUEUES {
        commit(stack.raw(), "OfflineGroup", q, 0).await;
    }
    send_all(&stack, 8).await;
    let config = consumer_config(stack.ns_addr(), "OnlineGroup");
    let (consumer, _seen) = recording_consumer(config, TOPIC, "*").await;
    wait_consumed_all(stack.raw(), "OnlineGroup", TOPIC, Duration::from_secs(30)).await;
    // A pull sent just before the last commit may still carry an older commit offset, which
    // the broker takes as RocketMQ's does (for at most one commit interval): wait for the
    // metrics to show the group caught up rather than sample a moment.
    let online_lag = [
        ("cluster", "DefaultCluster"),
        ("node_type", "broker"),
        ("node_id", "broker-a"),
        ("topic", TOPIC),
        ("consumer_group", "OnlineGroup"),
    ];
    let s = eventually_some(
        "the online group's lag is 0",
        Duration::from_secs(15),
        async || {
            let s = scrape(addr).await;
            (s.value("rocketmq_consumer_lag_messages", &online_lag) == Some(0.0)).then_some(s)
        },
    )
    .await;
    if let Ok(path) = std::env::var("STELLMQ_METRICS_DUMP") {
        let _ = std::fs::write(path, &s.body);
    }
    assert!(
        s.headers.contains("text/plain; version=0.0.4"),
        "{}",
        s.headers
    );
    let node = [
        ("cluster", "DefaultCluster"),
        ("node_type", "broker"),
        ("node_id", "broker-a"),
    ];
    let value = |name: &str, extra: &[(&str, &str)]| {
        let labels: Vec<(&str, &str)> = node.iter().chain(extra).copied().collect();
        s.value(name, &labels)
            .unwrap_or_else(|| panic!("{name} {extra:?} in\n{}", s.body))
    };
    let normal = [
        ("topic", TOPIC),
        ("message_type", "normal"),
        ("is_system", "false"),
    ];
    assert_eq!(value("rocketmq_messages_in_total", &normal), 8.0);
    assert!(value("rocketmq_throughput_in_total", &normal) > 8.0 * 400.0);
    assert_eq!(value("rocketmq_message_size_count", &normal), 8.0);
    assert_eq!(
        value(
            "rocketmq_message_size_bucket",
            &[("topic", TOPIC), ("le", "+Inf")]
        ),
        8.0
    );
    let online = [("topic", TOPIC), ("consumer_group", "OnlineGroup")];
    assert_eq!(value("rocketmq_messages_out_total", &online), 8.0);
    assert!(value("rocketmq_throughput_out_total", &online) > 8.0 * 400.0);
    let offline = [("topic", TOPIC), ("consumer_group", "OfflineGroup")];
    assert_eq!(value("rocketmq_consumer_lag_messages", &offline), 8.0);
    assert_eq!(value("rocketmq_consumer_ready_messages", &offline), 8.0);
    assert_eq!(value("rocketmq_consumer_inflight_messages", &offline), 0.0);
    assert!(value("rocketmq_consumer_lag_latency", &offline) > 0.0);
    assert_eq!(value("rocketmq_consumer_lag_messages", &online), 0.0);
    assert_eq!(value("rocketmq_consumer_lag_latency", &online), 0.0);
    assert!(value("rocketmq_topic_number", &[]) >= 1.0);
    assert!(value("rocketmq_consumer_group_number", &[]) >= 1.0);
    assert!(
        value(
            "rocketmq_consumer_connections",
            &[("consumer_group", "OnlineGroup"), ("consume_mode", "push")]
        ) >= 1.0
    );
    assert!(value("rocketmq_storage_size", &[("storage_type", "local")]) > 0.0);
    assert!(value("rocketmq_storage_dispatch_behind_bytes", &[]) >= 0.0);
    assert!(value("rocketmq_storage_flush_behind_bytes", &[]) >= 0.0);
    // Every send was answered and timed, by RocketMQ's lower-case code names.
    let sends: f64 = ["send_message", "send_message_v2"]
        .iter()
        .filter_map(|code| {
            s.value(
                "rocketmq_rpc_latency_count",
                &[("request_code", code), ("response_code", "success")],
            )
        })
        .sum();
    assert!(sends >= 8.0, "{}", s.body);
    consumer.shutdown().await;
    stack.stop().await;
}

#[tokio::test]
async fn metrics_are_off_by_default() {
    let stack = Stack::start().await;
    assert!(stack.broker().handle().metrics_addr().is_none());
    stack.stop().await;
}

/// Headers that never end, a header far beyond the limit, and slow clients holding every
/// connection slot: the endpoint closes them all and serves scrapes again, and the broker
/// serves sends throughout.
#[tokio::test]
async fn endpoint_survives_hostile_http_clients() {
    let (stack, addr) = stack_with_metrics().await;
    assert_eq!(http_get(addr, "/other").await.status, 404);

    // A 1 MiB header: refused (431) or closed, never buffered whole.
    let mut huge = TcpStream::connect(addr).await.expect("connect");
    let mut request = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
    request.resize(request.len() + (1 << 20), b'a');
    let _ = huge.write_all(&request).await; // the server may close before taking it all
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), huge.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "a huge header closes the connection");
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 431"),
        "{text}"
    );

    // Slowloris: more connections than the cap, each sending a header byte per second.
    let started = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..40 {
        if let Ok(mut c) = TcpStream::connect(addr).await {
            let _ = c.write_all(b"GET /metrics HTTP/1.1\r\n").await;
            slow.push(c);
        }
    }
    let trickle = tokio::spawn(async move {
        let mut closed = 0;
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            closed = 0;
            for c in &mut slow {
                if c.write_all(b"X-Slow: 1\r\n").await.is_err() {
                    closed += 1;
                }
            }
            if closed == slow.len() {
                break;
            }
        }
        (closed, slow.len())
    });
    // The broker keeps serving its clients meanwhile.
    assert_eq!(stack.send(TOPIC, 0, "during", &[]).await.code, 0);
    let (closed, total) = trickle.await.expect("trickle");
    assert_eq!(closed, total, "every slow connection is closed");
    assert!(started.elapsed() < Duration::from_secs(15));
    let s = scrape(addr).await;
    assert!(s.body.contains("rocketmq_messages_in_total"));
    stack.stop().await;
}

fn windows(info: &std::collections::BTreeMap<String, String>, key: &str) -> Vec<f64> {
    let text = info.get(key).unwrap_or_else(|| panic!("{key} in {info:?}"));
    let figures: Vec<f64> = text
        .split(' ')
        .map(|f| f.parse().expect("a figure"))
        .collect();
    assert_eq!(figures.len(), 3, "{key}: {text}");
    figures
}

/// GET_BROKER_RUNTIME_INFO (what `mqadmin clusterList -m` and `brokerStatus` print): real
/// totals, TPS windows that move with traffic, and the lanes' queues.
#[tokio::test]
async fn runtime_info_reports_current_figures() {
    let (stack, _) = stack_with_metrics().await;
    let idle = stack.raw().runtime_info().await;
    assert_eq!(windows(&idle, "putTps"), vec![0.0, 0.0, 0.0]);
    send_all(&stack, 20).await;
    assert!(stack
        .broker()
        .store()
        .wait_dispatched(Duration::from_secs(10)));
    let config = consumer_config(stack.ns_addr(), "RuntimeGroup");
    let (consumer, _seen) = recording_consumer(config, TOPIC, "*").await;
    wait_consumed_all(stack.raw(), "RuntimeGroup", TOPIC, Duration::from_secs(30)).await;
    let info = stack.raw().runtime_info().await;
    let number = |key: &str| -> i64 {
        info.get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {info:?}"))
    };
    assert_eq!(number("msgPutTotalTodayNow"), 20);
    assert_eq!(number("putMessageTimesTotal"), 20);
    assert!(number("msgGetTotalTodayNow") >= 20);
    assert_eq!(number("msgPutTotalTodayMorning"), 0);
    assert_eq!(number("msgPutTotalYesterdayMorning"), 0);
    let put = windows(&info, "putTps");
    assert!(put[0] > 0.0 && put[1] > 0.0 && put[2] > 0.0, "{put:?}");
    assert!(windows(&info, "getTransferedTps")[0] > 0.0);
    assert!(windows(&info, "getFoundTps")[0] > 0.0);
    let capacity = stack
        .broker()
        .config()
        .broker
        .send_thread_pool_queue_capacity;
    assert_eq!(number("sendThreadPoolQueueCapacity"), capacity as i64);
    assert_eq!(number("sendThreadPoolQueueSize"), 0);
    assert!(info.contains_key("pullThreadPoolQueueSize"));
    assert_eq!(number("pageCacheLockTimeMills"), 0);
    consumer.shutdown().await;
    stack.stop().await;
}

/// `mqbroker -c broker.conf` with RocketMQ 5's keys serves the endpoint on the port named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_conf_keys_start_the_endpoint_of_mqbroker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = stellmq_testkit::NameServer::start().await;
    // A port free a moment ago (the broker binds it itself).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let conf = dir.path().join("broker.conf");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\nmappedFileSizeCommitLog=8388608\nbrokerName=broker-conf\nmetricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\nmetricsPromExporterPort={port}\n",
            dir.path().join("store").display()
        ),
    )
    .expect("write");
    let (mut broker, addr) = stellmq_testkit::process::spawn_mqbroker(&conf, ns.addr()).await;
    let sent = RawClient::new(&addr)
        .call(stellmq_testkit::send_request("ConfTopic", 0, b"hi", &[]))
        .await;
    assert_eq!(sent.code, 0);
    let metrics: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let s = scrape(metrics).await;
    let labels = [
        ("node_id", "broker-conf"),
        ("topic", "ConfTopic"),
        ("message_type", "normal"),
    ];
    assert_eq!(
        s.value("rocketmq_messages_in_total", &labels),
        Some(1.0),
        "{}",
        s.body
    );
    broker.signal("-TERM");
    assert!(broker.exit(Duration::from_secs(30)).await.success());
    ns.shutdown().await;
}
