//! `mqbench`: RocketMQ-style producer and consumer benchmarks against any RocketMQ-compatible
//! broker. Prints RocketMQ's line every 10 s (`--report-interval`) plus latency percentiles,
//! and a final summary.
#![allow(clippy::print_stdout)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, Subcommand};
use parking_lot::Mutex;
use stellmq_client::admin::now_ms;
use stellmq_client::{ClientError, Message, Producer, ProducerConfig};
use stellmq_tools::bench_acl::{expand_two_letter_options, BenchAclArgs};
use stellmq_tools::bench_consumer::{run as run_consumer, ConsumerArgs};
use stellmq_tools::stats::Latency;
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
    /// Seconds to run (0 = until --messageQuantity).
    #[arg(long = "duration", default_value_t = 60)]
    duration: u64,
    /// Seconds between report lines.
    #[arg(long = "report-interval", default_value_t = 10)]
    report_interval: u64,
    /// Milliseconds between report lines (RocketMQ's `-ri`; overrides --report-interval).
    #[arg(long = "reportInterval")]
    report_interval_ms: Option<u64>,
    #[command(flatten)]
    tls: TlsArgs,
    #[command(flatten)]
    acl: BenchAclArgs,
}

#[derive(Default)]
struct Counters {
    ok: AtomicU64,
    send_failed: AtomicU64,
    response_failed: AtomicU64,
    max_rt_us: AtomicU64,
    total_rt_us: AtomicU64,
    latency: Mutex<Latency>,
}

impl Counters {
    fn record(&self, rt: Duration, messages: u64) {
        let us = rt.as_micros() as u64;
        self.ok.fetch_add(messages, Ordering::Relaxed);
        self.max_rt_us.fetch_max(us, Ordering::Relaxed);
        self.total_rt_us.fetch_add(us, Ordering::Relaxed);
        self.latency.lock().record(rt);
    }
}

async fn run_producer(a: ProducerArgs) -> Result<(), ClientError> {
    stellmq_tools::outln!(
        "topic: {} threadCount: {} messageSize: {} keyEnable: {} batchSize: {} aclEnable: {} asyncEnable: {} messageQuantity: {} duration: {}s",
        a.topic, a.threads, a.size, a.keys, a.batch, a.acl.acl_enable, a.async_send, a.quantity, a.duration
    );
    let config = ProducerConfig {
        namesrv_addr: stellmq_tools::namesrv_addr(&a.namesrv),
        group: "benchmark_producer".into(),
        instance_name: now_ms().to_string(),
        tls: a.tls.client_tls(),
        credentials: a.acl.credentials(),
        ..Default::default()
    };
    let producer = Producer::start(config).await?;
    let body = Bytes::from(vec![b'x'; a.size]);
    let counters = Arc::new(Counters::default());
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
            while sent < per_thread
                && !stop.load(Ordering::Relaxed)
                && deadline.is_none_or(|d| Instant::now() < d)
            {
                let make = || {
                    let m = Message::new(topic.clone(), body.clone());
                    if keys {
                        m.with_keys([(now_ms() / 1000).to_string()])
                    } else {
                        m
                    }
                };
                let begin = Instant::now();
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
                match result {
                    Ok(n) => {
                        counters.record(begin.elapsed(), n);
                        sent += n;
                    }
                    Err(e) => {
                        if e.to_string().contains("answered") {
                            counters.response_failed.fetch_add(1, Ordering::Relaxed);
                        } else {
                            counters.send_failed.fetch_add(1, Ordering::Relaxed);
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        });
    }
    let reporter = {
        let (counters, stop) = (counters.clone(), stop.clone());
        let every = Duration::from_millis(
            a.report_interval_ms
                .unwrap_or(a.report_interval.saturating_mul(1000))
                .max(100),
        );
        tokio::spawn(async move {
            let (mut last_ok, mut last_rt, mut last_at) = (0u64, 0u64, Instant::now());
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(every).await;
                let ok = counters.ok.load(Ordering::Relaxed);
                let rt = counters.total_rt_us.load(Ordering::Relaxed);
                let secs = last_at.elapsed().as_secs_f64();
                let latency = counters.latency.lock().summary();
                let calls = (ok - last_ok).max(1) as f64;
                stellmq_tools::outln!(
                    "Current Time: {} Send TPS: {:.0} Max RT(ms): {:.3} Average RT(ms): {:.3} Send Failed: {} Response Failed: {} | {latency}",
                    now_ms(),
                    (ok - last_ok) as f64 / secs,
                    counters.max_rt_us.load(Ordering::Relaxed) as f64 / 1000.0,
                    (rt - last_rt) as f64 / 1000.0 / calls,
                    counters.send_failed.load(Ordering::Relaxed),
                    counters.response_failed.load(Ordering::Relaxed)
                );
                (last_ok, last_rt, last_at) = (ok, rt, Instant::now());
            }
        })
    };
    while tasks.join_next().await.is_some() {}
    stop.store(true, Ordering::Relaxed);
    reporter.abort();
    let elapsed = started.elapsed().as_secs_f64();
    let ok = counters.ok.load(Ordering::Relaxed);
    let (mean, summary) = {
        let latency = counters.latency.lock();
        (latency.mean_us(), latency.summary())
    };
    stellmq_tools::outln!(
        "[Complete] Send Total: {ok} Send TPS: {:.0} Max RT(ms): {:.3} Average RT(ms): {:.3} Send Failed: {} Response Failed: {} | {summary}",
        ok as f64 / elapsed,
        counters.max_rt_us.load(Ordering::Relaxed) as f64 / 1000.0,
        mean / 1000.0,
        counters.send_failed.load(Ordering::Relaxed),
        counters.response_failed.load(Ordering::Relaxed),
    );
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
            Bench::Producer(a) => run_producer(a).await,
            Bench::Consumer(a) => run_consumer(a).await,
        }
    });
    if let Err(e) = result {
        eprintln!("mqbench: {e}");
        std::process::exit(1);
    }
}
