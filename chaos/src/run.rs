//! One run: build the network, start the cluster inside it, run the workload while the
//! schedule's faults come and go, undo every fault, check, report, tear everything down.
//!
//! The run's own network calls (the workload, the checker, the controllers' watcher) are made
//! from a thread that has joined the client's namespace; its tokio runtime's threads inherit
//! it. The namespaces are removed when the run ends, however it ends.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use stellmq_client::{AdminClient, TopicConfig};
use stellmq_controller_client::ControllerClient;

use crate::check::{self, Findings};
use crate::cluster::{named_master, Cluster, Shape, BROKER_NAME};
use crate::net::Net;
use crate::schedule::{self, Fault};
use crate::sdk::{SdkClient, SdkKind};
use crate::workload::{MasterSample, RouteSample, Workload, SDK_TOPIC, TOPIC};
use crate::ChaosError;

mod faults;
use faults::inject;

/// Queues of the run's topic.
const QUEUES: i32 = 4;
/// Acknowledgements before the first fault.
const WARM_UP_ACKS: usize = 100;
/// Acknowledgements of the real SDK before the first fault.
const SDK_WARM_UP_ACKS: usize = 20;
/// How long the name server may route a master other than the one the controllers name
/// (the new master registers at once; the grace leaves room for a loaded machine).
const STALE_ROUTE_GRACE_MS: u64 = 5_000;
/// How long the workloads get after the last fault to send successfully again (past a 4.x
/// client's 30 s route poll).
const RECOVERY_WAIT: Duration = Duration::from_secs(40);
/// How long the cluster gets, once every fault is undone, to serve every message again.
const SETTLE: Duration = Duration::from_secs(90);

/// What to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub seed: u64,
    pub shape: Shape,
    pub faults: usize,
    /// Where the nodes keep their stores and configuration (removed afterwards).
    pub work_dir: Option<PathBuf>,
    /// A Python with the C++ SDK installed (`rocketmq-client-python`): runs it beside the
    /// workload in the controller and classic shapes.
    pub cpp_python: Option<PathBuf>,
    /// A Python with RocketMQ 5's client installed (`rocketmq-python-client`): runs it
    /// through the proxy in the proxy shape.
    pub grpc_python: Option<PathBuf>,
    /// Route expiries (the name server cut from the brokers past its 120 s expiry) added to
    /// the schedule.
    pub route_expiries: usize,
    /// Congested links of the master added to the schedule.
    pub congestion: usize,
    /// Where each node's output is kept (`<node>.log`, appended across restarts).
    pub log_dir: Option<std::path::PathBuf>,
}

impl RunConfig {
    /// The SDK this run adds to the workload, and the Python to run it with.
    fn sdk(&self) -> Option<(SdkKind, &Path)> {
        match self.shape {
            Shape::Proxy => Some((SdkKind::Grpc, self.grpc_python.as_deref()?)),
            Shape::Controller | Shape::Classic => Some((SdkKind::Cpp, self.cpp_python.as_deref()?)),
        }
    }
}

/// One fault as it happened.
#[derive(Debug, Clone, Serialize)]
pub struct FaultRecord {
    pub fault: Fault,
    /// The node it hit (empty when its target could not be resolved).
    pub target: String,
    pub started_at: u64,
    pub ended_at: u64,
    /// From the fault's start to the first acknowledgement of a send begun after it.
    pub recovery_ms: Option<u64>,
    /// The same for the real SDK's sends, when one ran.
    pub sdk_recovery_ms: Option<u64>,
    /// Route expiries: whether the name server had dropped the topic's route when the cut
    /// ended, and how long after the cut healed it routed the topic again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routes_expired: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routes_back_ms: Option<u64>,
}

/// What a run reports.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub seed: u64,
    pub shape: Shape,
    pub faults: Vec<FaultRecord>,
    pub findings: Findings,
    pub recovery_median_ms: Option<u64>,
    pub recovery_worst_ms: Option<u64>,
    pub final_master: String,
    /// Masters the controllers named during the run (new epochs the watcher saw).
    pub elections_seen: usize,
    pub duration_s: u64,
}

