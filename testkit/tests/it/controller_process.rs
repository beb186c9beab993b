//! Controller mode as users run it: three `mqcontroller` processes and a broker set of three
//! `mqbroker` processes with `enableControllerMode=true`. Sync sends run all along; the
//! master is killed with SIGKILL, a new one is elected and takes writes, every acknowledged
//! message is readable from it, and the old master comes back as a slave that keeps none of
//! what it alone had. Then the controller leader is killed, and the master again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_controller_client::ControllerClient;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};
use stellmq_testkit::process::{command, namesrv_boot_line, spawn_mqbroker};
use stellmq_testkit::{
    eventually_some, eventually_within, send_request, NameServer, Process, Pull,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const T: Duration = Duration::from_secs(5);
const TOPIC: &str = "CtlProc";
/// The bound: a new master takes writes within 10 s of the old one's death.
const FAIL_OVER_BOUND: Duration = Duration::from_secs(10);

/// Free loopback ports (bound, then released).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

struct Controllers {
    procs: Vec<Option<Process>>,
    addrs: Vec<String>,
}

impl Controllers {
    fn start(dir: &Path) -> Controllers {
        let ports = free_ports(3);
        let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let peers = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| format!("n{i}-{a}"))
            .collect::<Vec<_>>()
            .join(";");
        let procs = (0..3)
            .map(|i| {
                let conf = dir.join(format!("controller-n{i}.conf"));
                let text = format!(
                    "controllerDLegerGroup=ctl-test\ncontrollerDLegerPeers={peers}\n\
                     controllerDLegerSelfId=n{i}\nlistenPort={}\ncontrollerStorePath={}\n\
                     scanNotActiveBrokerInterval=500\n",
                    ports[i],
                    dir.join(format!("controller-n{i}")).display()
                );
                std::fs::write(&conf, text).expect("controller conf");
                let mut cmd = command("mqcontroller");
                cmd.arg("-c").arg(&conf);
                Some(Process::spawn_until(cmd, namesrv_boot_line).0)
            })
            .collect();
        Controllers { procs, addrs }
    }

    fn list(&self) -> String {
        self.addrs.join(";")
    }

    /// Kills the Raft leader; returns its index.
    async fn kill_leader(&mut self, client: &ControllerClient) -> usize {
        let leader = client.discover_leader().await.expect("a leader");
        let i = self
            .addrs
            .iter()
            .position(|a| *a == leader)
            .expect("the leader is one of ours");
        if let Some(mut p) = self.procs[i].take() {
            p.kill();
        }
        i
    }
}

struct Broker {
    conf: PathBuf,
    proc: Option<Process>,
    addr: String,
}

fn broker_conf(dir: &Path, i: usize, cluster: &str, controllers: &str) -> PathBuf {
    let store = dir.join(format!("broker-{i}"));
    let text = format!(
        "brokerClusterName={cluster}\nbrokerName=broker-a\nenableControllerMode=true\n\
         controllerAddr={controllers}\nlistenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\n\
         storePathRootDir={}\nmappedFileSizeCommitLog=8388608\nmaxMessageSize=1048576\n\
         allAckInSyncStateSet=true\nbrokerHeartbeatInterval=300\n\
         controllerHeartBeatTimeoutMills=4000\nsyncBrokerMetadataPeriod=1000\n\
         haMaxTimeSlaveNotCatchup=5000\n",
        store.display()
    );
    let conf = dir.join(format!("broker-{i}.properties"));
    std::fs::write(&conf, text).expect("broker conf");
    conf
}

impl Broker {
    async fn start(conf: PathBuf, ns: &str) -> Broker {
        let (proc, addr) = spawn_mqbroker(&conf, ns).await;
        Broker {
            conf,
            proc: Some(proc),
            addr,
        }
    }

    async fn restart(&mut self, ns: &str) {
        let (proc, addr) = spawn_mqbroker(&self.conf, ns).await;
        self.proc = Some(proc);
        self.addr = addr;
    }

    fn kill(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }
}

/// The master's address and epoch, and the SyncStateSet, as the controllers see them.
async fn replica_info(client: &ControllerClient) -> Option<(String, i32, BTreeSet<i64>)> {
    let (header, set) = client.get_replica_info("broker-a").await.ok()?;
    let addr = header.master_address.filter(|a| !a.is_empty())?;
    Some((addr, header.master_epoch?, set.sync_state_set))
}

