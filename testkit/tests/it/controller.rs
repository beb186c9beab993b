//! Controllers (RocketMQ 5 controller mode on Raft) on loopback: groups of one or three
//! in-process controllers with temp stores, brokers played by remoting clients and fake
//! broker listeners that record NOTIFY_BROKER_ROLE_CHANGED.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_controller::{ControllerConfig, ControllerHandle};
use stellmq_controller_client::{ControllerClient, LEADER_ADDRESS_FIELD};
use stellmq_remoting::net::{
    answer, ClientConfig, Lane, ProcessResult, RemotingClient, RemotingServer, RequestContext,
    ServerConfig, ServerHandle,
};
use stellmq_remoting::protocol::body::SyncStateSet;
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::process::command;
use stellmq_testkit::{eventually, eventually_some};
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(20);

/// A controller group; `nodes[i]` is `None` while controller i is stopped.
struct Group {
    nodes: Vec<Option<ControllerHandle>>,
    configs: Vec<ControllerConfig>,
    addrs: Vec<String>,
    _dirs: Vec<TempDir>,
}

impl Group {
    async fn start(n: usize, tweak: impl Fn(&mut ControllerConfig)) -> Group {
        let mut listeners = Vec::new();
        for _ in 0..n {
            listeners.push(TcpListener::bind("127.0.0.1:0").await.expect("bind"));
        }
        let addrs: Vec<String> = listeners
            .iter()
            .map(|l| l.local_addr().expect("addr").to_string())
            .collect();
        let peers = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| format!("n{i}-{a}"))
            .collect::<Vec<_>>()
            .join(";");
        let mut group = Group {
            nodes: Vec::new(),
            configs: Vec::new(),
            addrs,
            _dirs: Vec::new(),
        };
        for (i, listener) in listeners.into_iter().enumerate() {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut config = ControllerConfig {
                controller_dleger_group: "test-group".into(),
                controller_dleger_peers: peers.clone(),
                controller_dleger_self_id: format!("n{i}"),
                controller_store_path: dir.path().to_path_buf(),
                scan_not_active_broker_interval: 200,
                ..ControllerConfig::default()
            };
            tweak(&mut config);
            let handle = stellmq_controller::start_on(config.clone(), listener)
                .await
                .expect("controller starts");
            group.nodes.push(Some(handle));
            group.configs.push(config);
            group._dirs.push(dir);
        }
        group
    }

    fn addr_list(&self) -> String {
        self.addrs.join(";")
    }

    fn client(&self) -> ControllerClient {
        client_of(&self.addr_list())
    }

    /// The index of the leader, once one of the running controllers leads and every running
    /// controller knows it.
    async fn leader(&self) -> usize {
        eventually_some("a controller leads and all know it", WAIT, async || {
            let leader = self
                .nodes
                .iter()
                .position(|n| n.as_ref().is_some_and(|h| h.node().is_leader()))?;
            let leader_addr = &self.addrs[leader];
            self.nodes
                .iter()
                .flatten()
                .all(|h| h.node().leader().is_some_and(|p| &p.addr == leader_addr))
                .then_some(leader)
        })
        .await
    }

    async fn stop(&mut self, i: usize) {
        if let Some(handle) = self.nodes[i].take() {
            handle.shutdown().await;
        }
    }

    async fn restart(&mut self, i: usize) {
        let listener = TcpListener::bind(&self.addrs[i]).await.expect("rebind");
        let handle = stellmq_controller::start_on(self.configs[i].clone(), listener)
            .await
            .expect("controller restarts");
        self.nodes[i] = Some(handle);
    }
}

fn client_of(addrs: &str) -> ControllerClient {
    let remoting = Arc::new(RemotingClient::new(ClientConfig::default()));
    ControllerClient::new(remoting, addrs, Duration::from_secs(3)).expect("addresses")
}

/// A broker's listener recording the role changes it is told about.
struct FakeBroker {
    id: i64,
    addr: String,
    seen: Arc<Mutex<Vec<NotifyBrokerRoleChangedRequestHeader>>>,
    _server: Option<ServerHandle>,
    heartbeats: Option<JoinHandle<()>>,
}

struct Recorder {
    seen: Arc<Mutex<Vec<NotifyBrokerRoleChangedRequestHeader>>>,
}

