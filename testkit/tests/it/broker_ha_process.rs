//! A master/slave group from the shipped `conf/2m-2s-sync` files, as `mqbroker` processes:
//! every acknowledged message is on the slave, consumers read it there after the master is
//! killed, and a restarted master serves again with its slave.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_client::{
    AdminClient, ConsumeResult, ConsumerConfig, Message, Producer, ProducerConfig, PushConsumer,
};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::{ConsumeFromWhere, TopicConfig};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::process::spawn_mqbroker;
use stellmq_testkit::{
    eventually_some, eventually_within, request, send_request, wait_for, NameServer, Process, Pull,
    TIMEOUT as T,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Starts `mqbroker` with a shipped conf file plus loopback/ephemeral overrides; returns the
/// process and its address from the boot line.
async fn spawn_broker(conf: &str, store: &Path, ns_addr: &str) -> (Process, String) {
    spawn_broker_with(conf, store, ns_addr, "").await
}

/// `spawn_broker` with extra `key=value` lines.
async fn spawn_broker_with(
    conf: &str,
    store: &Path,
    ns_addr: &str,
    extra: &str,
) -> (Process, String) {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conf")
        .join(conf);
    let mut text = std::fs::read_to_string(&shipped).expect("shipped conf");
    // A cluster name of this test's own: brokers of other tests (or other runs on this
    // machine) with the shipped names can never join this group.
    let cluster: String = store
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect()
        })
        .unwrap_or_default();
    text.push_str(&format!(
        "\nlistenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\nmappedFileSizeCommitLog=8388608\nmaxMessageSize=1048576\nbrokerClusterName=Ha{cluster}\n",
        store.display()
    ));
    text.push_str(extra);
    let file = store.with_extension("properties");
    std::fs::write(&file, text).expect("write conf");
    spawn_mqbroker(&file, ns_addr).await
}

/// Sends until the master acknowledges (a SYNC_MASTER answers SLAVE_NOT_AVAILABLE until its
/// slave is connected).
async fn send_acknowledged(client: &RemotingClient, master: &str, body: &str) {
    eventually_within(
        &format!("{master} acknowledges {body}"),
        Duration::from_secs(40),
        async || {
            let r = client
                .invoke(master, send_request("HaProc", 0, body.as_bytes(), &[]), T)
                .await
                .expect("master answers");
            r.code == 0
        },
    )
    .await;
}

/// Every message of queue 0 the broker at `addr` serves.
async fn pull_all(client: &RemotingClient, addr: &str) -> Option<Vec<String>> {
    pull_topic(client, addr, "HaProc").await
}

/// Every message of queue 0 of `topic` the broker at `addr` serves (`None`: an error, or
/// nothing there).
async fn pull_topic(client: &RemotingClient, addr: &str, topic: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let pull = Pull::new("ha-proc", topic, 0, offset)
            .subscribe("*")
            .suspend(0);
        let r = client.invoke(addr, pull.to_request(), T).await.ok()?;
        match r.code {
            0 => {
                for record in MessageRecord::decode_all(r.body.clone(), true).ok()? {
                    out.push(String::from_utf8_lossy(&record.body).into_owned());
                }
                offset = r.ext_fields.get("nextBeginOffset")?.parse().ok()?;
            }
            19 if !out.is_empty() => return Some(out), // PULL_NOT_FOUND: the end
            _ => return None,
        }
    }
}

