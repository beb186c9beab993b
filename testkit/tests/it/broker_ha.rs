//! Master/slave CommitLog replication over the HA port: between two stores, and between a
//! master and a slave broker that finds its master through the name server.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use stellmq_broker::ha::protocol::{ACCEPTED, FRAME_HEADER_LEN};
use stellmq_broker::ha::{HaGroup, HaMaster, HaSlave};
use stellmq_remoting::protocol::message::{MessageRecord, Properties};
use stellmq_store::{AcceptAll, GetMessageStatus, MessageStore, MessageStoreConfig, PutMessage};
use stellmq_testkit::{
    eventually_some, eventually_within, request, send_request, wait_for, RawClient, Role, Side,
    Stack, TcpTap, TIMEOUT as T,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const SEGMENT: usize = 64 * 1024;

fn config(root: &Path) -> MessageStoreConfig {
    MessageStoreConfig {
        store_path_root_dir: root.to_owned(),
        mapped_file_size_commit_log: SEGMENT,
        mapped_file_size_consume_queue: 20 * 50,
        max_message_size: 16 * 1024,
        max_hash_slot_num: 64,
        max_index_num: 400,
        disk_space_warning_level_ratio: 100,
        disk_max_used_space_ratio: 100,
        disk_space_clean_forcibly_ratio: 100,
        delete_when: "99".into(),
        ..Default::default()
    }
}

fn group() -> HaGroup {
    HaGroup::new("DefaultCluster", "broker-a")
}

fn message(queue_id: i32, i: usize) -> PutMessage {
    let mut props = Properties::new();
    props.insert("KEYS", format!("key-{i}"));
    // Varying sizes so records split across frames and segments roll at odd places.
    let body = format!("{i}:{}", "x".repeat(300 + (i * 37) % 900));
    PutMessage {
        topic: "HaTopic".to_owned(),
        queue_id,
        flag: 0,
        body: Bytes::from(body),
        properties: props.encode(),
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:40000".parse().expect("addr"),
        store_host: "127.0.0.1:10911".parse().expect("addr"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        wait_store_ok: true,
    }
}

async fn put(store: &MessageStore, range: std::ops::Range<usize>) {
    for i in range {
        let r = store.put_message(message((i % 4) as i32, i)).await;
        assert!(r.status.is_stored(), "put {i}: {:?}", r.status);
    }
}

async fn caught_up(master: &MessageStore, slave: &MessageStore) {
    assert!(
        master.wait_dispatched(Duration::from_secs(10)),
        "master dispatched"
    );
    let target = master.commit_log_max_offset();
    wait_for(
        &format!("the slave reaching the master's end, {target}"),
        T,
        || {
            slave.commit_log_max_offset() == target
                && slave.wait_dispatched(Duration::from_millis(10))
        },
    )
    .await;
}

/// Every byte of the slave's log equals the master's.
fn assert_same_log(master: &MessageStore, slave: &MessageStore) {
    assert_eq!(
        master.commit_log_max_offset(),
        slave.commit_log_max_offset()
    );
    let mut offset = slave.commit_log_min_offset();
    while offset < master.commit_log_max_offset() {
        let a = master
            .replication_chunk(offset, 4096)
            .expect("master bytes");
        let b = slave.replication_chunk(offset, 4096).expect("slave bytes");
        assert_eq!(a, b, "logs differ at {offset}");
        offset += a.len() as i64;
    }
}

fn bodies_on(store: &MessageStore) -> Vec<String> {
    let mut out = Vec::new();
    for queue in 0..4 {
        let mut offset = 0;
        loop {
            let r = store.get_messages("HaTopic", queue, offset, 32, &AcceptAll);
            if r.status != GetMessageStatus::Found {
                break;
            }
            for m in &r.messages {
                let (record, _) = MessageRecord::decode(m, true).expect("record");
                out.push(String::from_utf8_lossy(&record.body).into_owned());
            }
            offset = r.next_begin_offset;
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slave_replicates_exact_bytes_and_resumes_after_a_restart() {
    let dirs = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let master = Arc::new(MessageStore::open(config(dirs.0.path())).expect("master store"));
    let stop = CancellationToken::new();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let ha_addr = listener.local_addr().expect("addr").to_string();
    let ha = HaMaster::start(master.clone(), listener, group(), stop.clone());

    let slave_stop = CancellationToken::new();
    let slave = Arc::new(MessageStore::open(config(dirs.1.path())).expect("slave store"));
    let follower = HaSlave::start(
        slave.clone(),
        group(),
        1,
        Duration::from_millis(200),
        slave_stop.clone(),
    );
    follower.set_master(&ha_addr);
    // Connected while the master is empty, the slave copies from offset 0 (a slave that
    // arrives later starts at the master's last segment).
    wait_for("the slave connects", T, || !ha.slaves().is_empty()).await;
    assert_eq!(ha.slaves().len(), 1, "the slave connected");
    put(&master, 0..150).await;
    caught_up(&master, &slave).await;
    assert!(
        master.commit_log_max_offset() > SEGMENT as i64,
        "crosses a segment boundary: {}",
        master.commit_log_max_offset()
    );

    // Live appends stream through, and SYNC_MASTER's wait sees the acknowledgement.
    put(&master, 150..200).await;
    ha.wake();
    assert!(
        ha.wait_for_slave(master.commit_log_max_offset(), Duration::from_secs(5))
            .await,
        "slave acknowledged the new end"
    );
    assert_eq!(ha.slaves().len(), 1);
    caught_up(&master, &slave).await;
    assert_same_log(&master, &slave);
    assert_eq!(
        (0..4)
            .map(|q| slave.max_offset_in_queue("HaTopic", q))
            .collect::<Vec<_>>(),
        (0..4)
            .map(|q| master.max_offset_in_queue("HaTopic", q))
            .collect::<Vec<_>>(),
        "ConsumeQueues dispatched on the slave"
    );
    assert_eq!(bodies_on(&slave).len(), 200);
    assert!(bodies_on(&slave) == bodies_on(&master), "same messages");
    let found = slave.query_message("HaTopic", "key-7", 8, 0, i64::MAX);
    assert_eq!(found.messages.len(), 1, "slave indexes keys itself");

    // Stop the slave, write more, reopen its store: it resumes from its own end.
    slave_stop.cancel();
    drop(follower);
    // Its connection closes when its replication task ends.
    wait_for("the master sees the slave go", T, || ha.slaves().is_empty()).await;
    put(&master, 200..320).await;
    slave.shutdown();
    drop(slave);
    let slave = Arc::new(MessageStore::open(config(dirs.1.path())).expect("reopen slave"));
    let slave_stop = CancellationToken::new();
    let follower = HaSlave::start(
        slave.clone(),
        group(),
        1,
        Duration::from_millis(200),
        slave_stop.clone(),
    );
    follower.set_master(&ha_addr);
    caught_up(&master, &slave).await;
    assert_same_log(&master, &slave);
    let on_slave = bodies_on(&slave);
    assert_eq!(on_slave.len(), 320, "no gaps and no duplicates");
    assert!(
        on_slave == bodies_on(&master),
        "same messages after the restart"
    );
    slave_stop.cancel();
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_ahead_of_its_master_is_refused() {
    let dirs = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let master = Arc::new(MessageStore::open(config(dirs.0.path())).expect("master store"));
    let slave = Arc::new(MessageStore::open(config(dirs.1.path())).expect("slave store"));
    put(&master, 0..5).await;
    put(&slave, 0..50).await;
    let stop = CancellationToken::new();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let ha_addr = listener.local_addr().expect("addr").to_string();
    let ha = HaMaster::start(master.clone(), listener, group(), stop.clone());
    let before = slave.commit_log_max_offset();
    let tap = TcpTap::start(&ha_addr).await;
    let follower = HaSlave::start(
        slave.clone(),
        group(),
        1,
        Duration::from_millis(100),
        stop.clone(),
    );
    follower.set_master(tap.addr());
    // First the slave must have met the master: the master accepted its handshake, read its
    // report of its end, and closed the connection without streaming anything.
    let met = eventually_some("the master drops the slave", T, async || {
        tap.closed_by(Side::Server)
    })
    .await;
    assert_eq!(met.from_server, [0, ACCEPTED], "no CommitLog byte streamed");
    assert!(
        met.from_client.ends_with(&before.to_be_bytes()),
        "the slave reported its end: {:?}",
        met.from_client
    );
    assert_eq!(ha.refused_peers(), 0, "the handshake was accepted");
    assert_eq!(
        slave.commit_log_max_offset(),
        before,
        "no master bytes mixed in"
    );
    assert!(
        ha.slaves().is_empty(),
        "the master dropped the diverged slave"
    );
    assert_eq!(ha.acked_offset(), 0);
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_slave_starts_at_the_masters_last_segment() {
    let dirs = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let master = Arc::new(MessageStore::open(config(dirs.0.path())).expect("master store"));
    put(&master, 0..200).await;
    let stop = CancellationToken::new();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let ha_addr = listener.local_addr().expect("addr").to_string();
    let _ha = HaMaster::start(master.clone(), listener, group(), stop.clone());
    let slave = Arc::new(MessageStore::open(config(dirs.1.path())).expect("slave store"));
    let follower = HaSlave::start(
        slave.clone(),
        group(),
        1,
        Duration::from_millis(100),
        stop.clone(),
    );
    follower.set_master(&ha_addr);
    caught_up(&master, &slave).await;
    let last_segment = master.commit_log_max_offset() / SEGMENT as i64 * SEGMENT as i64;
    assert!(last_segment > 0);
    assert_eq!(slave.commit_log_min_offset(), last_segment);
    assert_same_log(&master, &slave);
    assert_eq!(follower.master_offset(), master.commit_log_max_offset());
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_master_acknowledges_only_what_the_slave_has() {
    use stellmq_remoting::protocol::{RequestCode, ResponseCode};
    let stack = Stack::start_with(|c| Role::SyncMaster.apply(c)).await;
    let master = stack.broker();
    let r = stack.send("HaBroker", 0, "lonely", &[]).await;
    assert_eq!(
        r.code,
        ResponseCode::SLAVE_NOT_AVAILABLE.as_i32(),
        "no slave yet: {}",
        r.remark_str()
    );

    let slave = stack.start_slave(1, |_| {}).await;
    let ha = master.ha_master().expect("master replicates");
    wait_for("the slave connects", T, || !ha.slaves().is_empty()).await;
    assert_eq!(
        ha.slaves().len(),
        1,
        "the slave found its master via the name server"
    );

    for i in 0..50 {
        let r = stack.send("HaBroker", i % 4, &format!("m{i}"), &[]).await;
        assert_eq!(r.code, 0, "send {i}: {}", r.remark_str());
        assert!(
            slave.store().commit_log_max_offset() >= master.store().commit_log_max_offset(),
            "acknowledged message {i} is on the slave"
        );
    }
    let info = stack
        .call(request(RequestCode::GET_BROKER_RUNTIME_INFO, &[]))
        .await;
    let info: stellmq_remoting::protocol::body::KvTable =
        stellmq_remoting::protocol::body::fastjson::decode(&info.body).expect("runtime info");
    let max = master.store().commit_log_max_offset().to_string();
    assert_eq!(
        info.table.get("haSlaveCount").map(String::as_str),
        Some("1")
    );
    assert!(
        info.table
            .get("haSlaves")
            .is_some_and(|s| s.ends_with(&format!("={max}"))),
        "slave acknowledged everything: {:?}",
        info.table.get("haSlaves")
    );
    assert_eq!(
        info.table.get("haSlaveFallBehindBytes").map(String::as_str),
        Some("0")
    );
    let on_slave = RawClient::new(slave.addr());
    let direct = on_slave
        .call(send_request("HaBroker", 0, b"to the slave", &[]))
        .await;
    assert_eq!(direct.code, ResponseCode::SERVICE_NOT_AVAILABLE.as_i32());
    assert!(
        direct.remark_str().contains("slave"),
        "{}",
        direct.remark_str()
    );
    let create = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", "OnSlave"),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "4"),
            ("writeQueueNums", "4"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
        ],
    );
    let refused = on_slave.call(create).await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(
        refused.remark_str().contains("master"),
        "{}",
        refused.remark_str()
    );
    assert!(slave.store().wait_dispatched(Duration::from_secs(5)));
    let total: i64 = (0..4)
        .map(|q| slave.store().max_offset_in_queue("HaBroker", q))
        .sum();
    assert_eq!(
        total, 51,
        "the slave indexed every message, the unreplicated first one too"
    );

    // The slave copies topics and consumer offsets from the master (protocol.md 9.4)...
    let update = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "hg"),
            ("topic", "HaBroker"),
            ("queueId", "0"),
            ("commitOffset", "7"),
        ],
    );
    assert_eq!(stack.call(update).await.code, 0);
    let query = request(
        RequestCode::QUERY_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "hg"),
            ("topic", "HaBroker"),
            ("queueId", "0"),
        ],
    );
    eventually_within("offsets synced from the master", T, async || {
        let r = on_slave.call(query.clone()).await;
        r.code == 0 && r.ext_fields.get("offset") == Some("7")
    })
    .await;
    // ...so consumers can read from it.
    let from_slave = on_slave.pull_until("hg", "HaBroker", 1, 13).await;
    assert_eq!(from_slave.len(), 13, "queue 1 readable on the slave");
    slave.shutdown().await;
    stack.stop().await;
}

/// A slave never delivers scheduled messages itself (that would make its log diverge): it
/// gets the master's deliveries as replicated bytes and copies the master's delay offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_copies_delay_progress_instead_of_delivering() {
    use stellmq_remoting::protocol::body::{fastjson, DelayOffsetSerializeWrapper};
    use stellmq_remoting::protocol::RequestCode;
    let stack = Stack::start().await;
    let master = stack.broker();
    let slave = stack.start_slave(1, |_| {}).await;

    let r = stack.send("HaDelay", 0, "later", &[("DELAY", "1")]).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let delivered = stack.pull_until("hd", "HaDelay", 0, 1).await;
    assert_eq!(delivered.len(), 1, "the master delivered the message");

    let on_slave = RawClient::new(slave.addr());
    eventually_within(
        "the slave copied the master's delay offsets",
        Duration::from_secs(15),
        async || {
            let r = on_slave
                .call(request(RequestCode::GET_ALL_DELAY_OFFSET, &[]))
                .await;
            let table: DelayOffsetSerializeWrapper = fastjson::decode(&r.body).expect("delay body");
            table.offset_table.0.get(&1).copied() == Some(1)
        },
    )
    .await;
    caught_up(master.store(), slave.store()).await;
    assert_same_log(master.store(), slave.store());
    assert_eq!(
        slave.store().max_offset_in_queue("HaDelay", 0),
        1,
        "the delivered message reached the slave once, by replication"
    );
    slave.shutdown().await;
    stack.stop().await;
}

/// A slave that reaches another group's master (e.g. a stale address now reused) refuses its
/// bytes instead of mixing them into its log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_refuses_bytes_from_another_groups_master() {
    let dirs = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let ours = Arc::new(MessageStore::open(config(dirs.0.path())).expect("master store"));
    let other = Arc::new(MessageStore::open(config(dirs.1.path())).expect("other store"));
    let slave = Arc::new(MessageStore::open(config(dirs.2.path())).expect("slave store"));
    put(&ours, 0..2).await;
    // The other log's first record spans our whole log, so our end falls inside it.
    let mut big = message(0, 7);
    big.body = Bytes::from(vec![b'o'; 8000]);
    assert!(other.put_message(big).await.status.is_stored());
    put(&other, 2..10).await;

    let stop = CancellationToken::new();
    let mut masters = Vec::new();
    for store in [&ours, &other] {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        masters.push((
            addr,
            HaMaster::start(store.clone(), listener, group(), stop.clone()),
        ));
    }
    let follower = HaSlave::start(
        slave.clone(),
        group(),
        1,
        Duration::from_millis(100),
        stop.clone(),
    );
    follower.set_master(&masters[0].0);
    caught_up(&ours, &slave).await;

    let tap = TcpTap::start(&masters[1].0).await;
    follower.set_master(tap.addr());
    // First the slave must have met the other master: it was admitted and reported its end
    // there, was streamed bytes, and hung up itself.
    let end = ours.commit_log_max_offset();
    wait_for("the slave reports its end to the other master", T, || {
        masters[1].1.acked_offset() == end
    })
    .await;
    let met = eventually_some("the slave hangs up on the other master", T, async || {
        tap.closed_by(Side::Client)
    })
    .await;
    assert!(
        met.from_server.len() > 2 + FRAME_HEADER_LEN,
        "the other master streamed bytes: {} bytes",
        met.from_server.len()
    );
    assert_same_log(&ours, &slave);
    stop.cancel();
}