fn record(recorder: &Recorder, _ctx: RequestContext, request: RemotingCommand) -> ProcessResult {
    if let Ok(h) = NotifyBrokerRoleChangedRequestHeader::from_ext_fields(&request.ext_fields) {
        recorder.seen.lock().push(h);
    }
    Ok(Some(request.success_to()))
}

impl FakeBroker {
    async fn start(id: i64) -> FakeBroker {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut server = RemotingServer::new(ServerConfig {
            listen_addr: "127.0.0.1:0".parse().expect("addr"),
            ..ServerConfig::default()
        });
        let recorder = Arc::new(Recorder { seen: seen.clone() });
        server.register(
            &[RequestCode::NOTIFY_BROKER_ROLE_CHANGED],
            answer(&recorder, record),
            Lane::new("notify", 1, 16),
        );
        let server = server.start().await.expect("fake broker listens");
        FakeBroker {
            id,
            addr: server.local_addr().to_string(),
            seen,
            _server: Some(server),
            heartbeats: None,
        }
    }

    /// A broker cut off from the controller: its port takes requests and never answers.
    async fn start_unreachable(id: i64) -> FakeBroker {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut sink = [0u8; 4096];
                    while tokio::io::AsyncReadExt::read(&mut socket, &mut sink)
                        .await
                        .is_ok_and(|n| n > 0)
                    {}
                });
            }
        });
        FakeBroker {
            id,
            addr,
            seen: Arc::new(Mutex::new(Vec::new())),
            _server: None,
            heartbeats: None,
        }
    }

    /// Applies the next id (which must be `self.id`) and registers.
    async fn join(&self, client: &ControllerClient) -> RegisterBrokerToControllerResponseHeader {
        let next = client.get_next_broker_id("c", "b").await.expect("next id");
        assert_eq!(next, self.id, "ids are handed out in order");
        client
            .apply_broker_id(&ApplyBrokerIdRequestHeader {
                cluster_name: Some("c".into()),
                broker_name: "b".into(),
                applied_broker_id: self.id,
                register_check_code: format!("{};{}", self.addr, self.id),
            })
            .await
            .expect("apply id");
        let (header, _) = client
            .register_broker(&RegisterBrokerToControllerRequestHeader {
                cluster_name: Some("c".into()),
                broker_name: "b".into(),
                broker_id: self.id,
                broker_address: self.addr.clone(),
                invoke_time: None,
            })
            .await
            .expect("register");
        header
    }

    fn beat(&mut self, addrs: String) {
        let header = BrokerHeartbeatRequestHeader {
            cluster_name: "c".into(),
            broker_addr: self.addr.clone(),
            broker_name: "b".into(),
            broker_id: Some(self.id),
            epoch: Some(1),
            max_offset: Some(100 * self.id),
            confirm_offset: Some(0),
            heartbeat_timeout_mills: Some(1_000),
            election_priority: Some(0),
        };
        self.heartbeats = Some(tokio::spawn(async move {
            let client = client_of(&addrs);
            loop {
                let _ = client.heartbeat(&header).await;
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        }));
    }

    fn stop_beating(&mut self) {
        if let Some(task) = self.heartbeats.take() {
            task.abort();
        }
    }

    fn notified_master(&self) -> Option<(i64, i32)> {
        let seen = self.seen.lock();
        let last = seen.last()?;
        Some((last.master_broker_id?, last.master_epoch?))
    }
}

async fn elect(
    client: &ControllerClient,
    broker_id: Option<i64>,
) -> (i32, ElectMasterResponseHeader) {
    let response = client
        .elect_master(&ElectMasterRequestHeader {
            cluster_name: Some("c".into()),
            broker_name: "b".into(),
            broker_id,
            designate_elect: None,
            invoke_time: None,
        })
        .await
        .expect("elect answered");
    (
        response.command.code,
        response.header().expect("elect header"),
    )
}

