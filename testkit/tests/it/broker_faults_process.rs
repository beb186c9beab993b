//! Faults against the `mqbroker` binary: kill -9 under SYNC_FLUSH load, damaged CommitLogs,
//! and a disk that fills up for real. Nothing acknowledged may be lost, and the broker must
//! start and serve after each.
//!
//! `STELLMQ_CRASH_CYCLES` sets the kill -9 cycles (default 8); the figures are printed.
//! The full-disk test mounts a small tmpfs in a private mount namespace (`unshare`, as root
//! or through a user namespace); `STELLMQ_SKIP_TMPFS_TESTS=1` skips it where neither works.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::Rng;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::record::MAGIC_V1;
use stellmq_remoting::protocol::message::{id, MessageRecord};
use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::process::{bin_path, spawn_broker_command, spawn_mqbroker};
use stellmq_testkit::{
    eventually_within, request, send_request, NameServer, RawClient, TIMEOUT as T,
};

const QUEUES: i32 = 4;

fn write_conf(dir: &Path, store: &Path, extra: &str) -> PathBuf {
    let conf = dir.join("broker.conf");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\n\
             mappedFileSizeCommitLog=1048576\nmaxMessageSize=65536\n\
             mappedFileSizeConsumeQueue=20000\nmaxHashSlotNum=1000\nmaxIndexNum=4000\n\
             diskSpaceWarningLevelRatio=100\ndiskMaxUsedSpaceRatio=100\n\
             diskSpaceCleanForciblyRatio=100\ndeleteWhen=99\n{extra}",
            store.display()
        ),
    )
    .expect("conf");
    conf
}

fn body_of(seq: u64) -> String {
    format!("seq-{seq}-{}", "b".repeat((seq % 700) as usize))
}

/// Every record of the topic's queues, decoded with its CRC checked.
async fn read_all(addr: &str, topic: &str) -> Vec<MessageRecord> {
    let broker = RawClient::new(addr);
    let mut out = Vec::new();
    for queue_id in 0..QUEUES {
        out.extend(broker.pull_all("checker", topic, queue_id).await);
    }
    broker.shutdown().await;
    out
}

