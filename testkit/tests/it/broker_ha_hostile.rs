//! The HA port under hostile peers: a master streams nothing to, and counts no report from,
//! a peer that did not complete the StellMQ handshake (identity, and haAuthSecret when set);
//! a slave appends nothing a master sends that is not a whole, valid record at its offset.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use stellmq_broker::ha::protocol::{self, SlaveIdentity};
use stellmq_broker::ha::{HaGroup, HaMaster, HaSlave};
use stellmq_broker::writer::MessageWriter;
use stellmq_remoting::protocol::message::record::{encode_record, BLANK_MAGIC};
use stellmq_remoting::protocol::message::{body_crc, RecordHead};
use stellmq_store::{MessageStore, MessageStoreConfig, PutMessage, PutMessageStatus};
use stellmq_testkit::{eventually_some, wait_for, Side, TcpTap, TIMEOUT as T};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
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

fn message(i: usize) -> PutMessage {
    PutMessage {
        topic: "Hostile".to_owned(),
        queue_id: 0,
        flag: 0,
        body: Bytes::from(format!("{i}:{}", "x".repeat(200))),
        properties: String::new(),
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:40000".parse().expect("addr"),
        store_host: "127.0.0.1:10911".parse().expect("addr"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        wait_store_ok: true,
    }
}

struct Master {
    store: Arc<MessageStore>,
    ha: Arc<HaMaster>,
    addr: String,
    stop: CancellationToken,
    _dir: tempfile::TempDir,
}

async fn master(group: HaGroup, messages: usize) -> Master {
    let dir = tempfile::tempdir().expect("dir");
    let store = Arc::new(MessageStore::open(config(dir.path())).expect("master store"));
    for i in 0..messages {
        assert!(store.put_message(message(i)).await.status.is_stored());
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let stop = CancellationToken::new();
    let ha = HaMaster::start(store.clone(), listener, group, stop.clone());
    Master {
        store,
        ha,
        addr,
        stop,
        _dir: dir,
    }
}

struct Slave {
    store: Arc<MessageStore>,
    stop: CancellationToken,
    _dir: tempfile::TempDir,
}

fn slave(master_addr: &str, group: HaGroup, broker_id: i64) -> Slave {
    slave_with(master_addr, group, broker_id, |_| {})
}

fn slave_with(
    master_addr: &str,
    group: HaGroup,
    broker_id: i64,
    tweak: impl FnOnce(&mut MessageStoreConfig),
) -> Slave {
    let dir = tempfile::tempdir().expect("dir");
    let mut config = config(dir.path());
    tweak(&mut config);
    let store = Arc::new(MessageStore::open(config).expect("slave store"));
    let stop = CancellationToken::new();
    let ha = HaSlave::start(
        store.clone(),
        group,
        broker_id,
        Duration::from_millis(100),
        stop.clone(),
    );
    ha.set_master(master_addr);
    Slave {
        store,
        stop,
        _dir: dir,
    }
}

/// Everything the peer receives until the other side closes (an error counts as closed).
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let _ = tokio::time::timeout(T, stream.read_to_end(&mut got))
        .await
        .expect("the connection was closed");
    got
}

fn hello(cluster: &str, name: &str, broker_id: i64) -> Vec<u8> {
    let identity = SlaveIdentity {
        cluster_name: cluster.into(),
        broker_name: name.into(),
        broker_id,
    };
    protocol::encode_hello(&identity.encode().expect("identity")).expect("hello")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_without_the_handshake_gets_nothing_and_is_dropped() {
    let m = master(group(), 20).await;
    let legit = slave(&m.addr, group(), 1);
    let end = m.store.commit_log_max_offset();
    wait_for("the legitimate slave replicates", T, || {
        legit.store.commit_log_max_offset() == end
    })
    .await;
    assert_eq!(m.ha.slaves().len(), 1);

    // A classic slave: an 8-byte offset report, then it waits for frames.
    let mut classic = TcpStream::connect(&m.addr).await.expect("connect");
    classic
        .write_all(&0i64.to_be_bytes())
        .await
        .expect("report");
    assert!(
        read_until_closed(&mut classic).await.is_empty(),
        "no CommitLog byte"
    );
    // A peer that says nothing is dropped after the handshake timeout.
    let started = tokio::time::Instant::now();
    let mut silent = TcpStream::connect(&m.addr).await.expect("connect");
    assert!(read_until_closed(&mut silent).await.is_empty());
    assert!(started.elapsed() >= Duration::from_secs(4), "waited for it");
    assert_eq!(m.ha.refused_peers(), 2);
    assert_eq!(
        m.ha.slaves().len(),
        1,
        "only the legitimate slave is listed"
    );
    legit.stop.cancel();
    m.stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_of_another_group_are_refused() {
    let m = master(group(), 20).await;
    let end = m.store.commit_log_max_offset();
    let legit = slave(&m.addr, group(), 1);
    let other_name = slave(&m.addr, HaGroup::new("DefaultCluster", "broker-b"), 1);
    let other_cluster = slave(&m.addr, HaGroup::new("OtherCluster", "broker-a"), 1);
    wait_for("the legitimate slave replicates", T, || {
        legit.store.commit_log_max_offset() == end
    })
    .await;
    wait_for("both impostors tried, twice each", T, || {
        m.ha.refused_peers() >= 4
    })
    .await;
    assert_eq!(other_name.store.commit_log_max_offset(), 0);
    assert_eq!(other_cluster.store.commit_log_max_offset(), 0);
    assert_eq!(m.ha.slaves().len(), 1);

    // On the wire: a refused hello gets no challenge, let alone CommitLog bytes.
    for (cluster, name, id) in [
        ("DefaultCluster", "broker-b", 1),
        ("OtherCluster", "broker-a", 1),
        ("DefaultCluster", "broker-a", 0),
        ("DefaultCluster", "broker-a", -3),
    ] {
        let mut peer = TcpStream::connect(&m.addr).await.expect("connect");
        peer.write_all(&hello(cluster, name, id))
            .await
            .expect("hello");
        peer.write_all(&0i64.to_be_bytes()).await.expect("report");
        assert!(
            read_until_closed(&mut peer).await.is_empty(),
            "{cluster}/{name}/{id} got bytes"
        );
    }
    // The same hello with the right identity is answered.
    let mut ok = TcpStream::connect(&m.addr).await.expect("connect");
    ok.write_all(&hello("DefaultCluster", "broker-a", 2))
        .await
        .expect("hello");
    let mut answer = [0u8; 2];
    ok.read_exact(&mut answer).await.expect("challenge");
    assert_eq!(answer, [0, protocol::ACCEPTED]);
    for s in [legit, other_name, other_cluster] {
        s.stop.cancel();
    }
    m.stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ha_auth_secret_admits_only_slaves_that_know_it() {
    let m = master(group().with_secret("s3cret"), 20).await;
    let end = m.store.commit_log_max_offset();
    let right = slave(&m.addr, group().with_secret("s3cret"), 1);
    let wrong = slave(&m.addr, group().with_secret("guess"), 2);
    let none = slave(&m.addr, group(), 3);
    wait_for("the slave with the secret replicates", T, || {
        right.store.commit_log_max_offset() == end
    })
    .await;
    // The wrong proof is refused by the master; the slave without a secret gives up itself
    // at the challenge, which the master counts as refused too.
    wait_for("both impostors tried, twice each", T, || {
        m.ha.refused_peers() >= 4
    })
    .await;
    assert_eq!(wrong.store.commit_log_max_offset(), 0);
    assert_eq!(none.store.commit_log_max_offset(), 0);
    assert_eq!(m.ha.slaves().len(), 1, "only the slave with the secret");

    // On the wire: a nonce, then nothing after a wrong proof.
    let mut peer = TcpStream::connect(&m.addr).await.expect("connect");
    peer.write_all(&hello("DefaultCluster", "broker-a", 4))
        .await
        .expect("hello");
    let mut challenge = [0u8; 1 + protocol::NONCE_LEN];
    peer.read_exact(&mut challenge).await.expect("challenge");
    assert_eq!(usize::from(challenge[0]), protocol::NONCE_LEN);
    peer.write_all(&[0u8; protocol::PROOF_LEN])
        .await
        .expect("proof");
    assert!(read_until_closed(&mut peer).await.is_empty());

    // A slave with a secret refuses a master that asks for none. First it must have met the
    // master: it said hello, was told no secret is asked, and hung up without a report.
    let open = master(group(), 5).await;
    let tap = TcpTap::start(&open.addr).await;
    let strict = slave(tap.addr(), group().with_secret("s3cret"), 1);
    let met = eventually_some("the strict slave hangs up", T, async || {
        tap.closed_by(Side::Client)
    })
    .await;
    assert_eq!(met.from_client, hello("DefaultCluster", "broker-a", 1));
    assert_eq!(met.from_server.first(), Some(&0), "no secret asked");
    assert_eq!(strict.store.commit_log_max_offset(), 0);
    assert!(open.ha.slaves().is_empty());
    for s in [right, wrong, none, strict] {
        s.stop.cancel();
    }
    m.stop.cancel();
    open.stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impostor_cannot_satisfy_sync_master() {
    let m = master(group(), 0).await;
    let writer = MessageWriter::new(m.store.clone()).with_replication(m.ha.clone(), true);
    let legit = slave(&m.addr, group(), 1);
    wait_for("the slave registered", T, || m.ha.has_slaves()).await;
    let r = writer.put(vec![message(0)]).await;
    assert_eq!(
        r.status,
        PutMessageStatus::PutOk,
        "a real slave acknowledges"
    );
    legit.stop.cancel();
    wait_for("the slave is gone", T, || !m.ha.has_slaves()).await;
    let acked = m.ha.acked_offset();

    // Impostors: a classic slave reporting far ahead, and one still inside its handshake.
    let mut classic = TcpStream::connect(&m.addr).await.expect("connect");
    classic
        .write_all(&(1i64 << 40).to_be_bytes())
        .await
        .expect("report");
    let mut pending = TcpStream::connect(&m.addr).await.expect("connect");
    pending
        .write_all(&protocol::HANDSHAKE_MAGIC)
        .await
        .expect("magic");
    wait_for("the classic impostor was refused", T, || {
        m.ha.refused_peers() == 1
    })
    .await;
    let r = writer.put(vec![message(1)]).await;
    assert_eq!(r.status, PutMessageStatus::SlaveNotAvailable);
    let end = r.append.expect("stored locally").end_offset;
    // The pending one now reports the new end as an identity; it is refused too.
    pending.write_all(&end.to_be_bytes()).await.expect("report");
    let r = writer.put(vec![message(2)]).await;
    assert_eq!(r.status, PutMessageStatus::SlaveNotAvailable);
    assert!(read_until_closed(&mut pending).await.is_empty());
    assert!(read_until_closed(&mut classic).await.is_empty());
    assert_eq!(m.ha.acked_offset(), acked, "no impostor's report counted");
    assert!(m.ha.slaves().is_empty());
    m.stop.cancel();
}

/// A master in the test: it speaks the handshake, then sends whatever frames a case needs.
struct FakeMaster {
    listener: TcpListener,
}

impl FakeMaster {
    /// Admits the next connection; returns it and the slave's first report.
    async fn accept(&self) -> (TcpStream, i64) {
        let (mut conn, _) = tokio::time::timeout(T, self.listener.accept())
            .await
            .expect("the slave connected")
            .expect("accept");
        let mut head = [0u8; protocol::HELLO_HEAD_LEN];
        conn.read_exact(&mut head).await.expect("hello");
        let len = protocol::decode_hello_head(&head).expect("a StellMQ hello");
        let mut identity = vec![0u8; len];
        conn.read_exact(&mut identity).await.expect("identity");
        let identity = SlaveIdentity::decode(&identity).expect("identity");
        assert_eq!(
            (identity.broker_name.as_str(), identity.broker_id),
            ("broker-a", 1)
        );
        conn.write_all(&[0, protocol::ACCEPTED])
            .await
            .expect("accept");
        let mut report = [0u8; 8];
        conn.read_exact(&mut report).await.expect("report");
        (conn, i64::from_be_bytes(report))
    }
}

/// The slave's next offset report.
async fn read_report(conn: &mut TcpStream) -> i64 {
    let mut report = [0u8; 8];
    tokio::time::timeout(T, conn.read_exact(&mut report))
        .await
        .expect("a report in time")
        .expect("report");
    i64::from_be_bytes(report)
}

async fn send_frame(conn: &mut TcpStream, offset: i64, body: &[u8]) {
    conn.write_all(&protocol::encode_frame_header(offset, body.len()))
        .await
        .expect("header");
    conn.write_all(body).await.expect("body");
}

/// A valid record at `offset`, queue offset `queue_offset` of `Fake`-0.
fn record(offset: i64, queue_offset: i64, body: &str) -> Vec<u8> {
    let head = RecordHead {
        body_crc: body_crc(body.as_bytes()),
        queue_id: 0,
        flag: 0,
        queue_offset,
        physical_offset: offset,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:40000".parse().expect("addr"),
        store_timestamp: 1_700_000_000_001,
        store_host: "127.0.0.1:10911".parse().expect("addr"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    let mut out = Vec::new();
    encode_record(&head, body.as_bytes(), "Fake", "", &mut out).expect("record");
    out
}

fn blank(len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    out[..4].copy_from_slice(&(len as i32).to_be_bytes());
    out[4..8].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_appends_only_verified_records_from_a_fake_master() {
    let fake = FakeMaster {
        listener: TcpListener::bind("127.0.0.1:0").await.expect("bind"),
    };
    let addr = fake.listener.local_addr().expect("addr").to_string();
    let s = slave(&addr, group(), 1);
    let store = s.store.clone();
    let (mut conn, report) = fake.accept().await;
    assert_eq!(report, 0, "an empty slave");

    // A record split across two frames is appended once whole.
    let r0 = record(0, 0, "first");
    let r1 = record(r0.len() as i64, 1, &"second".repeat(50));
    let mut frame = r0.clone();
    frame.extend_from_slice(&r1[..60]);
    send_frame(&mut conn, 0, &frame).await;
    wait_for("the whole record is appended", T, || {
        store.commit_log_max_offset() == r0.len() as i64
    })
    .await;
    // The slave reports after it has handled a whole frame: this report shows it is done
    // with the one holding the half record.
    assert_eq!(read_report(&mut conn).await, r0.len() as i64);
    assert_eq!(
        store.commit_log_max_offset(),
        r0.len() as i64,
        "not the half"
    );
    send_frame(&mut conn, frame.len() as i64, &r1[60..]).await;
    let mut end = (r0.len() + r1.len()) as i64;
    wait_for("the split record is appended", T, || {
        store.commit_log_max_offset() == end
    })
    .await;
    let mut queue_offset = 2;

    // Each bad record follows a good one in the same frame: the good one is kept, nothing of
    // the bad one is written, the slave drops the connection and reconnects at its end.
    type Spoil = fn(&mut Vec<u8>, i64);
    let cases: [(&str, Spoil); 5] = [
        ("bad body CRC", |r, _| {
            // The body "bad" ends before topic length (1), "Fake" (4), properties length (2).
            let at = r.len() - 8;
            r[at] ^= 0x20;
        }),
        ("wrong PHYSICALOFFSET", |r, at| {
            r[28..36].copy_from_slice(&(at + 1).to_be_bytes());
        }),
        ("bad magic", |r, _| {
            r[4..8].copy_from_slice(&0x0BAD_0BADu32.to_be_bytes())
        }),
        ("blank short of the segment end", |r, _| *r = blank(200)),
        ("size beyond any record", |r, _| {
            r[..4].copy_from_slice(&(1i32 << 30).to_be_bytes());
        }),
    ];
    for (what, spoil) in cases {
        let good = record(end, queue_offset, what);
        let bad_at = end + good.len() as i64;
        let mut bad = record(bad_at, queue_offset + 1, "bad");
        spoil(&mut bad, bad_at);
        let mut frame = good.clone();
        frame.extend_from_slice(&bad);
        send_frame(&mut conn, end, &frame).await;
        read_until_closed(&mut conn).await;
        assert_eq!(
            store.commit_log_max_offset(),
            bad_at,
            "{what}: only the good record"
        );
        assert!(store.replication_chunk(bad_at, 1).is_none(), "{what}");
        let (next, report) = fake.accept().await;
        assert_eq!(report, bad_at, "{what}: reconnects at its end");
        conn = next;
        end = bad_at;
        queue_offset += 1;
    }

    // Frames must continue where the slave is.
    send_frame(&mut conn, end + 1, &record(end + 1, queue_offset, "gap")).await;
    read_until_closed(&mut conn).await;
    assert_eq!(store.commit_log_max_offset(), end);
    let (mut conn, report) = fake.accept().await;
    assert_eq!(report, end);

    // A blank that fills the segment exactly, then the next segment.
    let fill = blank(SEGMENT - end as usize);
    for (i, chunk) in fill.chunks(7000).enumerate() {
        send_frame(&mut conn, end + (i * 7000) as i64, chunk).await;
    }
    let next = record(SEGMENT as i64, queue_offset, "next segment");
    send_frame(&mut conn, SEGMENT as i64, &next).await;
    let last = SEGMENT as i64 + next.len() as i64;
    wait_for("the blank and the next segment are appended", T, || {
        store.commit_log_max_offset() == last
    })
    .await;
    assert!(store.wait_dispatched(T));
    assert_eq!(
        store.max_offset_in_queue("Fake", 0),
        queue_offset + 1,
        "every good record dispatched, no bad one"
    );
    s.stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_whose_master_falls_silent_inside_a_frame_connects_again() {
    let fake = FakeMaster {
        listener: TcpListener::bind("127.0.0.1:0").await.expect("bind"),
    };
    let addr = fake.listener.local_addr().expect("addr").to_string();
    let s = slave_with(&addr, group(), 1, |c| {
        c.ha_housekeeping_interval = 1_000;
        c.ha_send_heartbeat_interval = 200;
    });
    let (mut conn, report) = fake.accept().await;
    assert_eq!(report, 0);
    // A frame that promises a record and stops part way: the master vanished (behind a
    // partition, or killed without a word reaching the slave).
    let r0 = record(0, 0, "never finished");
    conn.write_all(&protocol::encode_frame_header(0, r0.len()))
        .await
        .expect("header");
    conn.write_all(&r0[..10]).await.expect("part of the body");
    // The slave keeps reporting while it waits, so a partition would break the connection.
    assert_eq!(read_report(&mut conn).await, 0);
    // Nothing more comes within haHousekeepingInterval: the slave connects again (it used
    // to wait inside the frame forever).
    let (_again, report) = fake.accept().await;
    assert_eq!(report, 0, "nothing of the unfinished frame was appended");
    assert_eq!(s.store.commit_log_max_offset(), 0);
    s.stop.cancel();
}