async fn alter(
    client: &ControllerClient,
    master: i64,
    epoch: i32,
    set_epoch: i32,
    ids: &[i64],
) -> Result<i32, i32> {
    let set = SyncStateSet {
        sync_state_set: ids.iter().copied().collect(),
        sync_state_set_epoch: set_epoch,
    };
    let header = AlterSyncStateSetRequestHeader {
        broker_name: "b".into(),
        master_broker_id: master,
        master_epoch: epoch,
        invoke_time: None,
    };
    client
        .alter_sync_state_set(&header, &set)
        .await
        .map_err(|e| e.remote_code().unwrap_or(-1))
}

async fn replica_info(client: &ControllerClient) -> (Option<i64>, i32, SyncStateSet) {
    let (header, set) = client.get_replica_info("b").await.expect("replica info");
    (
        header.master_broker_id,
        header.master_epoch.unwrap_or(0),
        set,
    )
}

async fn three_brokers(client: &ControllerClient, addrs: &str) -> Vec<FakeBroker> {
    let mut brokers = Vec::new();
    for id in 1..=3 {
        let mut broker = FakeBroker::start(id).await;
        let registered = broker.join(client).await;
        assert_eq!(
            registered.master_broker_id, None,
            "no master before the first election"
        );
        broker.beat(addrs.to_owned());
        brokers.push(broker);
    }
    brokers
}