fn seqs(records: &[MessageRecord]) -> BTreeSet<u64> {
    records
        .iter()
        .filter_map(|r| {
            let body = String::from_utf8_lossy(&r.body).into_owned();
            assert_eq!(
                body,
                body_of(body.split('-').nth(1)?.parse().ok()?),
                "body intact"
            );
            body.split('-').nth(1)?.parse().ok()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_under_sync_flush_load_loses_no_acknowledged_message() {
    let cycles: usize = std::env::var("STELLMQ_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let conf = write_conf(
        dir.path(),
        &dir.path().join("store"),
        "flushDiskType=SYNC_FLUSH\n",
    );
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let mut next_seq = 0u64;
    let mut attempted = 0u64;
    for cycle in 0..cycles {
        let (mut child, addr) = spawn_mqbroker(&conf, &ns_addr).await;
        let client = Arc::new(RemotingClient::new(ClientConfig::default()));
        // Everything acknowledged in earlier cycles is back, intact.
        let present = seqs(&read_all(&addr, "Crash").await);
        let missing: Vec<u64> = acked.lock().difference(&present).copied().collect();
        assert!(missing.is_empty(), "cycle {cycle}: lost {missing:?}");

        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..8u64 {
            let (client, addr, acked, stop) =
                (client.clone(), addr.clone(), acked.clone(), stop.clone());
            let first = next_seq + w * 1_000_000;
            writers.push(tokio::spawn(async move {
                let mut seq = first;
                while !stop.load(Ordering::Acquire) {
                    let queue = (seq % QUEUES as u64) as i32;
                    let request =
                        send_request("Crash", queue, body_of(seq).as_bytes(), &[("KEYS", "k")]);
                    match client.invoke(&addr, request, Duration::from_secs(5)).await {
                        Ok(r) if r.code == 0 => {
                            acked.lock().insert(seq);
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                    seq += 1;
                }
                seq - first
            }));
        }
        // The kill lands at a random moment of the load: the pause is what is tested.
        let load = rand::thread_rng().gen_range(300..1200);
        tokio::time::sleep(Duration::from_millis(load)).await;
        child.kill();
        stop.store(true, Ordering::Release);
        for w in writers {
            attempted += w.await.expect("writer");
        }
        next_seq += 8 * 1_000_000;
    }
    let (mut child, addr) = spawn_mqbroker(&conf, &ns_addr).await;
    let present = seqs(&read_all(&addr, "Crash").await);
    let acked = acked.lock().clone();
    let missing: Vec<u64> = acked.difference(&present).copied().collect();
    assert!(missing.is_empty(), "lost {missing:?}");
    assert!(
        acked.len() > cycles * 10,
        "load was real: {} acked",
        acked.len()
    );
    eprintln!(
        "kill -9 under SYNC_FLUSH: {cycles} cycles, {attempted} sends, {} acknowledged, 0 lost, {} stored",
        acked.len(),
        present.len()
    );
    child.kill();
    ns.shutdown().await;
}

/// Sends `n` messages to queue 0 of `topic`; returns the physical offset of each.
async fn fill(client: &RemotingClient, addr: &str, topic: &str, n: u64) -> Vec<i64> {
    let mut phys = Vec::new();
    for seq in 0..n {
        let r = client
            .invoke(
                addr,
                send_request(topic, 0, body_of(seq).as_bytes(), &[]),
                T,
            )
            .await
            .expect("send");
        assert_eq!(r.code, 0, "{}", r.remark_str());
        let h = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).expect("header");
        phys.push(id::decode_offset_msg_id(&h.msg_id).expect("id").1);
    }
    phys
}

/// Rewrites bytes of the CommitLog (1 MiB segments) at a global offset.
fn patch(store: &Path, offset: i64, f: impl FnOnce(&mut [u8])) {
    const SEG: i64 = 1024 * 1024;
    let path = store
        .join("commitlog")
        .join(format!("{:020}", offset / SEG * SEG));
    let mut data = std::fs::read(&path).expect("segment");
    f(&mut data[(offset % SEG) as usize..]);
    std::fs::write(&path, data).expect("patch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_commitlogs_recover_to_a_broker_that_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let store = dir.path().join("store");
    let conf = write_conf(dir.path(), &store, "");
    let client = RemotingClient::new(ClientConfig::default());
    let (mut child, addr) = spawn_mqbroker(&conf, &ns_addr).await;
    let phys = fill(&client, &addr, "Damaged", 300).await;
    let end = {
        let last = read_all(&addr, "Damaged").await;
        assert_eq!(last.len(), 300);
        let tail = last.last().expect("records");
        tail.head.physical_offset + tail.encode_to_vec().expect("encode").len() as i64
    };
    child.kill();

    type Damage = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Damage, usize)> = vec![
        (
            "garbage after the last record",
            Box::new(move |s: &Path| {
                patch(s, end, |b| b[..64].copy_from_slice(&[0xAB; 64]));
            }),
            300,
        ),
        (
            "a record with a short TOTALSIZE",
            Box::new(move |s: &Path| {
                patch(s, end, |b| {
                    b[..4].copy_from_slice(&20i32.to_be_bytes());
                    b[4..8].copy_from_slice(&MAGIC_V1.to_be_bytes());
                });
            }),
            300,
        ),
        (
            "a bit flip in the middle of the log",
            Box::new(move |s: &Path| {
                patch(s, phys[150] + 180, |b| b[0] ^= 0x10);
                // An old checkpoint: recovery validates the whole log.
                std::fs::write(s.join("checkpoint"), [0u8; 24]).expect("checkpoint");
            }),
            150,
        ),
    ];
    for (what, damage, kept) in cases {
        damage(&store);
        std::fs::write(store.join("abort"), b"").expect("crash marker");
        let (mut child, addr) = spawn_mqbroker(&conf, &ns_addr).await;
        let records = read_all(&addr, "Damaged").await;
        let got = seqs(&records);
        assert_eq!(
            got,
            (0..kept as u64).collect(),
            "{what}: every record before the damage"
        );
        // It takes writes again, after what it kept.
        let r = client
            .invoke(
                &addr,
                send_request("AfterDamage", 0, body_of(9999).as_bytes(), &[]),
                T,
            )
            .await
            .expect("send");
        assert_eq!(r.code, 0, "{what}: {}", r.remark_str());
        child.kill();
    }
    let dropped = std::fs::read_dir(store.join("commitlog"))
        .expect("dir")
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("dropped-"));
    assert!(dropped, "what recovery cut off is kept for inspection");
    ns.shutdown().await;
}

/// `unshare` arguments that give a private mount namespace, or None where neither works.
fn unshare_args() -> Option<&'static [&'static str]> {
    let candidates: [&'static [&'static str]; 2] = [
        &["--mount", "--propagation", "private"],
        &[
            "--user",
            "--map-root-user",
            "--mount",
            "--propagation",
            "private",
        ],
    ];
    candidates.into_iter().find(|args| {
        Command::new("unshare")
            .args(*args)
            .args(["sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt 2>/dev/null || mount -t tmpfs -o size=1m tmpfs /tmp"])
            .status()
            .is_ok_and(|s| s.success())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_keeps_serving_reads_and_resumes() {
    if std::env::var("STELLMQ_SKIP_TMPFS_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("skipped: STELLMQ_SKIP_TMPFS_TESTS=1");
        return;
    }
    let Some(unshare) = unshare_args() else {
        panic!("cannot mount a tmpfs in a private mount namespace (unshare); set STELLMQ_SKIP_TMPFS_TESTS=1 to skip");
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let ns_addr = ns.addr().to_owned();
    let store = dir.path().join("store");
    std::fs::create_dir_all(&store).expect("mkdir");
    // 4 MiB segments on a 24 MiB disk; old segments count as expired at once.
    let conf = write_conf(
        dir.path(),
        &store,
        "mappedFileSizeCommitLog=4194304\nfileReservedTime=0\ncleanFileForciblyEnable=false\n",
    );
    let mut command = Command::new("unshare");
    command.args(unshare).args([
        "sh",
        "-c",
        "mount -t tmpfs -o size=24m tmpfs \"$1\" && exec \"$2\" -c \"$3\" -n \"$4\"",
        "sh",
    ]);
    command
        .arg(&store)
        .arg(bin_path("mqbroker"))
        .arg(&conf)
        .arg(&ns_addr);
    let (mut child, addr) = spawn_broker_command(command).await;
    let client = RemotingClient::new(ClientConfig::default());

    let mut acked = BTreeSet::new();
    let mut refusal = None;
    for seq in 0..10_000u64 {
        let body = format!("seq-{seq}-{}", "f".repeat(16 * 1024));
        let r = client
            .invoke(
                &addr,
                send_request("Full", (seq % 4) as i32, body.as_bytes(), &[]),
                T,
            )
            .await
            .expect("the broker answers on a full disk");
        if r.code == 0 {
            acked.insert(seq);
        } else {
            refusal = Some(r.remark_str().to_owned());
            break;
        }
    }
    let refusal = refusal.expect("the disk filled up");
    assert!(
        refusal.contains("No space left") || refusal.contains("disk full"),
        "a clear reason: {refusal}"
    );
    assert!(
        acked.len() > 500,
        "{} stored before the disk filled",
        acked.len()
    );
    // Another try (as large) is refused the same way, without harm.
    let big = format!("seq-0-{}", "f".repeat(16 * 1024));
    let r = client
        .invoke(&addr, send_request("Full", 0, big.as_bytes(), &[]), T)
        .await
        .expect("answer");
    assert_ne!(r.code, 0, "still full");
    // Reads go on: everything acknowledged is there, intact.
    let records = read_all(&addr, "Full").await;
    assert_eq!(
        records.len(),
        acked.len(),
        "every acknowledged message reads back"
    );

    // Space returns (retention deletes old segments); writes resume by themselves.
    let r = client
        .invoke(
            &addr,
            request(RequestCode::DELETE_EXPIRED_COMMITLOG, &[]),
            T,
        )
        .await
        .expect("clean");
    assert_eq!(r.code, 0);
    eventually_within("writes resume", Duration::from_secs(20), async || {
        let r = client
            .invoke(&addr, send_request("Full", 0, big.as_bytes(), &[]), T)
            .await
            .expect("answer");
        r.code == 0
    })
    .await;
    child.kill();
    ns.shutdown().await;
}