/// How long a broker may take to stop on SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// These tests kill and restart brokers on ephemeral ports; run one group at a time so a
/// restarted broker's port never belongs to another test's group.
async fn one_group_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static GROUPS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    GROUPS.lock().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_group_survives_the_loss_of_its_master() {
    let _alone = one_group_at_a_time().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let master_store = dir.path().join("master");
    // The slave starts first: it must keep asking the name server until the master appears.
    let (mut slave, slave_addr) = spawn_broker(
        "2m-2s-sync/broker-a-s.properties",
        &dir.path().join("slave"),
        &ns_addr,
    )
    .await;
    let (mut master, master_addr) =
        spawn_broker("2m-2s-sync/broker-a.properties", &master_store, &ns_addr).await;
    let client = RemotingClient::new(ClientConfig::default());

    let mut acknowledged = Vec::new();
    for i in 0..200 {
        let body = format!("before-{i}");
        send_acknowledged(&client, &master_addr, &body).await;
        acknowledged.push(body);
    }
    // The slave serves the topic once it has copied the master's topics (3 s after start).
    eventually_within(
        "the slave serves the topic",
        Duration::from_secs(30),
        async || pull_all(&client, &slave_addr).await.is_some(),
    )
    .await;

    master.kill();
    // With no master in the route the slave stops dialling the dead master's HA address.
    let admin = AdminClient::new(&ns_addr).expect("admin");
    eventually_within(
        "the slave forgets the dead master",
        Duration::from_secs(30),
        async || {
            admin
                .broker_runtime_info(&slave_addr)
                .await
                .is_ok_and(|info| info.get("haMasterAddr").is_some_and(String::is_empty))
        },
    )
    .await;
    let on_slave = pull_all(&client, &slave_addr).await.expect("slave serves");
    for body in &acknowledged {
        assert!(
            on_slave.contains(body),
            "acknowledged {body} missing on the slave"
        );
    }

    let (mut master, master_addr) =
        spawn_broker("2m-2s-sync/broker-a.properties", &master_store, &ns_addr).await;
    send_acknowledged(&client, &master_addr, "after-restart").await;
    let on_master = pull_all(&client, &master_addr)
        .await
        .expect("master serves");
    assert!(acknowledged.iter().all(|b| on_master.contains(b)));
    assert!(on_master.contains(&"after-restart".to_owned()));

    master.terminate(STOP_TIMEOUT);
    slave.terminate(STOP_TIMEOUT);
    ns.shutdown().await;
}

/// Issue #36: a topic created on a SYNC_MASTER just before it dies is known to its slave,
/// which serves every acknowledged message of it at once and after a restart. (The slave
/// copies its master's tables only every 10 s; the topic's record now travels in the
/// CommitLog ahead of its messages.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_created_just_before_the_master_dies_is_served_by_its_slave() {
    let _alone = one_group_at_a_time().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let slave_store = dir.path().join("slave");
    let (mut slave, slave_addr) =
        spawn_broker("2m-2s-sync/broker-a-s.properties", &slave_store, &ns_addr).await;
    let (mut master, master_addr) = spawn_broker(
        "2m-2s-sync/broker-a.properties",
        &dir.path().join("master"),
        &ns_addr,
    )
    .await;
    let client = RemotingClient::new(ClientConfig::default());
    send_acknowledged(&client, &master_addr, "the slave follows").await;

    let create = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", "Fresh"),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "4"),
            ("writeQueueNums", "4"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
            ("attributes", "+message.type=NORMAL"),
        ],
    );
    let created = client
        .invoke(&master_addr, create, T)
        .await
        .expect("answer");
    assert_eq!(created.code, 0, "{}", created.remark_str());
    let mut acknowledged = Vec::new();
    for i in 0..200 {
        let body = format!("fresh-{i}");
        let sent = client
            .invoke(
                &master_addr,
                send_request("Fresh", 0, body.as_bytes(), &[]),
                T,
            )
            .await
            .expect("answer");
        assert_eq!(
            sent.code,
            0,
            "SEND_OK from the SYNC_MASTER: {}",
            sent.remark_str()
        );
        acknowledged.push(body);
    }
    master.kill();

    let served = eventually_some(
        "the slave serves the fresh topic",
        Duration::from_secs(20),
        async || {
            pull_topic(&client, &slave_addr, "Fresh")
                .await
                .filter(|m| m.len() >= 200)
        },
    )
    .await;
    assert_eq!(served, acknowledged, "every acknowledged message, in order");

    slave.terminate(STOP_TIMEOUT);
    let (mut slave, slave_addr) =
        spawn_broker("2m-2s-sync/broker-a-s.properties", &slave_store, &ns_addr).await;
    let served = pull_topic(&client, &slave_addr, "Fresh").await;
    assert_eq!(served, Some(acknowledged), "and after a restart");
    slave.terminate(STOP_TIMEOUT);
    ns.shutdown().await;
}

