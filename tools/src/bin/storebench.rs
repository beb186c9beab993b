//! `storebench`: append and read throughput of the message store, without networking.
//!
//! Each run opens a fresh store in a temporary directory under `--dir`, appends messages
//! with `--writers` concurrent writers for `--seconds`, then reads every queue back
//! sequentially. Runs repeat `--runs` times and the median is reported, as
//! `shared/design/benchmarking.md` asks.
#![allow(clippy::print_stdout)] // a command-line report

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use stellmq_store::{
    AcceptAll, GetMessageStatus, MessageStore, MessageStoreConfig, PutMessage, PutMessageStatus,
};
use stellmq_tools::stats::{median, Latency};

#[derive(Parser, Debug)]
#[command(
    name = "storebench",
    about = "Message store append and read throughput"
)]
struct Args {
    /// Parent directory for the temporary stores (a real disk, not tmpfs, to be meaningful).
    #[arg(long, default_value = "target/storebench")]
    dir: PathBuf,
    /// Body size in bytes.
    #[arg(short = 's', long, default_value_t = 1024)]
    size: usize,
    /// Concurrent writers.
    #[arg(short = 'w', long, default_value_t = 1)]
    writers: usize,
    /// ASYNC_FLUSH or SYNC_FLUSH.
    #[arg(long, default_value = "ASYNC_FLUSH")]
    flush: String,
    /// Seconds of appending per run.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Runs; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Queues the writers spread over.
    #[arg(long, default_value_t = 8)]
    queues: i32,
    /// Do not pre-fault CommitLog segments (warmMapedFileEnable=false).
    #[arg(long)]
    no_warm: bool,
    /// Upper bound on bytes written per run.
    #[arg(long, default_value_t = 8 * 1024 * 1024 * 1024)]
    max_bytes: u64,
    /// CommitLog segment size (mappedFileSizeCommitLog).
    #[arg(long, default_value_t = 1024 * 1024 * 1024)]
    segment_size: usize,
    /// After the reads: this many new queues (4 per new topic) get their first message,
    /// one at a time, each timed from its put to the moment a pull can see it.
    #[arg(long, default_value_t = 0)]
    new_queues: usize,
}

struct RunResult {
    write_msgs_per_sec: f64,
    write_mb_per_sec: f64,
    latency: Latency,
    read_msgs_per_sec: f64,
    read_mb_per_sec: f64,
    messages: u64,
}

fn message(body: &Bytes, queue_id: i32) -> PutMessage {
    message_to("BenchmarkTest", body, queue_id)
}

fn message_to(topic: &str, body: &Bytes, queue_id: i32) -> PutMessage {
    PutMessage {
        topic: topic.to_owned(),
        queue_id,
        flag: 0,
        body: body.clone(),
        properties: "TAGS\u{1}bench\u{2}".to_owned(),
        sys_flag: 0,
        born_timestamp: 0,
        born_host: std::net::SocketAddr::from(([127, 0, 0, 1], 40000)),
        store_host: std::net::SocketAddr::from(([127, 0, 0, 1], 10911)),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        wait_store_ok: true,
    }
}