impl Report {
    /// No finding, and the workload's sends were acknowledged again after every fault (a
    /// fault after which nothing was acknowledged until the run's end left the cluster
    /// unable to take writes).
    pub fn passed(&self) -> bool {
        self.findings.passed() && self.unrecovered().is_empty()
    }

    /// The faults after which no send of the workload was acknowledged again.
    pub fn unrecovered(&self) -> Vec<&FaultRecord> {
        self.faults
            .iter()
            .filter(|f| f.recovery_ms.is_none())
            .collect()
    }
}

/// Runs `config` (blocking; needs root).
pub fn run(config: &RunConfig) -> Result<Report, ChaosError> {
    crate::net::can_build().map_err(ChaosError::Unsupported)?;
    Net::sweep();
    let run_id = std::process::id().to_string();
    let mut names = config.shape.host_names();
    names.push("client");
    let mut net = Net::build(&run_id, &names)?;
    let client_ns = net
        .host("client")
        .map(|h| h.netns.clone())
        .ok_or_else(|| ChaosError::Setup("no client namespace".into()))?;
    let dir = match &config.work_dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| ChaosError::Setup(format!("work dir: {e}")))?;
    let config = config.clone();
    let dir_path = dir.path().to_owned();
    let outcome = std::thread::scope(|s| {
        s.spawn(|| {
            join_netns(&client_ns)?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| ChaosError::Setup(format!("runtime: {e}")))?;
            rt.block_on(scenario(&config, &mut net, dir_path))
        })
        .join()
        .unwrap_or_else(|_| Err(ChaosError::Setup("the run panicked".into())))
    });
    drop(net);
    drop(dir);
    outcome
}

/// Moves the calling thread into network namespace `name`.
fn join_netns(name: &str) -> Result<(), ChaosError> {
    let path = format!("/run/netns/{name}");
    let file = File::open(&path).map_err(|e| ChaosError::Setup(format!("{path}: {e}")))?;
    nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| ChaosError::Setup(format!("setns {name}: {e}")))
}

async fn scenario(config: &RunConfig, net: &mut Net, dir: PathBuf) -> Result<Report, ChaosError> {
    let began = Instant::now();
    let hosts = net.hosts().to_vec();
    let mut cluster = Cluster::start(config.shape, &hosts, &dir, config.log_dir.as_deref()).await?;
    let outcome = faults_and_check(config, net, &mut cluster, &dir, began).await;
    if outcome.is_err() {
        for node in &cluster.nodes {
            tracing::error!(node = %node.host.name, output = %node.output().join("\n"), "last output");
        }
    }
    cluster.stop();
    outcome
}