/// Every message of queue 0 of the topic the broker at `addr` serves.
async fn pull_all(client: &RemotingClient, addr: &str) -> Option<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut offset = 0;
    loop {
        let pull = Pull::new("ctl-proc", TOPIC, 0, offset)
            .subscribe("*")
            .suspend(0);
        let r = client.invoke(addr, pull.to_request(), T).await.ok()?;
        match r.code {
            0 => {
                for record in MessageRecord::decode_all(r.body.clone(), true).ok()? {
                    out.insert(String::from_utf8_lossy(&record.body).into_owned());
                }
                offset = r.ext_fields.get("nextBeginOffset")?.parse().ok()?;
            }
            19 if !out.is_empty() => return Some(out), // PULL_NOT_FOUND: the end
            _ => return None,
        }
    }
}

/// The CommitLog max offset a broker reports in its epoch cache (GET_BROKER_EPOCH_CACHE).
async fn max_offset(client: &RemotingClient, addr: &str) -> Option<i64> {
    let request = RemotingCommand::request(RequestCode::GET_BROKER_EPOCH_CACHE, ExtFields::new());
    let r = client.invoke(addr, request, T).await.ok()?;
    let body: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
    body.get("maxOffset")?.as_i64()
}

#[derive(Default)]
struct Acked {
    bodies: BTreeSet<String>,
    /// When each master address last acknowledged a send.
    last_ack: Vec<(String, Instant)>,
}

/// Sends numbered messages to whichever broker the controllers name master, recording what
/// was acknowledged and by whom.
fn keep_sending(
    controllers: Arc<ControllerClient>,
    acked: Arc<Mutex<Acked>>,
    stop: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let client = RemotingClient::new(ClientConfig::default());
        let mut i = 0u64;
        while !stop.is_cancelled() {
            let Some((master, _, _)) = replica_info(&controllers).await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            for _ in 0..20 {
                let body = format!("load-{i}");
                i += 1;
                let request = send_request(TOPIC, 0, body.as_bytes(), &[]);
                match client.invoke(&master, request, T).await {
                    Ok(r) if r.code == 0 => {
                        let mut a = acked.lock();
                        a.bodies.insert(body);
                        a.last_ack.push((master.clone(), Instant::now()));
                    }
                    _ => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        break;
                    }
                }
            }
        }
    })
}

/// Waits until a broker other than `old` is master of a newer epoch than `epoch` and has
/// acknowledged a send after `since`; returns its address, its epoch and how long it took.
async fn new_master_takes_writes(
    client: &ControllerClient,
    acked: &Mutex<Acked>,
    old: &str,
    epoch: i32,
    since: Instant,
) -> (String, i32, Duration) {
    let (addr, new_epoch) = eventually_some(
        "the controllers elect a new master",
        Duration::from_secs(30),
        async || {
            let (addr, e, _) = replica_info(client).await?;
            (addr != old && e > epoch).then_some((addr, e))
        },
    )
    .await;
    let took = eventually_some(
        "the new master acknowledges a send",
        Duration::from_secs(30),
        async || {
            acked
                .lock()
                .last_ack
                .iter()
                .find(|(a, t)| *a == addr && *t > since)
                .map(|(_, t)| *t - since)
        },
    )
    .await;
    (addr, new_epoch, took)
}

/// Three controllers, a name server and a broker set of three, with a master elected and
/// both slaves in its SyncStateSet.
struct Stack {
    dir: tempfile::TempDir,
    ctl: Controllers,
    ns: NameServer,
    brokers: Vec<Broker>,
    remoting: Arc<RemotingClient>,
    controllers: Arc<ControllerClient>,
    master: String,
    epoch: i32,
}

/// One stack at a time: six servers per stack already fill the two cores.
async fn one_stack_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static STACKS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    STACKS.lock().await
}