/// Issue #36: a slave whose master was just killed stops on SIGTERM within a few seconds
/// (it no longer waits out calls to the dead master or a name server), and says what each
/// step waits for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_whose_master_is_gone_stops_within_seconds() {
    let _alone = one_group_at_a_time().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let (mut slave, _) = spawn_broker(
        "2m-2s-sync/broker-a-s.properties",
        &dir.path().join("slave"),
        &ns_addr,
    )
    .await;
    let (mut master, master_addr) = spawn_broker(
        "2m-2s-sync/broker-a.properties",
        &dir.path().join("master"),
        &ns_addr,
    )
    .await;
    let client = RemotingClient::new(ClientConfig::default());
    send_acknowledged(&client, &master_addr, "the slave follows").await;
    master.kill();
    let started = Instant::now();
    let exit = slave.terminate(STOP_TIMEOUT);
    let took = started.elapsed();
    assert!(exit.success(), "clean exit: {exit}");
    assert!(took < Duration::from_secs(5), "stopped in {took:?}");
    let output = slave.output();
    assert!(
        output
            .iter()
            .any(|l| l.contains("stopping: flushing") || l.contains("stopping: persisting")),
        "each step is logged:\n{}",
        output.join("\n")
    );
    ns.shutdown().await;
}

type Bodies = Arc<Mutex<BTreeSet<String>>>;

/// Sends numbered messages until `stop`, recording the acknowledged ones; failures (the
/// master is down) are retried with the next number after a short pause.
fn keep_sending(producer: Arc<Producer>, acked: Bodies, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut i = 0u64;
        while !stop.is_cancelled() {
            let body = format!("load-{i}");
            i += 1;
            match producer.send(Message::new("HaLoad", body.clone())).await {
                Ok(_) => {
                    acked.lock().insert(body);
                }
                // Paces the retries while the master is down (there is nothing to wait for:
                // the producer finds the restarted master by itself).
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
}

fn missing(acked: &Bodies, seen: &Bodies) -> Vec<String> {
    let seen = seen.lock();
    acked
        .lock()
        .iter()
        .filter(|b| !seen.contains(*b))
        .cloned()
        .collect()
}

/// A push consumer keeps consuming from the slave when the master is killed in the middle of
/// a send load, misses no acknowledged message, and goes on once the master is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_fail_over_to_the_slave_under_load() {
    let _alone = one_group_at_a_time().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let master_store = dir.path().join("master");
    let (mut master, master_addr) =
        spawn_broker("2m-2s-sync/broker-a.properties", &master_store, &ns_addr).await;
    let (mut slave, slave_addr) = spawn_broker(
        "2m-2s-sync/broker-a-s.properties",
        &dir.path().join("slave"),
        &ns_addr,
    )
    .await;
    let admin = AdminClient::new(&ns_addr).expect("admin");
    admin
        .create_topic(&master_addr, &TopicConfig::with_queues("HaLoad", 4, 4, 6))
        .await
        .expect("topic");
    // The slave must know the topic before it can serve it (copied every 10 s).
    eventually_within(
        "the slave copies the topic",
        Duration::from_secs(30),
        async || {
            admin
                .all_topic_config(&slave_addr)
                .await
                .is_ok_and(|t| t.topic_config_table.contains_key("HaLoad"))
        },
    )
    .await;

    let producer = Arc::new(
        Producer::start(ProducerConfig {
            namesrv_addr: ns_addr.clone(),
            group: "ha-load-producer".into(),
            ..Default::default()
        })
        .await
        .expect("producer"),
    );
    let seen: Bodies = Arc::default();
    let recorder = seen.clone();
    // Closed, the listener holds its messages, so the consumer falls behind the producer.
    let gate = Arc::new(AtomicBool::new(true));
    let open = gate.clone();
    let consumer = PushConsumer::start_concurrently(
        ConsumerConfig {
            namesrv_addr: ns_addr.clone(),
            group: "ha-load".into(),
            instance_name: "ha-load".into(),
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            consume_thread_count: 4,
            // Little pulled ahead, so most of the backlog must come from the slave.
            pull_batch_size: 8,
            pull_threshold_for_queue: 8,
            ..Default::default()
        },
        &[("HaLoad", "*")],
        move |msgs| {
            // The listener holds its thread while the gate is closed (a listener is
            // synchronous, so it waits on the gate by polling it).
            while !open.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let mut seen = recorder.lock();
            for m in msgs {
                seen.insert(String::from_utf8_lossy(&m.body).into_owned());
            }
            ConsumeResult::Success
        },
    )
    .await
    .expect("consumer");
    let acked: Bodies = Arc::default();
    let stop = CancellationToken::new();
    let sender = keep_sending(producer.clone(), acked.clone(), stop.clone());

    wait_for("load under way", Duration::from_secs(30), || {
        acked.lock().len() >= 300 && seen.lock().len() >= 100
    })
    .await;
    gate.store(false, Ordering::Release);
    let consumed_before_kill = seen.lock().len();
    wait_for("a backlog", Duration::from_secs(30), || {
        acked.lock().len() >= consumed_before_kill + 400
    })
    .await;
    master.kill();
    gate.store(true, Ordering::Release);
    let acked_by_dead_master = acked.lock().len();
    wait_for(
        "every acknowledged message consumed from the slave",
        Duration::from_secs(60),
        || missing(&acked, &seen).is_empty(),
    )
    .await;

    let (mut master, _) =
        spawn_broker("2m-2s-sync/broker-a.properties", &master_store, &ns_addr).await;
    wait_for(
        "sends acknowledged by the restarted master",
        Duration::from_secs(60),
        || acked.lock().len() >= acked_by_dead_master + 300,
    )
    .await;
    stop.cancel();
    sender.await.expect("sender");
    wait_for(
        "every acknowledged message consumed",
        Duration::from_secs(60),
        || missing(&acked, &seen).is_empty(),
    )
    .await;

    consumer.shutdown().await;
    producer.shutdown().await;
    master.terminate(STOP_TIMEOUT);
    slave.terminate(STOP_TIMEOUT);
    ns.shutdown().await;
}

async fn runtime_value(admin: &AdminClient, broker: &str, key: &str) -> i64 {
    admin
        .broker_runtime_info(broker)
        .await
        .expect("runtime info")
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} missing"))
}