async fn faults_and_check(
    config: &RunConfig,
    net: &mut Net,
    cluster: &mut Cluster,
    dir: &std::path::Path,
    began: Instant,
) -> Result<Report, ChaosError> {
    let master = ready(cluster).await?;
    create_topic(cluster, &master).await?;
    let mut workload = Workload::start(cluster, began, &dir.join("offsets")).await?;
    let watcher = watch_masters(cluster, &workload);
    let route_watcher = watch_routes(cluster, &workload);
    wait_for(
        Duration::from_secs(60),
        "the first acknowledgements",
        || workload.journal.lock().acks.len() >= WARM_UP_ACKS,
    )
    .await?;
    let mut sdk = start_sdk(config, net, cluster, dir, began).await?;
    let steps = schedule::with_congestion(
        schedule::with_route_expiries(
            schedule::generate(config.seed, config.shape, config.faults),
            config.seed,
            config.route_expiries,
        ),
        config.seed,
        config.congestion,
    );
    let mut records = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(step.quiet_before_ms)).await;
        let seed = config.seed.wrapping_mul(1_000_003).wrapping_add(i as u64);
        let record = inject(step, seed, net, cluster, &workload).await?;
        tracing::info!(n = i + 1, fault = step.fault.name(), target = %record.target, "fault undone");
        records.push(record);
    }
    // Every workload's recovery from the last fault is measured before the senders stop
    // (a 4.x client follows a moved master on its 30 s route poll).
    let last_start = records.last().map_or(0, |r: &FaultRecord| r.started_at);
    // Acks are journaled in the order they end: only those since the fault are looked at.
    let sent_since = |ends: &mut dyn DoubleEndedIterator<Item = (u64, u64)>| {
        ends.rev()
            .take_while(|(_, acked)| *acked >= last_start)
            .any(|(sent, _)| sent >= last_start)
    };
    let _ = wait_for(RECOVERY_WAIT, "recovery from the last fault", || {
        let journal = workload.journal.lock();
        let own = sent_since(&mut journal.acks.iter().map(|a| (a.sent_at, a.acked_at)));
        drop(journal);
        own && sdk.as_ref().is_none_or(|sdk| {
            let journal = sdk.journal.lock();
            sent_since(&mut journal.acks.iter().map(|a| (a.sent_at, a.acked_at)))
        })
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    workload.stop_sending().await;
    off_worker(|| net.heal())?;
    cluster.revive_all().await?;
    if let Some(sdk) = sdk.as_mut() {
        sdk.stop_sending().await?;
    }
    let excused = name_server_cuts(&records);
    let (final_master, findings) =
        settle_and_check(cluster, &workload, sdk.as_ref(), &excused).await?;
    for w in [watcher, route_watcher].into_iter().flatten() {
        w.abort();
    }
    let elections_seen;
    {
        let journal = workload.journal.lock();
        let mut epochs: Vec<i32> = journal.masters.iter().map(|m| m.epoch).collect();
        epochs.dedup();
        elections_seen = epochs.len().saturating_sub(1);
        for r in &mut records {
            r.recovery_ms = journal
                .acks
                .iter()
                .filter(|a| a.sent_at >= r.started_at)
                .map(|a| a.acked_at.saturating_sub(r.started_at))
                .min();
            r.sdk_recovery_ms = sdk.as_ref().and_then(|sdk| {
                sdk.journal
                    .lock()
                    .acks
                    .iter()
                    .filter(|a| a.sent_at >= r.started_at)
                    .map(|a| a.acked_at.saturating_sub(r.started_at))
                    .min()
            });
        }
    }
    workload.shutdown().await;
    if let Some(sdk) = sdk {
        off_worker(|| sdk.shutdown());
    }
    let mut recoveries: Vec<u64> = records.iter().filter_map(|r| r.recovery_ms).collect();
    recoveries.sort_unstable();
    Ok(Report {
        seed: config.seed,
        shape: config.shape,
        recovery_median_ms: recoveries.get(recoveries.len() / 2).copied(),
        recovery_worst_ms: recoveries.last().copied(),
        faults: records,
        findings,
        final_master,
        elections_seen,
        duration_s: began.elapsed().as_secs(),
    })
}

/// Starts the run's real SDK, if it has one, once it has acknowledged its first sends.
async fn start_sdk(
    config: &RunConfig,
    net: &Net,
    cluster: &Cluster,
    dir: &Path,
    began: Instant,
) -> Result<Option<SdkClient>, ChaosError> {
    let Some((kind, python)) = config.sdk() else {
        return Ok(None);
    };
    let endpoint = match kind {
        SdkKind::Cpp => cluster.namesrv_addr().to_owned(),
        SdkKind::Grpc => cluster
            .proxy_endpoint()
            .ok_or_else(|| ChaosError::Setup("no proxy in this shape".into()))?,
    };
    let netns = net
        .host("client")
        .map(|h| h.netns.clone())
        .ok_or_else(|| ChaosError::Setup("no client namespace".into()))?;
    let sdk = SdkClient::start(kind, python, &netns, &endpoint, SDK_TOPIC, dir, began).await?;
    wait_for(
        Duration::from_secs(60),
        "the SDK's first acknowledgements",
        || sdk.journal.lock().acks.len() >= SDK_WARM_UP_ACKS,
    )
    .await?;
    Ok(Some(sdk))
}

/// Polls `done` every 100 ms up to `limit`.
async fn wait_for(
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
) -> Result<(), ChaosError> {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return Err(ChaosError::Stuck(format!("{what} within {limit:?}")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Waits until the broker set has a master (controller mode: with every broker in its
/// SyncStateSet) routed by the name server; returns the master's name.
async fn ready(cluster: &Cluster) -> Result<String, ChaosError> {
    let deadline = Instant::now() + Duration::from_secs(90);
    let admin = AdminClient::new(cluster.namesrv_addr())
        .map_err(|e| ChaosError::Setup(format!("admin client: {e}")))?;
    loop {
        if let Some(master) = routed_master(cluster, &admin).await {
            let in_sync = match &cluster.controllers {
                None => true,
                Some(c) => c
                    .get_replica_info(BROKER_NAME)
                    .await
                    .is_ok_and(|(_, set)| set.sync_state_set.len() == 3),
            };
            if in_sync {
                admin.shutdown().await;
                return Ok(master);
            }
        }
        if Instant::now() > deadline {
            admin.shutdown().await;
            return Err(ChaosError::Stuck("the cluster never became ready".into()));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The master the controllers (or the configuration) name, once the name server routes it.
async fn routed_master(cluster: &Cluster, admin: &AdminClient) -> Option<String> {
    let master = cluster.master().await?;
    let addr = cluster.addr_of(&master)?;
    let info = admin.cluster_info().await.ok()?;
    let routed = info.broker_addr_table.get(BROKER_NAME)?.master_addr()? == addr;
    routed.then_some(master)
}

async fn create_topic(cluster: &Cluster, master: &str) -> Result<(), ChaosError> {
    let addr = cluster
        .addr_of(master)
        .ok_or_else(|| ChaosError::Setup("no master".into()))?;
    let admin = AdminClient::new(cluster.namesrv_addr())
        .map_err(|e| ChaosError::Setup(format!("admin client: {e}")))?;
    let mut created = Ok(());
    for name in [TOPIC, SDK_TOPIC] {
        let mut topic = TopicConfig::new(name);
        topic.read_queue_nums = QUEUES;
        topic.write_queue_nums = QUEUES;
        created = admin.create_topic(&addr, &topic).await;
        if created.is_err() {
            break;
        }
    }
    admin.shutdown().await;
    created.map_err(|e| ChaosError::Setup(format!("create topic: {e}")))
}

/// Controller mode: samples who the controllers name master every 100 ms.
fn watch_masters(cluster: &Cluster, workload: &Workload) -> Option<tokio::task::JoinHandle<()>> {
    let list = cluster.controller_list()?;
    let client =
        ControllerClient::new(cluster.remoting.clone(), &list, Duration::from_secs(1)).ok()?;
    let journal = workload.journal.clone();
    let epoch_start = workload.epoch();
    Some(tokio::spawn(async move {
        loop {
            if let Some((addr, epoch)) = named_master(&client).await {
                let at = u64::try_from(epoch_start.elapsed().as_millis()).unwrap_or(0);
                journal
                    .lock()
                    .masters
                    .push(MasterSample { at, addr, epoch });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }))
}

/// Controller shapes: samples which broker the name server routes as master every 200 ms,
/// to check that routes follow the controllers' choice.
fn watch_routes(cluster: &Cluster, workload: &Workload) -> Option<tokio::task::JoinHandle<()>> {
    cluster.controller_list()?;
    let admin = AdminClient::new(cluster.namesrv_addr()).ok()?;
    let journal = workload.journal.clone();
    let epoch_start = workload.epoch();
    Some(tokio::spawn(async move {
        loop {
            if let Ok(route) = admin.topic_route(TOPIC).await {
                let master = route
                    .broker_datas
                    .iter()
                    .find_map(|b| b.master_addr().map(str::to_owned));
                let at = u64::try_from(epoch_start.elapsed().as_millis()).unwrap_or(0);
                journal.lock().routes.push(RouteSample { at, master });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }))
}

/// Runs `f`, which waits on `ip` or `kill` commands, without holding up the workload's tasks
/// on this worker.
fn off_worker<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// Waits for the final master, then checks; returns the master's name and the findings.
/// Lost messages are read again until the settle time is over (a master that has just come
/// back may still be recovering its queues); what is still missing then is lost.
async fn settle_and_check(
    cluster: &Cluster,
    workload: &Workload,
    sdk: Option<&SdkClient>,
    excused: &[(u64, u64)],
) -> Result<(String, Findings), ChaosError> {
    let deadline = Instant::now() + SETTLE;
    let admin = AdminClient::new(cluster.namesrv_addr())
        .map_err(|e| ChaosError::Setup(format!("admin client: {e}")))?;
    let mut last = Findings::default();
    let mut master = String::new();
    loop {
        if let Some(m) = routed_master(cluster, &admin).await {
            let addr = cluster.addr_of(&m).unwrap_or_default();
            master = m;
            if let Ok(stored) = read_both(cluster, &addr, sdk.is_some()).await {
                last = findings(cluster, workload, sdk, &stored, &addr, excused);
                if last.passed() {
                    break;
                }
            }
        }
        if Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    admin.shutdown().await;
    if master.is_empty() {
        return Err(ChaosError::Stuck(
            "no master was routed once the faults were over".into(),
        ));
    }
    Ok((master, last))
}

/// When the name server could not follow the brokers: while cut from them, and after a route
/// expiry until the routes were back.
fn name_server_cuts(records: &[FaultRecord]) -> Vec<(u64, u64)> {
    records
        .iter()
        // A route expiry's record ends once the routes were back (or 90 s after the heal).
        .filter(|r| {
            matches!(
                r.fault,
                Fault::CutNameServer { .. } | Fault::ExpireRoutes { .. }
            )
        })
        .map(|r| (r.started_at, r.ended_at))
        .collect()
}

/// What the master at `addr` stores of the workload's topic and (with an SDK) the SDK's.
async fn read_both(
    cluster: &Cluster,
    addr: &str,
    with_sdk: bool,
) -> Result<(check::Stored, check::Stored), String> {
    let stored = check::read_all(&cluster.remoting, addr, TOPIC, QUEUES).await?;
    let of_sdk = if with_sdk {
        check::read_all(&cluster.remoting, addr, SDK_TOPIC, QUEUES).await?
    } else {
        check::Stored::new()
    };
    Ok((stored, of_sdk))
}

fn findings(
    cluster: &Cluster,
    workload: &Workload,
    sdk: Option<&SdkClient>,
    (stored, of_sdk): &(check::Stored, check::Stored),
    master_addr: &str,
    excused: &[(u64, u64)],
) -> Findings {
    let journal = workload.journal.lock();
    let mut f = Findings {
        unacknowledged: journal.unacknowledged,
        ..Findings::default()
    };
    check::stored_matches(&journal.acks, stored, &mut f);
    check::order_holds(&journal.acks, &mut f);
    check::log_follows_real_time(&journal.acks, &mut f);
    f.stale_routes = check::stale_routes(
        &journal.masters,
        &journal.routes,
        excused,
        STALE_ROUTE_GRACE_MS,
    );
    if cluster.shape == Shape::Classic {
        check::only_master_acks(&journal.acks, master_addr, &mut f);
    }
    let (clustering, broadcasting) = check::skipped(&journal);
    f.skipped_clustering = clustering;
    f.skipped_broadcasting = broadcasting;
    f.skipped_examples = check::skipped_examples(&journal, 5);
    f.sdk = sdk.map(|sdk| check::sdk_findings(sdk.kind, &sdk.journal.lock(), of_sdk));
    f
}

/// The report as pretty JSON.
pub fn to_json(report: &Report) -> String {
    serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