impl Stack {
    async fn start() -> Stack {
        let dir = tempfile::tempdir().expect("tempdir");
        let cluster = format!("Ctl{}", std::process::id());
        let ctl = Controllers::start(dir.path());
        let ns = NameServer::start().await;
        let mut brokers = Vec::new();
        for i in 0..3 {
            let conf = broker_conf(dir.path(), i, &cluster, &ctl.list());
            brokers.push(Broker::start(conf, ns.addr()).await);
        }
        let remoting = Arc::new(RemotingClient::new(ClientConfig::default()));
        let controllers = Arc::new(
            ControllerClient::new(remoting.clone(), &ctl.list(), T).expect("controller list"),
        );
        let (master, epoch, _) = eventually_some(
            "a master is elected and both slaves are in sync",
            Duration::from_secs(60),
            async || {
                replica_info(&controllers)
                    .await
                    .filter(|(_, _, set)| set.len() == 3)
            },
        )
        .await;
        Stack {
            dir,
            ctl,
            ns,
            brokers,
            remoting,
            controllers,
            master,
            epoch,
        }
    }

    fn index_of(&self, addr: &str) -> usize {
        self.brokers
            .iter()
            .position(|b| b.addr == addr)
            .expect("the broker is ours")
    }

    async fn stop(mut self) {
        for b in &mut self.brokers {
            b.kill();
        }
        self.ns.shutdown().await;
        drop(self.dir);
    }
}