/// ASYNC_MASTER keeps acknowledging while its slave is paused (SIGSTOP); resumed, the slave
/// catches up to the master's exact offset and serves every message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_slave_catches_up_after_a_pause() {
    let _alone = one_group_at_a_time().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let (mut master, master_addr) = spawn_broker(
        "2m-2s-async/broker-a.properties",
        &dir.path().join("master"),
        &ns_addr,
    )
    .await;
    let (mut slave, slave_addr) = spawn_broker(
        "2m-2s-async/broker-a-s.properties",
        &dir.path().join("slave"),
        &ns_addr,
    )
    .await;
    let admin = AdminClient::new(&ns_addr).expect("admin");
    let client = RemotingClient::new(ClientConfig::default());
    send_acknowledged(&client, &master_addr, "before-pause").await;
    eventually_within("slave connected", Duration::from_secs(30), async || {
        runtime_value(&admin, &master_addr, "haSlaveCount").await == 1
    })
    .await;

    slave.signal("-STOP");
    let mut acknowledged = vec!["before-pause".to_owned()];
    for i in 0..1000 {
        let body = format!("paused-{i}-{}", "p".repeat(512));
        let r = client
            .invoke(
                &master_addr,
                send_request("HaProc", 0, body.as_bytes(), &[]),
                T,
            )
            .await
            .expect("master answers");
        assert_eq!(
            r.code,
            0,
            "ASYNC_MASTER acknowledges alone: {}",
            r.remark_str()
        );
        acknowledged.push(body);
    }
    let behind = runtime_value(&admin, &master_addr, "haSlaveFallBehindBytes").await;
    assert!(
        behind > 500_000,
        "the paused slave is behind: {behind} bytes"
    );

    slave.signal("-CONT");
    let master_max = runtime_value(&admin, &master_addr, "commitLogMaxOffset").await;
    eventually_within("slave caught up", Duration::from_secs(30), async || {
        runtime_value(&admin, &slave_addr, "commitLogMaxOffset").await == master_max
    })
    .await;
    assert_eq!(
        runtime_value(&admin, &master_addr, "haSlaveFallBehindBytes").await,
        0
    );
    let on_slave = pull_count(&client, &slave_addr, acknowledged.len()).await;
    assert_eq!(on_slave, acknowledged, "in order, no gap, no duplicate");

    master.terminate(STOP_TIMEOUT);
    slave.terminate(STOP_TIMEOUT);
    ns.shutdown().await;
}