/// A group with `haAuthSecret`: a slave with another secret is refused, one with the same
/// secret replicates and satisfies SYNC_MASTER; the secret is never shown or changed remotely.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_with_ha_auth_secret_replicate_and_never_show_it() {
    use stellmq_remoting::protocol::{RequestCode, ResponseCode};
    let stack = Stack::start_with(|c| {
        Role::SyncMaster.apply(c);
        c.broker.ha_auth_secret = "s3cret".into();
    })
    .await;
    let config = stack
        .call(request(RequestCode::GET_BROKER_CONFIG, &[]))
        .await;
    let text = String::from_utf8_lossy(&config.body).to_string();
    assert!(text.contains("haAuthSecret=******\n"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
    let update =
        request(RequestCode::UPDATE_BROKER_CONFIG, &[]).with_body(&b"haAuthSecret=guess\n"[..]);
    assert_eq!(
        stack.call(update).await.code,
        ResponseCode::NO_PERMISSION.as_i32()
    );

    let ha = stack
        .broker()
        .ha_master()
        .expect("master replicates")
        .clone();
    let wrong = stack
        .start_slave(1, |c| c.broker.ha_auth_secret = "guess".into())
        .await;
    wait_for("the slave with the wrong secret tries", T, || {
        ha.refused_peers() > 0
    })
    .await;
    assert!(
        ha.refused_peers() > 0,
        "the slave with the wrong secret tried"
    );
    let r = stack.send("HaSecret", 0, "refused slave", &[]).await;
    assert_eq!(
        r.code,
        ResponseCode::SLAVE_NOT_AVAILABLE.as_i32(),
        "{}",
        r.remark_str()
    );
    assert_eq!(wrong.store().commit_log_max_offset(), 0);
    wrong.shutdown().await;

    let right = stack
        .start_slave(1, |c| c.broker.ha_auth_secret = "s3cret".into())
        .await;
    wait_for("the slave with the secret is admitted", T, || {
        ha.has_slaves()
    })
    .await;
    let r = stack.send("HaSecret", 0, "replicated", &[]).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    assert!(
        right.store().commit_log_max_offset() >= stack.broker().store().commit_log_max_offset()
    );
    right.shutdown().await;
    stack.stop().await;
}