/// The controller id of the broker at `addr` (a slave reports its own in GET_BROKER_EPOCH_CACHE).
async fn controller_id(client: &RemotingClient, addr: &str) -> Option<i64> {
    let request = RemotingCommand::request(RequestCode::GET_BROKER_EPOCH_CACHE, ExtFields::new());
    let r = client.invoke(addr, request, T).await.ok()?;
    let body: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
    body.get("brokerId")?.as_i64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_set_survives_its_master_and_its_controller_leader() {
    let _alone = one_stack_at_a_time().await;
    let Stack {
        dir,
        mut ctl,
        ns,
        mut brokers,
        remoting,
        controllers,
        master,
        epoch,
    } = Stack::start().await;
    let ns_addr = ns.addr().to_owned();

    let acked = Arc::new(Mutex::new(Acked::default()));
    let stop = CancellationToken::new();
    let sender = keep_sending(controllers.clone(), acked.clone(), stop.clone());
    eventually_within(
        "sends are acknowledged",
        Duration::from_secs(30),
        async || acked.lock().bodies.len() >= 200,
    )
    .await;
    // The slaves must have the topic before the master goes (they copy it every few s).
    for b in brokers.iter().filter(|b| b.addr != master) {
        eventually_within(
            "a slave serves the topic",
            Duration::from_secs(30),
            async || pull_all(&remoting, &b.addr).await.is_some(),
        )
        .await;
    }

    // 1. SIGKILL of the master.
    let old = brokers
        .iter()
        .position(|b| b.addr == master)
        .expect("the master is ours");
    brokers[old].kill();
    let killed = Instant::now();
    let (master2, epoch2, took) =
        new_master_takes_writes(&controllers, &acked, &master, epoch, killed).await;
    eprintln!("fail-over: master killed to first acknowledged send on {master2}: {took:?}");
    assert!(took <= FAIL_OVER_BOUND, "fail-over took {took:?}");

    // Every message acknowledged so far is on the new master.
    let sent = acked.lock().bodies.clone();
    let served = eventually_some(
        "the new master serves",
        Duration::from_secs(20),
        async || pull_all(&remoting, &master2).await,
    )
    .await;
    let lost: Vec<&String> = sent.difference(&served).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged messages lost: {:?}",
        lost.len(),
        lost.iter().take(5).collect::<Vec<_>>()
    );

    // 2. The old master comes back as a slave and ends up with exactly the new master's log.
    brokers[old].restart(&ns_addr).await;
    let rejoined = brokers[old].addr.clone();
    let target = max_offset(&remoting, &master2)
        .await
        .expect("the new master's offset");
    eventually_within(
        "the old master rejoins as a slave and catches up",
        Duration::from_secs(60),
        async || {
            max_offset(&remoting, &rejoined)
                .await
                .is_some_and(|o| o >= target)
        },
    )
    .await;
    // Nothing it alone had survived: every message it serves is the new master's too.
    let on_rejoined = eventually_some(
        "the rejoined slave serves",
        Duration::from_secs(20),
        async || pull_all(&remoting, &rejoined).await,
    )
    .await;
    let on_master = pull_all(&remoting, &master2)
        .await
        .expect("the master serves");
    let divergent: Vec<&String> = on_rejoined.difference(&on_master).collect();
    assert!(
        divergent.is_empty(),
        "the rejoined slave kept {divergent:?}"
    );

    // 3. SIGKILL of the controller leader: the two left elect one, and a second master loss
    // is still handled.
    ctl.kill_leader(&controllers).await;
    eventually_within(
        "the controllers elect a new leader",
        Duration::from_secs(30),
        async || controllers.discover_leader().await.is_ok(),
    )
    .await;
    eventually_within(
        "the SyncStateSet holds all three again",
        Duration::from_secs(60),
        async || {
            replica_info(&controllers)
                .await
                .is_some_and(|(_, _, s)| s.len() == 3)
        },
    )
    .await;
    // A controller fail-over alone changes no master.
    let (still, still_epoch, _) = replica_info(&controllers).await.expect("replica info");
    assert_eq!(
        (still.as_str(), still_epoch),
        (master2.as_str(), epoch2),
        "the master changed with the controller leader"
    );
    let second = brokers
        .iter()
        .position(|b| b.addr == master2)
        .expect("the second master is ours");
    brokers[second].kill();
    let killed = Instant::now();
    let (master3, _, took) =
        new_master_takes_writes(&controllers, &acked, &master2, epoch2, killed).await;
    eprintln!("second fail-over (one controller down): to {master3} in {took:?}");
    assert!(took <= FAIL_OVER_BOUND, "second fail-over took {took:?}");

    stop.cancel();
    let _ = sender.await;
    let sent = acked.lock().bodies.clone();
    let served = pull_all(&remoting, &master3)
        .await
        .expect("the third master serves");
    let lost = sent.difference(&served).count();
    assert_eq!(lost, 0, "acknowledged messages missing on the third master");
    for b in &mut brokers {
        b.kill();
    }
    ns.shutdown().await;
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_that_falls_behind_leaves_the_set_and_is_not_elected() {
    let _alone = one_stack_at_a_time().await;
    let stack = Stack::start().await;
    let slaves: Vec<usize> = (0..3)
        .filter(|i| stack.brokers[*i].addr != stack.master)
        .collect();
    let (lagging, healthy) = (slaves[0], slaves[1]);
    let lagging_id = controller_id(&stack.remoting, &stack.brokers[lagging].addr)
        .await
        .expect("the lagging slave's id");

    let acked = Arc::new(Mutex::new(Acked::default()));
    let stop = CancellationToken::new();
    let sender = keep_sending(stack.controllers.clone(), acked.clone(), stop.clone());
    let frozen = stack.brokers[lagging].proc.as_ref().expect("running");
    frozen.signal("-STOP");
    frozen.wait_until_stopped();
    eventually_within(
        "the master drops the stopped slave from the SyncStateSet",
        Duration::from_secs(30),
        async || {
            replica_info(&stack.controllers)
                .await
                .is_some_and(|(_, _, set)| set.len() == 2 && !set.contains(&lagging_id))
        },
    )
    .await;

    // The slave lives again (its heartbeats resume), but the master dies before it is back in
    // the set: only the slave that kept up may be elected.
    let mut stack = stack;
    stack.brokers[lagging]
        .proc
        .as_ref()
        .expect("running")
        .signal("-CONT");
    let old = stack.index_of(&stack.master.clone());
    stack.brokers[old].kill();
    let killed = Instant::now();
    let (elected, _, took) = new_master_takes_writes(
        &stack.controllers,
        &acked,
        &stack.master,
        stack.epoch,
        killed,
    )
    .await;
    assert_eq!(
        elected, stack.brokers[healthy].addr,
        "the slave outside the SyncStateSet was elected"
    );
    eprintln!("fail-over past a lagging slave: {took:?}");
    stop.cancel();
    let _ = sender.await;
    let sent = acked.lock().bodies.clone();
    let served = pull_all(&stack.remoting, &elected)
        .await
        .expect("the new master serves");
    assert_eq!(
        sent.difference(&served).count(),
        0,
        "acknowledged messages lost"
    );
    stack.stop().await;
}