/// A SYNC_MASTER whose slave stops confirming answers FLUSH_SLAVE_TIMEOUT after
/// syncFlushTimeout; the message stays stored and reaches the slave once it resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_master_answers_flush_slave_timeout_while_its_slave_is_paused() {
    let _alone = one_group_at_a_time().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let (mut master, master_addr) = spawn_broker_with(
        "2m-2s-sync/broker-a.properties",
        &dir.path().join("master"),
        &ns_addr,
        "syncFlushTimeout=1000\n",
    )
    .await;
    let (mut slave, slave_addr) = spawn_broker(
        "2m-2s-sync/broker-a-s.properties",
        &dir.path().join("slave"),
        &ns_addr,
    )
    .await;
    let client = RemotingClient::new(ClientConfig::default());
    // Until the slave is connected a SYNC_MASTER answers SLAVE_NOT_AVAILABLE but keeps the
    // message, so wait for it first: every message below is then stored exactly once.
    let admin = AdminClient::new(&ns_addr).expect("admin");
    eventually_within("slave connected", Duration::from_secs(30), async || {
        runtime_value(&admin, &master_addr, "haSlaveCount").await == 1
    })
    .await;
    let r = client
        .invoke(
            &master_addr,
            send_request("HaProc", 0, b"confirmed", &[]),
            T,
        )
        .await
        .expect("master answers");
    assert_eq!(r.code, 0, "{}", r.remark_str());

    slave.signal("-STOP");
    slave.wait_until_stopped();
    let started = Instant::now();
    let r = client
        .invoke(
            &master_addr,
            send_request("HaProc", 0, b"unconfirmed", &[]),
            T,
        )
        .await
        .expect("master answers");
    assert_eq!(
        r.code,
        12,
        "FLUSH_SLAVE_TIMEOUT: {} {}",
        r.code,
        r.remark_str()
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited syncFlushTimeout for the slave"
    );
    assert!(
        r.ext_fields.get("msgId").is_some(),
        "the message was stored"
    );

    slave.signal("-CONT");
    eventually_within("slave caught up", Duration::from_secs(30), async || {
        runtime_value(&admin, &master_addr, "haSlaveFallBehindBytes").await == 0
    })
    .await;
    let r = client
        .invoke(
            &master_addr,
            send_request("HaProc", 0, b"after-resume", &[]),
            T,
        )
        .await
        .expect("master answers");
    assert_eq!(r.code, 0, "{}", r.remark_str());
    assert_eq!(
        pull_count(&client, &slave_addr, 3).await,
        ["confirmed", "unconfirmed", "after-resume"]
    );

    master.terminate(STOP_TIMEOUT);
    slave.terminate(STOP_TIMEOUT);
    ns.shutdown().await;
}

/// Queue 0 of `addr` once it holds at least `n` messages.
async fn pull_count(client: &RemotingClient, addr: &str, n: usize) -> Vec<String> {
    let mut bodies = Vec::new();
    eventually_within(
        &format!("{n} messages on {addr}"),
        Duration::from_secs(30),
        async || {
            bodies = pull_all(client, addr).await.unwrap_or_default();
            bodies.len() >= n
        },
    )
    .await;
    bodies
}
