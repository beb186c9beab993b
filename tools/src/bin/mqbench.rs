//! `mqbench`: RocketMQ-style producer and consumer benchmarks against any RocketMQ-compatible
//! broker, over remoting or (`grpc-producer`, `grpc-consumer`) through mqproxy's gRPC port.
//! Prints RocketMQ's line every 10 s (`--report-interval`) plus latency percentiles, and a
//! final summary.
#![allow(clippy::print_stdout)]

/// mimalloc: fewer cycles per small allocation than glibc's malloc on the request path,
/// and no arena trimming (whose page releases shoot down TLBs on every core).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, Subcommand};
use stellmq_client::admin::now_ms;
use stellmq_client::{ClientError, Message, Producer, ProducerConfig};
use stellmq_remoting::protocol::SerializeType;
use stellmq_tools::bench_acl::{expand_two_letter_options, BenchAclArgs};
use stellmq_tools::bench_consumer::{run as run_consumer, ConsumerArgs};
use stellmq_tools::bench_grpc::{self, GrpcConsumerArgs, GrpcProducerArgs};
use stellmq_tools::bench_lite::{self, LiteArgs};
use stellmq_tools::bench_metadata::{self, MetadataArgs};
use stellmq_tools::send_stats::SendStats;
use stellmq_tools::tls_args::TlsArgs;

#[derive(Parser, Debug)]
#[command(
    name = "mqbench",
    about = "Producer and consumer benchmarks (RocketMQ's flags)"
)]
struct Cli {
    #[command(subcommand)]
    command: Bench,
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// Send messages as fast as the threads go.
    Producer(ProducerArgs),
    /// Consume a topic (from its end, or its backlog with --consumeFromWhere first) and
    /// report TPS and born-to-received latency.
    Consumer(ConsumerArgs),
    /// Send through mqproxy's gRPC port (RocketMQ 5's SendMessage), as fast as the workers go.
    GrpcProducer(GrpcProducerArgs),
    /// Receive and ack through mqproxy's gRPC port as a SimpleConsumer and report TPS and
    /// born-to-received latency.
    GrpcConsumer(GrpcConsumerArgs),
    /// Time topic and group creations, updates and deletions as the broker's tables grow.
    Metadata(MetadataArgs),
    /// Lite topics at scale: creation, a large subscription, send-to-receipt latency.
    Lite(LiteArgs),
}

#[derive(clap::Args, Debug)]
struct ProducerArgs {
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv: Option<String>,
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    topic: String,
    /// Sending threads (tasks).
    #[arg(short = 'w', long = "threadCount", default_value_t = 64)]
    threads: usize,
    #[arg(short = 's', long = "messageSize", default_value_t = 128)]
    size: usize,
    /// Set KEYS to the current second.
    #[arg(short = 'k', long = "keyEnable", default_value_t = false, action = clap::ArgAction::Set)]
    keys: bool,
    /// Async sends (each thread keeps one send in flight per --in-flight).
    #[arg(short = 'y', long = "asyncEnable", default_value_t = false, action = clap::ArgAction::Set)]
    async_send: bool,
    /// Messages per batch (1 = no batching).
    #[arg(short = 'b', long = "batchSize", default_value_t = 1)]
    batch: usize,
    /// Total messages (0 = until --duration).
    #[arg(short = 'q', long = "messageQuantity", default_value_t = 0)]
    quantity: u64,
    /// Message trace on (RocketMQ's `-m`): every send also writes a Pub record.
    #[arg(short = 'm', long = "msgTraceEnable", default_value_t = false, action = clap::ArgAction::Set)]
    trace: bool,
    /// Seconds to run (0 = until --messageQuantity).
    #[arg(long = "duration", default_value_t = 60)]
    duration: u64,
    /// Seconds between report lines.
    #[arg(long = "report-interval", default_value_t = 10)]
    report_interval: u64,
    /// Milliseconds between report lines (RocketMQ's `-ri`; overrides --report-interval).
    #[arg(long = "reportInterval")]
    report_interval_ms: Option<u64>,
    /// Header encoding of the sends: ROCKETMQ (binary, the client's default) or JSON (what
    /// RocketMQ's Java and C++ clients send by default).
    #[arg(long = "serializeType", default_value = "ROCKETMQ", value_parser = parse_serialize_type)]
    serialize_type: SerializeType,
    #[command(flatten)]
    tls: TlsArgs,
    #[command(flatten)]
    acl: BenchAclArgs,
}

