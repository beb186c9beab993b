//! Crash test: a child process appends in SYNC_FLUSH mode and reports every acknowledged
//! message; it is killed with SIGKILL at random moments, over many cycles. After each kill
//! the store must recover with every acknowledged message present and intact, and accept
//! new writes.
//!
//! The child is this test binary itself, re-run with `crash_writer_child` selected.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{decode, message, small_config};
use rand::Rng;
use stellmq_store::{AcceptAll, GetMessageStatus, MessageStore, PutMessageStatus};

const DIR_ENV: &str = "STELLMQ_CRASH_DIR";
const SEQ_ENV: &str = "STELLMQ_CRASH_SEQ";
const CYCLES: usize = 20;

#[derive(Debug, Clone, Copy)]
struct Ack {
    seq: u64,
    phys: i64,
    queue_id: i32,
    queue_offset: i64,
}

fn body(seq: u64) -> String {
    format!(
        "crash-test-message-{seq}-{}",
        "p".repeat((seq % 300) as usize)
    )
}

fn sync_config(dir: &std::path::Path) -> stellmq_store::MessageStoreConfig {
    let mut config = small_config(dir);
    config.flush_disk_type = stellmq_store::FlushDiskType::Sync;
    // Kills land before and after ConsumeQueue snapshots: both recoveries are exercised.
    config.consume_queue_snapshot_interval = 50;
    config
}

/// The writer. Only does anything when started by the crash test.
#[test]
#[ignore = "run by sigkill_during_sync_writes_loses_no_acknowledged_message"]
fn crash_writer_child() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let mut seq: u64 = std::env::var(SEQ_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = MessageStore::open(sync_config(std::path::Path::new(&dir))).expect("open");
        let stdout = std::io::stdout();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let queue_id = (seq % 4) as i32;
            let r = store
                .put_message(message(
                    "Crash",
                    queue_id,
                    body(seq).as_bytes(),
                    &format!("seq{seq}"),
                    "",
                ))
                .await;
            assert_eq!(r.status, PutMessageStatus::PutOk);
            let a = r.append.expect("append");
            let mut out = stdout.lock();
            writeln!(
                out,
                "ACK {seq} {} {queue_id} {}",
                a.first_phys_offset(),
                a.queue_offset
            )
            .expect("stdout");
            out.flush().expect("flush");
            seq += 1;
        }
    });
}

fn run_child_and_kill(dir: &std::path::Path, next_seq: u64, kill_after: Duration) -> Vec<Ack> {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "crash_writer_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_ENV, dir)
        .env(SEQ_ENV, next_seq.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn writer");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if let ["ACK", seq, phys, queue_id, queue_offset] = parts.as_slice() {
                let ack = Ack {
                    seq: seq.parse().expect("seq"),
                    phys: phys.parse().expect("phys"),
                    queue_id: queue_id.parse().expect("queue"),
                    queue_offset: queue_offset.parse().expect("offset"),
                };
                if tx.send(ack).is_err() {
                    return;
                }
            }
        }
    });
    // Let it write for a while once it has started writing, then kill it mid-stream.
    let first = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("writer started");
    std::thread::sleep(kill_after);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let _ = reader.join();
    let mut acks = vec![first];
    acks.extend(rx.try_iter());
    acks
}

fn verify(store: &MessageStore, acks: &[Ack]) {
    for ack in acks {
        let raw = store
            .look_message_by_offset(ack.phys)
            .unwrap_or_else(|| panic!("acknowledged message {} missing at {}", ack.seq, ack.phys));
        let rec = decode(&raw);
        assert_eq!(
            rec.body.as_ref(),
            body(ack.seq).as_bytes(),
            "message {} intact",
            ack.seq
        );
        assert_eq!(rec.head.queue_offset, ack.queue_offset);
        let got = store.get_messages("Crash", ack.queue_id, ack.queue_offset, 1, &AcceptAll);
        assert_eq!(
            got.status,
            GetMessageStatus::Found,
            "message {} in its consume queue",
            ack.seq
        );
        assert_eq!(decode(&got.messages[0]).head.physical_offset, ack.phys);
    }
}

#[test]
fn sigkill_during_sync_writes_loses_no_acknowledged_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut rng = rand::thread_rng();
    let mut all: Vec<Ack> = Vec::new();
    let mut next_seq = 0;
    let mut from_snapshot = 0;
    for cycle in 0..CYCLES {
        let acks = run_child_and_kill(
            dir.path(),
            next_seq,
            Duration::from_millis(rng.gen_range(20..400)),
        );
        assert!(
            dir.path().join("abort").exists(),
            "cycle {cycle}: the killed writer left its abort file"
        );
        next_seq = acks.iter().map(|a| a.seq + 1).max().unwrap_or(next_seq);
        all.extend(acks);

        if dir.path().join("consumequeue.summary").exists() {
            from_snapshot += 1;
        }
        let store = MessageStore::open(sync_config(dir.path())).expect("recovers after SIGKILL");
        assert!(store.wait_dispatched(Duration::from_secs(10)));
        verify(&store, &all);
        // New writes succeed and continue each queue where it was.
        runtime.block_on(async {
            let seq = next_seq;
            let r = store
                .put_message(message(
                    "Crash",
                    (seq % 4) as i32,
                    body(seq).as_bytes(),
                    "",
                    "",
                ))
                .await;
            assert_eq!(r.status, PutMessageStatus::PutOk, "cycle {cycle}");
            let a = r.append.expect("append");
            let expected_offset = all
                .iter()
                .filter(|x| x.queue_id == (seq % 4) as i32)
                .map(|x| x.queue_offset + 1)
                .max()
                .unwrap_or(0);
            assert!(
                a.queue_offset >= expected_offset,
                "queue offsets never go back"
            );
            all.push(Ack {
                seq,
                phys: a.first_phys_offset(),
                queue_id: (seq % 4) as i32,
                queue_offset: a.queue_offset,
            });
        });
        next_seq += 1;
        drop(store);
    }
    assert!(
        all.len() > CYCLES * 2,
        "the writer made progress ({} messages)",
        all.len()
    );
    assert!(
        from_snapshot > 0,
        "no kill came after a ConsumeQueue snapshot: that recovery was not exercised"
    );
    eprintln!(
        "crash test: {from_snapshot} of {CYCLES} recoveries from a snapshot; {} acknowledged messages over {CYCLES} SIGKILL cycles, all recovered",
        all.len()
    );
}