async fn write_phase(store: Arc<MessageStore>, args: &Args) -> (u64, Duration, Latency) {
    let body = Bytes::from(vec![b'x'; args.size]);
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);
    // Also bounded by volume, so a run can never fill the disk.
    let max_per_writer = args.max_bytes / args.size.max(1) as u64 / args.writers.max(1) as u64;
    for w in 0..args.writers {
        let store = store.clone();
        let body = body.clone();
        let stop = stop.clone();
        let queues = args.queues;
        tasks.spawn(async move {
            let mut latency = Latency::default();
            let mut n: u64 = 0;
            while !stop.load(Ordering::Relaxed) && n < max_per_writer {
                // An ASYNC_FLUSH put never waits, so check the clock and yield ourselves:
                // timers need a free worker thread to fire.
                if n.is_multiple_of(64) {
                    if Instant::now() >= deadline {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                let queue_id = ((w as u64 + n) % queues as u64) as i32;
                let started = Instant::now();
                let r = store.put_message(message(&body, queue_id)).await;
                latency.record(started.elapsed());
                if r.status != PutMessageStatus::PutOk {
                    eprintln!("put failed: {:?} {:?}", r.status, r.remark);
                    break;
                }
                n += 1;
            }
            (n, latency)
        });
    }
    let mut total = 0;
    let mut latency = Latency::default();
    while let Some(joined) = tasks.join_next().await {
        if let Ok((n, l)) = joined {
            total += n;
            latency.merge(&l);
        }
        // A failed writer stops the others.
        stop.store(true, Ordering::Relaxed);
    }
    (total, started.elapsed(), latency)
}

/// One message to each of `count` queues (4 per topic), one at a time: the time from its
/// put until the queue shows it (what a pull waits for). `round` 1 creates the queues;
/// later rounds find them.
async fn queues_phase(store: &MessageStore, count: usize, size: usize, round: i64) -> Latency {
    let body = Bytes::from(vec![b'x'; size]);
    let mut visible = Latency::default();
    for i in 0..count {
        let (topic, queue_id) = (format!("NewQueue{:06}", i / 4), (i % 4) as i32);
        let started = Instant::now();
        let r = store.put_message(message_to(&topic, &body, queue_id)).await;
        if r.status != PutMessageStatus::PutOk {
            eprintln!("put failed: {:?} {:?}", r.status, r.remark);
            break;
        }
        while store.max_offset_in_queue(&topic, queue_id) < round {
            if started.elapsed() > Duration::from_secs(10) {
                eprintln!("{topic}/{queue_id}: not visible after 10 s");
                break;
            }
            tokio::task::yield_now().await;
        }
        visible.record(started.elapsed());
    }
    visible
}

/// Disk blocks (not apparent sizes: files may be sparse) under `dir`, in bytes.
fn disk_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

fn read_phase(store: &MessageStore, queues: i32) -> (u64, u64, Duration) {
    let started = Instant::now();
    let (mut msgs, mut bytes) = (0u64, 0u64);
    for queue_id in 0..queues {
        let mut offset = 0;
        loop {
            let r = store.get_messages("BenchmarkTest", queue_id, offset, 32, &AcceptAll);
            if r.status != GetMessageStatus::Found {
                break;
            }
            msgs += r.messages.len() as u64;
            // Build the pull response body, as the broker does, so the bytes are really read.
            bytes += r.concat().len() as u64;
            offset = r.next_begin_offset;
        }
    }
    (msgs, bytes, started.elapsed())
}

/// Why a benchmark run failed.
#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error("{}: {source}", dir.display())]
    Dir {
        dir: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Config(#[from] stellmq_config::ConfigError),
    #[error(transparent)]
    Store(#[from] stellmq_store::StoreError),
    #[error("dispatch did not catch up")]
    DispatchBehind,
    #[error("read back {read} of {written} messages")]
    Lost { read: u64, written: u64 },
}

fn one_run(
    args: &Args,
    runtime: &tokio::runtime::Runtime,
    run: usize,
) -> Result<RunResult, BenchError> {
    let in_dir = |source| BenchError::Dir {
        dir: args.dir.clone(),
        source,
    };
    std::fs::create_dir_all(&args.dir).map_err(in_dir)?;
    let dir = tempfile::Builder::new()
        .prefix("run")
        .tempdir_in(&args.dir)
        .map_err(in_dir)?;
    let config = MessageStoreConfig {
        store_path_root_dir: dir.path().to_owned(),
        flush_disk_type: stellmq_config::parse_config_value("flushDiskType", &args.flush)?,
        mapped_file_size_commit_log: args.segment_size,
        max_message_size: (args.size + 1024).min(args.segment_size / 2),
        warm_mapped_file_enable: !args.no_warm,
        ..Default::default()
    };
    let store = Arc::new(MessageStore::open(config.clone())?);
    let (written, elapsed, latency) = runtime.block_on(write_phase(store.clone(), args));
    let writes_ended = Instant::now();
    if !store.wait_dispatched(Duration::from_secs(120)) {
        return Err(BenchError::DispatchBehind);
    }
    let dispatch_lag = writes_ended.elapsed();
    let (read, read_bytes, read_elapsed) = read_phase(&store, args.queues);
    if read != written {
        return Err(BenchError::Lost { read, written });
    }
    if args.new_queues > 0 {
        let first = runtime.block_on(queues_phase(&store, args.new_queues, args.size, 1));
        let second = runtime.block_on(queues_phase(&store, args.new_queues, args.size, 2));
        println!(
            "run {run}: {} new queues, put to visible: first message {}; second message {}",
            args.new_queues,
            first.summary(),
            second.summary()
        );
    }
    let maps_open = mappings();
    let closed = store.close_idle_consume_queues(Duration::ZERO);
    let maps_closed = mappings();
    let secs = elapsed.as_secs_f64();
    let record_bytes = (written as f64) * (args.size as f64);
    let result = RunResult {
        write_msgs_per_sec: written as f64 / secs,
        write_mb_per_sec: record_bytes / secs / 1e6,
        latency,
        read_msgs_per_sec: read as f64 / read_elapsed.as_secs_f64(),
        read_mb_per_sec: read_bytes as f64 / read_elapsed.as_secs_f64() / 1e6,
        messages: written,
    };
    let cq_disk = disk_bytes(&dir.path().join("consumequeue"));
    println!(
        "run {run}: write {:.0} msg/s ({:.1} MB/s body), put latency {}; read {:.0} msg/s ({:.0} MB/s records); ConsumeQueues on disk {:.1} MiB ({:.1} KiB per queue)",
        result.write_msgs_per_sec,
        result.write_mb_per_sec,
        result.latency.summary(),
        result.read_msgs_per_sec,
        result.read_mb_per_sec,
        cq_disk as f64 / f64::from(1 << 20),
        cq_disk as f64 / 1024.0 / f64::from(args.queues.max(1)),
    );
    println!(
        "run {run}: every message visible {:.0} ms after the last write; mappings {maps_open} with every queue open, {maps_closed} after closing {closed} idle queues",
        dispatch_lag.as_secs_f64() * 1000.0
    );
    drop(store);
    let started = Instant::now();
    let reopened = MessageStore::open(config.clone())?;
    let (open, all) = reopened.consume_queues_open();
    println!(
        "run {run}: reopened after a clean stop with {all} queues in {:.0} ms, {open} of them mapped",
        started.elapsed().as_secs_f64() * 1000.0
    );
    // The snapshot a running store writes every `consumeQueueSnapshotInterval`, kept
    // aside: a clean stop replaces it with its own summary.
    reopened.snapshot_consume_queues()?;
    let summary = dir.path().join("consumequeue.summary");
    let kept = dir.path().join("snapshot.kept");
    std::fs::copy(&summary, &kept).map_err(|source| BenchError::Dir {
        dir: kept.clone(),
        source,
    })?;
    drop(reopened);
    std::fs::rename(&kept, &summary).map_err(|source| BenchError::Dir {
        dir: summary.clone(),
        source,
    })?;
    let crash_start = |what: &str| -> Result<(), BenchError> {
        // As after a crash: the abort file says the last stop was not clean.
        std::fs::write(dir.path().join("abort"), b"").map_err(|source| BenchError::Dir {
            dir: dir.path().join("abort"),
            source,
        })?;
        let started = Instant::now();
        let recovered = MessageStore::open(config.clone())?;
        let (open, all) = recovered.consume_queues_open();
        println!(
            "run {run}: reopened after a crash {what} with {all} queues in {:.0} ms, {open} of them mapped",
            started.elapsed().as_secs_f64() * 1000.0
        );
        Ok(())
    };
    crash_start("from the running snapshot")?;
    // The clean stop above left its summary: a crash start without a snapshot reads files.
    let _ = std::fs::remove_file(&summary);
    crash_start("without a snapshot")?;
    Ok(result)
}

/// Memory mappings of this process (lines of /proc/self/maps; 0 where there is none).
fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps").map_or(0, |maps| maps.lines().count())
}

fn main() {
    let args = Args::parse();
    println!(
        "storebench: {} B bodies, {} writer(s), {}, {} s per run, {} runs, {} queues, segment {} MiB, dir {}",
        args.size,
        args.writers,
        args.flush,
        args.seconds,
        args.runs,
        args.queues,
        args.segment_size >> 20,
        args.dir.display()
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("storebench: {e}");
            std::process::exit(1);
        }
    };
    let mut results = Vec::new();
    for run in 1..=args.runs {
        match one_run(&args, &runtime, run) {
            Ok(r) => results.push(r),
            Err(e) => {
                eprintln!("storebench: run {run} failed: {e}");
                std::process::exit(1);
            }
        }
    }
    let pick = |f: fn(&RunResult) -> f64| median(&mut results.iter().map(f).collect::<Vec<_>>());
    let write = pick(|r| r.write_msgs_per_sec);
    let write_mb = pick(|r| r.write_mb_per_sec);
    let p50 = pick(|r| r.latency.quantile_us(0.5) as f64 / 1000.0);
    let p99 = pick(|r| r.latency.quantile_us(0.99) as f64 / 1000.0);
    let read = pick(|r| r.read_msgs_per_sec);
    let read_mb = pick(|r| r.read_mb_per_sec);
    let msgs = pick(|r| r.messages as f64);
    println!(
        "median: write {write:.0} msg/s ({write_mb:.1} MB/s), put p50 {p50:.3} ms, p99 {p99:.3} ms; read {read:.0} msg/s ({read_mb:.0} MB/s); {msgs:.0} messages per run"
    );
}