fn parse_serialize_type(name: &str) -> Result<SerializeType, String> {
    match name.to_ascii_uppercase().as_str() {
        "JSON" => Ok(SerializeType::Json),
        "ROCKETMQ" => Ok(SerializeType::RocketMq),
        _ => Err(format!("{name}: JSON or ROCKETMQ")),
    }
}

async fn run_producer(a: ProducerArgs) -> Result<(), ClientError> {
    stellmq_tools::outln!(
        "topic: {} threadCount: {} messageSize: {} keyEnable: {} batchSize: {} traceEnable: {} aclEnable: {} asyncEnable: {} messageQuantity: {} duration: {}s",
        a.topic, a.threads, a.size, a.keys, a.batch, a.trace, a.acl.acl_enable, a.async_send, a.quantity, a.duration
    );
    let config = ProducerConfig {
        namesrv_addr: stellmq_tools::namesrv_addr(&a.namesrv),
        group: "benchmark_producer".into(),
        instance_name: now_ms().to_string(),
        tls: a.tls.client_tls(),
        credentials: a.acl.credentials(),
        enable_msg_trace: a.trace,
        serialize_type: a.serialize_type,
        ..Default::default()
    };
    let producer = Producer::start(config).await?;
    let body = Bytes::from(vec![b'x'; a.size]);
    let counters = Arc::new(SendStats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let deadline = (a.duration > 0).then(|| started + Duration::from_secs(a.duration));
    let per_thread = if a.quantity > 0 {
        a.quantity.div_ceil(a.threads as u64)
    } else {
        u64::MAX
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..a.threads.max(1) {
        let (producer, body, counters, stop, topic) = (
            producer.clone(),
            body.clone(),
            counters.clone(),
            stop.clone(),
            a.topic.clone(),
        );
        let (keys, batch, async_send) = (a.keys, a.batch.max(1), a.async_send);
        tasks.spawn(async move {
            let mut sent = 0u64;
            // One clock read per send: a send's end is the next one's start.
            let mut begin = Instant::now();
            while sent < per_thread
                && !stop.load(Ordering::Relaxed)
                && deadline.is_none_or(|d| begin < d)
            {
                let make = || {
                    let m = Message::new(topic.clone(), body.clone());
                    if keys {
                        m.with_keys([(now_ms() / 1000).to_string()])
                    } else {
                        m
                    }
                };
                let result = if batch > 1 {
                    producer
                        .send_batch((0..batch).map(|_| make()).collect())
                        .await
                        .map(|_| batch as u64)
                } else if async_send {
                    producer.send_async(make()).await.map(|_| 1)
                } else {
                    producer.send(make()).await.map(|_| 1)
                };
                let mut end = Instant::now();
                match result {
                    Ok(n) => {
                        counters.record(end - begin, n);
                        sent += n;
                    }
                    Err(e) => {
                        if e.to_string().contains("answered") {
                            counters.response_failed();
                        } else {
                            counters.send_failed();
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        end = Instant::now();
                    }
                }
                begin = end;
            }
        });
    }
    let every = Duration::from_millis(
        a.report_interval_ms
            .unwrap_or(a.report_interval.saturating_mul(1000))
            .max(100),
    );
    let reporter = counters.spawn_reporter(every, stop.clone());
    while tasks.join_next().await.is_some() {}
    stop.store(true, Ordering::Relaxed);
    reporter.abort();
    stellmq_tools::outln!("{}", counters.complete_line(started.elapsed()));
    producer.shutdown().await;
    Ok(())
}

fn main() {
    let cli = Cli::parse_from(expand_two_letter_options(std::env::args_os()));
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mqbench: {e}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Bench::Producer(a) => run_producer(a).await.map_err(|e| e.to_string()),
            Bench::Consumer(a) => run_consumer(a).await.map_err(|e| e.to_string()),
            Bench::GrpcProducer(a) => bench_grpc::run_producer(a).await.map_err(|e| e.to_string()),
            Bench::GrpcConsumer(a) => bench_grpc::run_consumer(a).await.map_err(|e| e.to_string()),
            Bench::Metadata(a) => bench_metadata::run(a).await.map_err(|e| e.to_string()),
            Bench::Lite(a) => bench_lite::run(a).await.map_err(|e| e.to_string()),
        }
    });
    if let Err(e) = result {
        eprintln!("mqbench: {e}");
        std::process::exit(1);
    }
}