/// Issue #36: the members of a broker set are told of a new master at once; one that does
/// not answer (the deposed master, cut off) no longer delays the others by its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_member_does_not_delay_the_others_role_change() {
    let group = Group::start(1, |_| {}).await;
    group.leader().await;
    let client = group.client();
    let mut brokers = vec![FakeBroker::start_unreachable(1).await];
    for id in 2..=3 {
        brokers.push(FakeBroker::start(id).await);
    }
    for broker in &mut brokers {
        broker.join(&client).await;
        broker.beat(group.addr_list());
    }
    let started = std::time::Instant::now();
    let election = tokio::spawn(async move { elect(&client, Some(2)).await });
    eventually_some("broker 3 hears of the new master", WAIT, async || {
        brokers[2].notified_master()
    })
    .await;
    let heard_after = started.elapsed();
    assert!(
        heard_after < Duration::from_millis(2_500),
        "told after {heard_after:?}: not behind the unreachable member's 3 s timeout"
    );
    let (code, header) = election.await.expect("elect");
    assert_eq!(code, 0);
    assert_eq!(header.master_broker_id, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_controllers_run_a_broker_set_through_failures() {
    let mut group = Group::start(3, |_| {}).await;
    let first_leader = group.leader().await;
    let client = group.client();
    let mut brokers = three_brokers(&client, &group.addr_list()).await;

    let (code, header) = elect(&client, Some(1)).await;
    assert_eq!(code, ResponseCode::SUCCESS.as_i32());
    assert_eq!(
        (header.master_broker_id, header.master_epoch),
        (Some(1), Some(1))
    );
    let (code, header) = elect(&client, Some(2)).await;
    assert_eq!(code, ResponseCode::CONTROLLER_MASTER_STILL_EXIST.as_i32());
    assert_eq!(header.master_broker_id, Some(1));

    assert_eq!(alter(&client, 1, 1, 1, &[1, 2]).await, Ok(2));
    assert_eq!(
        alter(&client, 2, 1, 2, &[1, 2, 3]).await,
        Err(ResponseCode::CONTROLLER_INVALID_MASTER.as_i32())
    );
    assert_eq!(
        alter(&client, 1, 1, 1, &[1, 2, 3]).await,
        Err(ResponseCode::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH.as_i32())
    );
    assert_eq!(
        alter(&client, 1, 0, 2, &[1, 2, 3]).await,
        Err(ResponseCode::CONTROLLER_FENCED_MASTER_EPOCH.as_i32())
    );
    assert_eq!(
        alter(&client, 1, 1, 2, &[2, 3]).await,
        Err(ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED.as_i32())
    );

    // The master's heartbeats stop: broker 2, the only other in-sync replica, takes over
    // (broker 3 has more data but is outside the SyncStateSet).
    brokers[0].stop_beating();
    let stopped = std::time::Instant::now();
    eventually("broker 2 is elected with epoch 2", async || {
        replica_info(&client).await.0 == Some(2)
    })
    .await;
    // Heartbeat timeout 1 s + scan interval 0.2 s, with room for a slow machine.
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopped.elapsed()
    );
    let (master, epoch, set) = replica_info(&client).await;
    assert_eq!((master, epoch), (Some(2), 2));
    assert_eq!(set.sync_state_set, [2].into_iter().collect());
    for broker in &brokers[1..] {
        eventually("the role change is notified", async || {
            broker.notified_master() == Some((2, 2))
        })
        .await;
    }

    // The leader controller dies: the two left elect a leader, serve the same metadata and
    // accept writes.
    group.stop(first_leader).await;
    let second_leader = group.leader().await;
    assert_ne!(second_leader, first_leader);
    assert_eq!(replica_info(&client).await.0, Some(2));
    let set_epoch = replica_info(&client).await.2.sync_state_set_epoch;
    let altered = eventually_some("the new leader accepts writes", WAIT, async || {
        alter(&client, 2, 2, set_epoch, &[2, 3]).await.ok()
    })
    .await;
    assert_eq!(altered, set_epoch + 1);

    // The stopped controller comes back from its store and catches up.
    group.restart(first_leader).await;
    let restarted = group.nodes[first_leader]
        .as_ref()
        .expect("running")
        .node()
        .clone();
    eventually(
        "the restarted controller has the current state",
        async || {
            restarted.with_state(|s| {
                s.broker_set("b").is_some_and(|b| {
                    b.master_broker_id == Some(2)
                        && b.sync_state_set == [2, 3].into_iter().collect()
                })
            })
        },
    )
    .await;
    for broker in &mut brokers {
        broker.stop_beating();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_outside_sync_state_set_is_elected_only_when_unclean() {
    let group = Group::start(1, |_| {}).await;
    group.leader().await;
    let client = group.client();
    let mut brokers = three_brokers(&client, &group.addr_list()).await;
    assert_eq!(
        elect(&client, Some(1)).await.0,
        ResponseCode::SUCCESS.as_i32()
    );

    brokers[0].stop_beating();
    eventually(
        "the dead master is dropped without a successor",
        async || {
            let (master, epoch, _) = replica_info(&client).await;
            master.is_none() && epoch == 2
        },
    )
    .await;
    let (code, _) = elect(&client, None).await;
    assert_eq!(code, ResponseCode::CONTROLLER_MASTER_NOT_AVAILABLE.as_i32());

    let update = RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG, ExtFields::new())
        .with_body(b"enableElectUncleanMaster=true".to_vec());
    client.invoke_ok(update).await.expect("config updated");
    let (code, header) = elect(&client, None).await;
    assert_eq!(code, ResponseCode::SUCCESS.as_i32());
    assert_eq!(
        header.master_broker_id,
        Some(3),
        "the alive replica with the highest offset"
    );
    assert_eq!(header.master_epoch, Some(3));
    for broker in &mut brokers {
        broker.stop_beating();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_answers_not_leader_and_the_client_follows() {
    let group = Group::start(3, |_| {}).await;
    let leader = group.leader().await;
    let follower = (leader + 1) % 3;
    let raw = RemotingClient::new(ClientConfig::default());
    let request = RemotingCommand::request(
        RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
        GetNextBrokerIdRequestHeader {
            cluster_name: None,
            broker_name: "b".into(),
        }
        .to_ext_fields(),
    );
    let response = raw
        .invoke(&group.addrs[follower], request, Duration::from_secs(3))
        .await
        .expect("answered");
    assert_eq!(response.code, ResponseCode::CONTROLLER_NOT_LEADER.as_i32());
    assert_eq!(
        response.ext_fields.get(LEADER_ADDRESS_FIELD),
        Some(group.addrs[leader].as_str())
    );
    assert!(
        response.remark_str().contains(&group.addrs[leader]),
        "{}",
        response.remark_str()
    );

    let client = client_of(&group.addrs[follower]);
    assert_eq!(
        client.get_next_broker_id("c", "b").await.expect("followed"),
        1
    );
    assert_eq!(
        client.cached_leader().as_deref(),
        Some(group.addrs[leader].as_str())
    );
    let meta = client
        .metadata_of(&group.addrs[follower])
        .await
        .expect("metadata");
    assert!(!meta.is_leader);
    assert_eq!(meta.group.as_deref(), Some("test-group"));
    assert_eq!(meta.controller_leader_id, Some(format!("n{leader}")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_is_refused_and_the_controller_keeps_serving() {
    let group = Group::start(1, |_| {}).await;
    group.leader().await;
    let addr = &group.addrs[0];
    let raw = RemotingClient::new(ClientConfig::default());
    let send = async |request: RemotingCommand| {
        raw.invoke(addr, request, Duration::from_secs(3))
            .await
            .expect("answered")
    };
    let alter_header = AlterSyncStateSetRequestHeader {
        broker_name: "b".into(),
        master_broker_id: 1,
        master_epoch: 1,
        invoke_time: None,
    };
    let invalid = ResponseCode::CONTROLLER_INVALID_REQUEST.as_i32();
    let garbage = RemotingCommand::request(
        RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
        alter_header.to_ext_fields(),
    )
    .with_body(b"{not json".to_vec());
    let response = send(garbage).await;
    assert_eq!(response.code, invalid);
    assert!(
        response.remark_str().contains("SyncStateSet"),
        "{}",
        response.remark_str()
    );

    let huge = RemotingCommand::request(
        RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
        alter_header.to_ext_fields(),
    )
    .with_body(vec![b'['; 200 * 1024]);
    let response = send(huge).await;
    assert_eq!(response.code, invalid);
    assert!(
        response.remark_str().contains("exceeds"),
        "{}",
        response.remark_str()
    );

    let missing =
        RemotingCommand::request(RequestCode::CONTROLLER_APPLY_BROKER_ID, ExtFields::new());
    let response = send(missing).await;
    assert_eq!(response.code, invalid);
    assert!(
        response.remark_str().contains("brokerName"),
        "{}",
        response.remark_str()
    );

    let bad_name = RemotingCommand::request(
        RequestCode::CONTROLLER_GET_REPLICA_INFO,
        GetReplicaInfoRequestHeader {
            broker_name: "../etc".into(),
        }
        .to_ext_fields(),
    );
    assert_eq!(send(bad_name).await.code, invalid);

    let raft_garbage = RemotingCommand::request(
        RequestCode::STELLMQ_CONTROLLER_RAFT_APPEND,
        ExtFields::new(),
    )
    .with_body(b"\x00\x01garbage".to_vec());
    assert_eq!(send(raft_garbage).await.code, invalid);

    // Every controller code with no header and a junk body: an error with a remark, never
    // a dropped connection or a dead server.
    let codes = [
        RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
        RequestCode::CONTROLLER_ELECT_MASTER,
        RequestCode::CONTROLLER_REGISTER_BROKER,
        RequestCode::CONTROLLER_GET_REPLICA_INFO,
        RequestCode::CONTROLLER_GET_SYNC_STATE_DATA,
        RequestCode::UPDATE_CONTROLLER_CONFIG,
        RequestCode::CLEAN_BROKER_DATA,
        RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
        RequestCode::CONTROLLER_APPLY_BROKER_ID,
        RequestCode::BROKER_HEARTBEAT,
        RequestCode::STELLMQ_CONTROLLER_RAFT_VOTE,
        RequestCode::STELLMQ_CONTROLLER_RAFT_SNAPSHOT,
    ];
    for code in codes {
        let junk = RemotingCommand::request(code, ExtFields::new()).with_body(vec![0xFF; 300]);
        let response = send(junk).await;
        assert_ne!(response.code, ResponseCode::SUCCESS.as_i32(), "{code}");
        assert!(!response.remark_str().is_empty(), "{code} explains");
    }

    let client = group.client();
    assert_eq!(
        client
            .get_next_broker_id("c", "b")
            .await
            .expect("still serving"),
        1
    );
    let unknown = client
        .get_replica_info("nobody")
        .await
        .expect_err("no such set");
    assert_eq!(
        unknown.remote_code(),
        Some(ResponseCode::CONTROLLER_BROKER_METADATA_NOT_EXIST.as_i32())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_and_log_survive_a_restart() {
    let mut group = Group::start(1, |c| c.snapshot_every_entries = 3).await;
    group.leader().await;
    let client = group.client();
    let mut brokers = three_brokers(&client, &group.addr_list()).await;
    assert_eq!(
        elect(&client, Some(1)).await.0,
        ResponseCode::SUCCESS.as_i32()
    );
    assert_eq!(alter(&client, 1, 1, 1, &[1, 3]).await, Ok(2));
    let snapshot = group.configs[0]
        .controller_store_path
        .join("raft")
        .join("snapshot.json");
    eventually("a snapshot is written", async || snapshot.exists()).await;
    for broker in &mut brokers {
        broker.stop_beating();
    }

    group.stop(0).await;
    group.restart(0).await;
    group.leader().await;
    let client = group.client();
    let (master, set) = eventually_some("the state is back", WAIT, async || {
        client.get_replica_info("b").await.ok()
    })
    .await;
    assert_eq!(
        (master.master_broker_id, master.master_epoch),
        (Some(1), Some(1))
    );
    assert_eq!(set.sync_state_set, [1, 3].into_iter().collect());
    assert_eq!(client.get_next_broker_id("c", "b").await.expect("next"), 4);
    let sync_data = client
        .get_sync_state_data(&["b".to_owned()])
        .await
        .expect("sync data");
    let info = sync_data.replicas_info_table.get("b").expect("set b");
    assert_eq!(info.in_sync_replicas.len(), 2);
    assert_eq!(info.not_in_sync_replicas.len(), 1);
}

/// Runs mqadmin (no name server); returns (success, stdout, stderr).
async fn mqadmin(args: &[&str]) -> (bool, String, String) {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let out = tokio::task::spawn_blocking(move || {
        command("mqadmin")
            .args(&args)
            .env_remove("NAMESRV_ADDR")
            .output()
    })
    .await
    .expect("join")
    .expect("mqadmin runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn mqadmin_ok(args: &[&str]) -> String {
    let (ok, out, err) = mqadmin(args).await;
    assert!(ok, "mqadmin {args:?} failed: {err}\n{out}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_controller_commands() {
    let group = Group::start(1, |_| {}).await;
    group.leader().await;
    let addrs = group.addr_list();
    let client = group.client();
    let mut brokers = three_brokers(&client, &addrs).await;
    assert_eq!(
        elect(&client, Some(1)).await.0,
        ResponseCode::SUCCESS.as_i32()
    );
    assert_eq!(alter(&client, 1, 1, 1, &[1, 2]).await, Ok(2));

    let out = mqadmin_ok(&["getControllerMetaData", "-a", &addrs]).await;
    assert!(out.contains("#ControllerGroup\ttest-group"), "{out}");
    assert!(
        out.contains(&format!("#ControllerLeaderAddress\t{}", group.addrs[0])),
        "{out}"
    );
    assert!(
        out.contains(&format!("#Peer:\tn0-{}", group.addrs[0])),
        "{out}"
    );

    let out = mqadmin_ok(&["getSyncStateSet", "-a", &addrs, "-b", "b"]).await;
    assert!(out.contains("#brokerName\tb"), "{out}");
    assert!(out.contains("#MasterBrokerId\t1"), "{out}");
    assert!(out.contains("#SyncStateSetNums\t2"), "{out}");
    assert_eq!(out.matches("NotInSyncReplica:").count(), 1, "{out}");

    let out = mqadmin_ok(&[
        "electMaster",
        "-a",
        &addrs,
        "-c",
        "c",
        "-bn",
        "b",
        "-b",
        "2",
    ])
    .await;
    assert!(out.contains("#MasterEpoch\t2"), "{out}");
    assert!(
        out.contains(&format!("#BrokerMasterAddr\t{}", brokers[1].addr)),
        "{out}"
    );
    assert_eq!(replica_info(&client).await.0, Some(2));
    let (ok, _, err) = mqadmin(&[
        "electMaster",
        "-a",
        &addrs,
        "-c",
        "c",
        "-bn",
        "b",
        "-b",
        "3",
    ])
    .await;
    assert!(
        !ok && err.contains("elect master failed"),
        "broker 3 is not in sync: {err}"
    );

    mqadmin_ok(&[
        "updateControllerConfig",
        "-a",
        &addrs,
        "-k",
        "enableElectUncleanMaster",
        "-v",
        "true",
    ])
    .await;
    let out = mqadmin_ok(&["getControllerConfig", "-a", &addrs]).await;
    let line = out
        .lines()
        .find(|l| l.starts_with("enableElectUncleanMaster"))
        .unwrap_or_default();
    assert!(line.ends_with("=  true"), "{out}");

    brokers[2].stop_beating();
    eventually("broker 3 is no longer heard from", async || {
        let data = client
            .get_sync_state_data(&["b".to_owned()])
            .await
            .expect("data");
        data.replicas_info_table["b"]
            .not_in_sync_replicas
            .iter()
            .any(|r| r.broker_id == 3 && !r.alive)
    })
    .await;
    let out = mqadmin_ok(&["cleanBrokerMetadata", "-a", &addrs, "-bn", "b", "-b", "3"]).await;
    assert!(
        out.contains("clear broker b metadata from controller success!"),
        "{out}"
    );
    let data = client
        .get_sync_state_data(&["b".to_owned()])
        .await
        .expect("data");
    let info = &data.replicas_info_table["b"];
    let mut all = info
        .in_sync_replicas
        .iter()
        .chain(&info.not_in_sync_replicas);
    assert!(all.all(|r| r.broker_id != 3), "{info:?}");
    for broker in &mut brokers {
        broker.stop_beating();
    }
}

#[test]
fn controller_samples_form_one_group_that_brokers_point_at() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../conf/controller");
    let mut addrs = Vec::new();
    for i in 0..3 {
        let props =
            stellmq_config::read_properties_file(&dir.join(format!("controller-n{i}.conf")))
                .expect("sample reads");
        let mut config = ControllerConfig::default();
        for (key, value) in &props {
            assert!(
                config.set(key, value).expect("valid value"),
                "unknown key {key}"
            );
        }
        config.validate().expect("valid group");
        let me = config.self_peer().expect("self");
        assert_eq!(me.name, format!("n{i}"));
        assert!(!config.store_dir().starts_with("~"), "~ is expanded");
        addrs.push(me.addr);
    }
    for i in 0..3 {
        let props = stellmq_config::read_properties_file(&dir.join(format!("broker-n{i}.conf")))
            .expect("sample reads");
        assert_eq!(
            props.get("enableControllerMode").map(String::as_str),
            Some("true")
        );
        assert_eq!(props.get("controllerAddr"), Some(&addrs.join(";")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_behind_the_purged_log_catches_up_by_snapshot() {
    let mut group = Group::start(3, |c| c.snapshot_every_entries = 2).await;
    let leader = group.leader().await;
    let behind = (leader + 1) % 3;
    group.stop(behind).await;
    let client = group.client();
    for i in 1..=6 {
        let id = client.get_next_broker_id("c", "b").await.expect("next id");
        assert_eq!(id, i);
        client
            .apply_broker_id(&ApplyBrokerIdRequestHeader {
                cluster_name: Some("c".into()),
                broker_name: "b".into(),
                applied_broker_id: id,
                register_check_code: format!("127.0.0.1:{};x", 20000 + id),
            })
            .await
            .expect("applied");
    }
    let leader_node = group.nodes[leader]
        .as_ref()
        .expect("leader runs")
        .node()
        .clone();
    eventually("the leader purged its log into a snapshot", async || {
        leader_node.raft.metrics().borrow().purged.is_some()
    })
    .await;
    group.restart(behind).await;
    let restarted = group.nodes[behind]
        .as_ref()
        .expect("running")
        .node()
        .clone();
    eventually("the lagging controller installs the snapshot", async || {
        restarted.with_state(|s| s.next_broker_id("b")) == 7
    })
    .await;
    assert!(restarted.raft.metrics().borrow().snapshot.is_some());
}

fn epoch_cache(_: &(), _ctx: RequestContext, request: RemotingCommand) -> ProcessResult {
    let cache = stellmq_remoting::protocol::body::EpochEntryCache {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        broker_id: 1,
        epoch_list: vec![
            stellmq_remoting::protocol::body::EpochEntry {
                epoch: 1,
                start_offset: 0,
                end_offset: 100,
            },
            stellmq_remoting::protocol::body::EpochEntry {
                epoch: 2,
                start_offset: 100,
                end_offset: i64::MAX,
            },
        ],
        max_offset: 250,
    };
    let body = stellmq_remoting::protocol::body::fastjson::encode(&cache);
    Ok(Some(request.success_to().with_body(body)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_get_broker_epoch_reads_a_brokers_epoch_cache() {
    let ns = stellmq_testkit::NameServer::start().await;
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: "127.0.0.1:0".parse().expect("addr"),
        ..ServerConfig::default()
    });
    server.register(
        &[RequestCode::GET_BROKER_EPOCH_CACHE],
        answer(&Arc::new(()), epoch_cache),
        Lane::new("epoch", 1, 16),
    );
    let broker = server.start().await.expect("fake broker listens");
    let addr = broker.local_addr().to_string();
    let registered = stellmq_testkit::RawClient::new(ns.addr())
        .call(
            stellmq_testkit::Registration::new("c", "b", &addr)
                .id(1)
                .request(),
        )
        .await;
    assert_eq!(registered.code, 0, "{:?}", registered.remark);

    for args in [["-b", "b"], ["-c", "c"]] {
        let out = mqadmin_ok(&["getBrokerEpoch", args[0], args[1], "-n", ns.addr()]).await;
        assert!(out.contains(&format!("#brokerAddr\t{addr}")), "{out}");
        assert!(out.contains("#brokerId\t1"), "{out}");
        assert!(
            out.contains("#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=100}"),
            "{out}"
        );
        assert!(
            out.contains("#Epoch: EpochEntry{epoch=2, startOffset=100, endOffset=250}"),
            "{out}"
        );
    }
    broker.shutdown().await;
    ns.shutdown().await;
}

/// With `controllerRaftAuthSecret`, the group elects a leader and keeps working, while Raft
/// RPCs without the secret (unsigned, or signed with another one) are refused with
/// NO_PERMISSION; the secret is never shown by GET_CONTROLLER_CONFIG.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raft_rpcs_without_the_shared_secret_are_refused() {
    let group = Group::start(3, |c| c.controller_raft_auth_secret = "raft-s3cret".into()).await;
    let leader = group.leader().await;
    let remoting = RemotingClient::new(ClientConfig::default());
    // A vote request for a term far ahead: answered, it would depose the leader.
    let vote =
        br#"{"vote":{"leader_id":{"term":1000,"node_id":2},"committed":false},"last_log_id":null}"#;
    let send_vote = async |fields: ExtFields| {
        let request = RemotingCommand::request(RequestCode::STELLMQ_CONTROLLER_RAFT_VOTE, fields)
            .with_body(vote.to_vec());
        let r = remoting
            .invoke(&group.addrs[leader], request, Duration::from_secs(3))
            .await
            .expect("an answer");
        assert_eq!(
            r.code,
            ResponseCode::NO_PERMISSION.as_i32(),
            "{}",
            r.remark_str()
        );
        r.remark_str().to_owned()
    };
    let remark = send_vote(ExtFields::new()).await;
    assert!(remark.contains("not signed"), "{remark}");
    let forged_fields = stellmq_controller::peer_auth::PeerAuth::new("guess").sign(
        RequestCode::STELLMQ_CONTROLLER_RAFT_VOTE,
        2,
        stellmq_controller::peer_auth::now_ms(),
        vote,
    );
    send_vote(forged_fields).await;
    assert_eq!(group.leader().await, leader, "the leader is untouched");

    // The group still replicates writes: a broker id is applied through Raft.
    let client = group.client();
    let next = client.get_next_broker_id("c", "b").await.expect("next id");
    client
        .apply_broker_id(&ApplyBrokerIdRequestHeader {
            cluster_name: Some("c".into()),
            broker_name: "b".into(),
            applied_broker_id: next,
            register_check_code: format!("127.0.0.1:1;{next}"),
        })
        .await
        .expect("an id applied through the authenticated group");
    let config = RemotingCommand::request(RequestCode::GET_CONTROLLER_CONFIG, ExtFields::new());
    let r = remoting
        .invoke(&group.addrs[leader], config, Duration::from_secs(3))
        .await
        .expect("config");
    let text = String::from_utf8_lossy(&r.body);
    assert!(
        !text.contains("raft-s3cret")
            && !text
                .lines()
                .any(|l| l.starts_with("controllerRaftAuthSecret=")),
        "{text}"
    );
    remoting.shutdown().await;
}
