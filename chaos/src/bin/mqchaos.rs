//! `mqchaos`: runs seeded fault schedules against a cluster in network namespaces and reports
//! what survived. Needs root (it exits with status 77 when the machine cannot run it).
//!
//! ```text
//! mqchaos --shape controller --seed 1 --faults 10 --report run.json
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use stellmq_chaos::cluster::Shape;
use stellmq_chaos::run::{run, to_json, Report, RunConfig};
use stellmq_chaos::ChaosError;

/// The exit status of a run this machine cannot do (no root, no namespaces).
const SKIPPED: u8 = 77;

#[derive(Parser)]
#[command(about = "Seeded partitions, pauses, kills and restarts against a StellMQ cluster")]
struct Args {
    /// `controller` (3 controllers, a broker set of 3), `classic` (SYNC_MASTER and SLAVE) or
    /// `proxy` (the controller shape behind an mqproxy); several, comma separated, run one
    /// after another with seeds seed, seed+1, ...
    #[arg(long, default_value = "controller")]
    shape: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Faults per run.
    #[arg(long, default_value_t = 5)]
    faults: usize,
    /// Runs per shape.
    #[arg(long, default_value_t = 1)]
    runs: u64,
    /// Writes every run's report (a JSON array) here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Where the nodes keep their stores (a temporary directory under it; the system's
    /// temporary directory by default).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// A Python with Apache RocketMQ's C++ SDK (`pip install rocketmq-client-python`):
    /// its producer and push consumer join the workload of the controller and classic shapes.
    #[arg(long)]
    cpp_python: Option<PathBuf>,
    /// A Python with RocketMQ 5's client (`pip install rocketmq-python-client`): its
    /// producer and simple consumer join the workload of the proxy shape, through the proxy.
    #[arg(long)]
    grpc_python: Option<PathBuf>,
    /// Route expiries added to each run's schedule: the name server cut from every broker
    /// for 125-135 s, past its 120 s expiry.
    #[arg(long, default_value_t = 0)]
    expire_routes: usize,
    /// Congested links added to each run's schedule: the master's link shaped to 128-2048
    /// kbit/s for 5-20 s, delaying what queues and dropping what would queue over 50-400 ms.
    #[arg(long, default_value_t = 0)]
    congest: usize,
    /// Keeps every node's output in `<dir>/<node>.log` (appended across restarts and runs).
    #[arg(long)]
    log_dir: Option<PathBuf>,
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,stellmq_client=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut shapes = Vec::new();
    for name in args.shape.split(',') {
        match Shape::parse(name.trim()) {
            Some(s) => shapes.push(s),
            None => {
                eprintln!("mqchaos: unknown shape {name:?} (controller, classic or proxy)");
                return ExitCode::from(2);
            }
        }
    }
    let mut reports: Vec<Report> = Vec::new();
    let mut seed = args.seed;
    for _ in 0..args.runs {
        for shape in &shapes {
            let config = RunConfig {
                seed,
                shape: *shape,
                faults: args.faults,
                work_dir: args.work_dir.clone(),
                cpp_python: args.cpp_python.clone(),
                grpc_python: args.grpc_python.clone(),
                route_expiries: args.expire_routes,
                congestion: args.congest,
                log_dir: args.log_dir.clone(),
            };
            seed += 1;
            match run(&config) {
                Ok(report) => {
                    eprintln!("{}", summary(&report));
                    reports.push(report);
                }
                Err(ChaosError::Unsupported(why)) => {
                    eprintln!("mqchaos: skipped: {why}");
                    return ExitCode::from(SKIPPED);
                }
                Err(e) => {
                    eprintln!("mqchaos: run {shape:?} seed {} failed: {e}", config.seed);
                    write_report(&args.report, &reports);
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    write_report(&args.report, &reports);
    eprintln!("{}", totals(&reports));
    if reports.iter().all(Report::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn write_report(path: &Option<PathBuf>, reports: &[Report]) {
    let Some(path) = path else { return };
    let json = format!(
        "[{}]",
        reports.iter().map(to_json).collect::<Vec<_>>().join(",\n")
    );
    if let Err(e) = std::fs::write(path, json) {
        eprintln!("mqchaos: cannot write {}: {e}", path.display());
    }
}

fn summary(r: &Report) -> String {
    let f = &r.findings;
    let mut out = format!(
        "mqchaos: {:?} seed {}: {} faults, {} acknowledged ({} not), lost {}, duplicated {}, \
         order violations {}, overlapping {}, skipped by consumers {}/{}, stale routes {}, \
         faults never recovered from {}, recovery median {:?} ms worst {:?} ms, {} elections seen, \
         final master {}, {} s{}",
        r.shape,
        r.seed,
        r.faults.len(),
        f.acknowledged,
        f.unacknowledged,
        f.lost.len(),
        f.duplicated,
        f.order_violations.len(),
        f.overlapping.len(),
        f.skipped_clustering,
        f.skipped_broadcasting,
        f.stale_routes.len(),
        r.unrecovered().len(),
        r.recovery_median_ms,
        r.recovery_worst_ms,
        r.elections_seen,
        r.final_master,
        r.duration_s,
        if r.passed() { "" } else { ": FAILED" }
    );
    if let Some(s) = &f.sdk {
        out.push_str(&format!(
            "\n  {:?} SDK: {} acknowledged ({} not), lost {}, not received {}",
            s.client,
            s.acknowledged,
            s.unacknowledged,
            s.lost.len(),
            s.unreceived
        ));
    }
    for fault in &r.faults {
        out.push_str(&format!(
            "\n  {:>26} {:<6} {:>6} ms, recovery {:?} ms",
            fault.fault.name(),
            fault.target,
            fault.fault.duration_ms(),
            fault.recovery_ms
        ));
        if f.sdk.is_some() {
            out.push_str(&format!(", SDK {:?} ms", fault.sdk_recovery_ms));
        }
        if let Some(expired) = fault.routes_expired {
            out.push_str(&format!(
                ", routes expired {expired}, back {:?} ms after the heal",
                fault.routes_back_ms
            ));
        }
    }
    let sdk_findings = f.sdk.iter().flat_map(|s| s.lost.iter());
    for line in f
        .lost
        .iter()
        .chain(&f.order_violations)
        .chain(&f.overlapping)
        .chain(&f.skipped_examples)
        .chain(&f.stale_routes)
        .chain(sdk_findings)
        .take(20)
    {
        out.push_str(&format!("\n  finding: {line}"));
    }
    out
}

fn totals(reports: &[Report]) -> String {
    let faults: usize = reports.iter().map(|r| r.faults.len()).sum();
    let acked: usize = reports.iter().map(|r| r.findings.acknowledged).sum();
    let lost: usize = reports.iter().map(|r| r.findings.lost.len()).sum();
    let dup: usize = reports.iter().map(|r| r.findings.duplicated).sum();
    let overlap: usize = reports.iter().map(|r| r.findings.overlapping.len()).sum();
    let mut rec: Vec<u64> = reports
        .iter()
        .flat_map(|r| r.faults.iter().filter_map(|f| f.recovery_ms))
        .collect();
    rec.sort_unstable();
    format!(
        "mqchaos: {} runs, {faults} faults, {acked} acknowledged, {lost} lost, {dup} duplicated, \
         {overlap} overlapping, recovery median {:?} ms worst {:?} ms",
        reports.len(),
        rec.get(rec.len() / 2),
        rec.last()
    )
}
