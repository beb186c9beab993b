//! Recovery of damaged CommitLogs: a short TOTALSIZE record, a bit flip in the middle of
//! the log, a bad end-of-file blank. The store must open, keep every valid record before
//! the damage, save what it drops, and keep ConsumeQueues and the index consistent with
//! the log it kept.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{decode, message, small_config};
use stellmq_protocol::message::record::MAGIC_V1;
use stellmq_store::{AcceptAll, GetMessageStatus, MessageStore, PutMessageStatus};

const T: Duration = Duration::from_secs(10);
const SEG: i64 = 64 * 1024;

/// Writes `n` messages to one queue; returns each one's physical offset and the log end.
async fn write(dir: &Path, n: usize) -> (Vec<i64>, i64) {
    let store = MessageStore::open(small_config(dir)).expect("open");
    let mut phys = Vec::new();
    for i in 0..n {
        let body = format!("m{i}-{}", "y".repeat(500));
        let r = store
            .put_message(message("Rec", 0, body.as_bytes(), &format!("key{i}"), ""))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk);
        phys.push(r.append.expect("append").first_phys_offset());
    }
    assert!(store.wait_dispatched(T));
    let end = store.commit_log_max_offset();
    store.shutdown();
    (phys, end)
}

fn segment(dir: &Path, offset: i64) -> PathBuf {
    dir.join("commitlog")
        .join(format!("{:020}", offset / SEG * SEG))
}

/// Rewrites bytes of the CommitLog at a global offset.
fn patch(dir: &Path, offset: i64, bytes: &[u8]) {
    let path = segment(dir, offset);
    let mut data = std::fs::read(&path).expect("segment");
    let pos = (offset % SEG) as usize;
    data[pos..pos + bytes.len()].copy_from_slice(bytes);
    std::fs::write(&path, data).expect("patch");
}

fn crash_marker(dir: &Path) {
    std::fs::write(dir.join("abort"), b"").expect("abort");
}

/// Bodies of the queue, in order.
fn bodies(store: &MessageStore) -> Vec<String> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let r = store.get_messages("Rec", 0, offset, 32, &AcceptAll);
        match r.status {
            GetMessageStatus::Found => {
                for m in &r.messages {
                    let body = decode(m).body;
                    let text = String::from_utf8_lossy(&body).into_owned();
                    out.push(text.split('-').next().unwrap_or("").to_owned());
                }
                offset = r.next_begin_offset;
            }
            _ => return out,
        }
    }
}

fn dropped_dirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("commitlog"))
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("dropped-"))
        })
        .collect()
}

fn expected(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("m{i}")).collect()
}

#[tokio::test]
async fn a_short_totalsize_record_is_cut_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, end) = write(dir.path(), 20).await;
    for total in [1i32, 8, 35, 36, 90] {
        let mut head = total.to_be_bytes().to_vec();
        head.extend_from_slice(&MAGIC_V1.to_be_bytes());
        patch(dir.path(), end, &head);
        crash_marker(dir.path());
        let store = MessageStore::open(small_config(dir.path())).expect("opens");
        assert_eq!(store.commit_log_max_offset(), end, "TOTALSIZE {total}");
        assert_eq!(bodies(&store), expected(20));
        store.shutdown();
    }
}

#[tokio::test]
async fn a_mid_log_bit_flip_keeps_what_precedes_it_and_saves_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 400 records of ~650 bytes: four 64 KiB segments.
    let (phys, end) = write(dir.path(), 400).await;
    assert!(end > 3 * SEG, "spans segments: {end}");
    // Flip a body byte of a record in the second segment.
    let victim = phys
        .iter()
        .position(|p| *p > SEG + 1000)
        .expect("a record in the second segment");
    let body_byte = phys[victim] + 200;
    let path = segment(dir.path(), body_byte);
    let mut data = std::fs::read(&path).expect("segment");
    data[(body_byte % SEG) as usize] ^= 0x40;
    std::fs::write(&path, data).expect("flip");
    crash_marker(dir.path());
    // Make recovery start before the flip, as after a crash with an old checkpoint.
    std::fs::write(dir.path().join("checkpoint"), [0u8; 24]).expect("checkpoint");

    let store = MessageStore::open(small_config(dir.path())).expect("opens");
    assert_eq!(
        store.commit_log_max_offset(),
        phys[victim],
        "cut at the damaged record"
    );
    assert_eq!(
        bodies(&store),
        expected(victim),
        "everything before it is served"
    );
    let saved = dropped_dirs(dir.path());
    assert_eq!(saved.len(), 1, "the dropped data is kept for inspection");
    let saved_files = std::fs::read_dir(&saved[0]).expect("saved").count();
    assert!(
        saved_files >= 2,
        "the segment's tail and later segments: {saved_files}"
    );
    // The index forgot the dropped records.
    assert!(store
        .query_message("Rec", &format!("key{}", victim + 1), 8, 0, i64::MAX)
        .messages
        .is_empty());
    assert_eq!(
        store
            .query_message("Rec", &format!("key{}", victim - 1), 8, 0, i64::MAX)
            .messages
            .len(),
        1
    );
    // New writes reuse the offsets; old keys never find the new records.
    for i in 0..5 {
        let r = store
            .put_message(message(
                "Rec",
                0,
                format!("new{i}-z").as_bytes(),
                &format!("fresh{i}"),
                "",
            ))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk);
    }
    assert!(store.wait_dispatched(T));
    let mut want = expected(victim);
    want.extend((0..5).map(|i| format!("new{i}")));
    assert_eq!(bodies(&store), want, "queue offsets continue after the cut");
    assert!(store
        .query_message("Rec", &format!("key{victim}"), 8, 0, i64::MAX)
        .messages
        .is_empty());
    assert_eq!(
        store
            .query_message("Rec", "fresh0", 8, 0, i64::MAX)
            .messages
            .len(),
        1
    );
    store.shutdown();
    // And it all survives a clean restart.
    let store = MessageStore::open(small_config(dir.path())).expect("reopens");
    assert_eq!(bodies(&store), want);
}

#[tokio::test]
async fn a_blank_that_does_not_reach_the_segment_end_is_damage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, end) = write(dir.path(), 10).await;
    let mut head = 64i32.to_be_bytes().to_vec();
    head.extend_from_slice(&0xCBD4_3194u32.to_be_bytes());
    patch(dir.path(), end, &head);
    crash_marker(dir.path());
    let store = MessageStore::open(small_config(dir.path())).expect("opens");
    assert_eq!(store.commit_log_max_offset(), end);
    assert_eq!(bodies(&store), expected(10));
    let r = store
        .put_message(message("Rec", 0, b"m10-after", "", ""))
        .await;
    assert_eq!(r.status, PutMessageStatus::PutOk);
}

/// Messages in `queues` queues of topic `Many`, `per_queue` each, body `q<i>-m<j>`.
async fn fill_many(store: &MessageStore, queues: i32, per_queue: usize) {
    for q in 0..queues {
        for j in 0..per_queue {
            let body = format!("q{q}-m{j}");
            let r = store
                .put_message(message("Many", q, body.as_bytes(), "", "TagA"))
                .await;
            assert_eq!(r.status, PutMessageStatus::PutOk);
        }
    }
    assert!(store.wait_dispatched(T));
}

fn first_body(store: &MessageStore, queue: i32, offset: i64) -> String {
    let r = store.get_messages("Many", queue, offset, 1, &AcceptAll);
    assert_eq!(
        r.status,
        GetMessageStatus::Found,
        "queue {queue} at {offset}"
    );
    String::from_utf8(decode(&r.messages[0]).body.to_vec()).expect("utf8")
}

/// A clean stop summarizes the ConsumeQueues: the next start opens none of their files,
/// and every queue answers as before and takes new messages. After a crash the summary is
/// not used (nor kept for a later start), and the queues are recovered from their files.
#[tokio::test]
async fn a_clean_restart_opens_no_consume_queue_file_and_a_crash_ignores_the_summary() {
    let dir = tempfile::tempdir().expect("dir");
    let summary = dir.path().join("consumequeue.summary");
    {
        let store = MessageStore::open(small_config(dir.path())).expect("open");
        fill_many(&store, 40, 3).await;
        store.shutdown();
    }
    assert!(summary.exists(), "a clean stop writes the summary");
    {
        let store = MessageStore::open(small_config(dir.path())).expect("reopen");
        assert!(!summary.exists(), "taken as it is read");
        let (open, all) = store.consume_queues_open();
        assert_eq!(all, 40, "every queue known");
        assert_eq!(open, 0, "none of their files opened");
        for q in [0, 17, 39] {
            assert_eq!(store.max_offset_in_queue("Many", q), 3);
            assert_eq!(first_body(&store, q, 2), format!("q{q}-m2"));
        }
        fill_many(&store, 40, 1).await;
        assert_eq!(first_body(&store, 39, 3), "q39-m0");
        store.shutdown();
    }
    // A crash after a clean stop's summary: the files are read, the summary dropped.
    crash_marker(dir.path());
    {
        let store = MessageStore::open(small_config(dir.path())).expect("recover");
        assert!(
            !summary.exists(),
            "a start after a crash leaves no summary behind"
        );
        assert_eq!(store.max_offset_in_queue("Many", 5), 4);
        assert_eq!(first_body(&store, 5, 3), "q5-m0");
        store.shutdown();
    }
    // A damaged summary is not trusted either.
    std::fs::write(&summary, b"SMQCQS01 garbage").expect("damage");
    let store = MessageStore::open(small_config(dir.path())).expect("reopen");
    assert_eq!(store.max_offset_in_queue("Many", 5), 4);
    assert_eq!(first_body(&store, 5, 3), "q5-m0");
    store.shutdown();
}

/// `per_queue` messages in each of `queues` queues of `topic`, bodies `q<i>-m<j>` with `j`
/// from `first`.
async fn fill(store: &MessageStore, topic: &str, queues: i32, first: usize, per_queue: usize) {
    for q in 0..queues {
        for j in first..first + per_queue {
            let body = format!("q{q}-m{j}");
            let r = store
                .put_message(message(topic, q, body.as_bytes(), "", "TagA"))
                .await;
            assert_eq!(r.status, PutMessageStatus::PutOk);
        }
    }
    assert!(store.wait_dispatched(T));
}

fn body_at(store: &MessageStore, topic: &str, queue: i32, offset: i64) -> String {
    let r = store.get_messages(topic, queue, offset, 1, &AcceptAll);
    assert_eq!(
        r.status,
        GetMessageStatus::Found,
        "{topic} queue {queue} at {offset}"
    );
    String::from_utf8(decode(&r.messages[0]).body.to_vec()).expect("utf8")
}

/// A running store's snapshot lets a start after a crash skip every queue's files: queues
/// untouched since the snapshot stay closed, and everything written after it (more entries,
/// files rolled over, a queue created) is dispatched again from the CommitLog.
#[tokio::test]
async fn a_crash_start_uses_the_running_snapshot_and_redispatches_what_came_after() {
    let dir = tempfile::tempdir().expect("dir");
    let summary = dir.path().join("consumequeue.summary");
    let kept = dir.path().join("snapshot.kept");
    {
        let mut config = small_config(dir.path());
        config.consume_queue_snapshot_interval = 0;
        let store = MessageStore::open(config).expect("open");
        fill(&store, "Quiet", 30, 0, 2).await;
        fill(&store, "Busy", 4, 0, 30).await;
        assert_eq!(store.snapshot_consume_queues().expect("snapshot"), 34);
        std::fs::copy(&summary, &kept).expect("keep the snapshot");
        // After the snapshot: each Busy queue rolls into new files (50 entries a file), and
        // a topic appears.
        fill(&store, "Busy", 4, 30, 45).await;
        fill(&store, "Late", 2, 0, 3).await;
        store.shutdown();
    }
    // As if the broker had died after the snapshot: its page cache kept what was written.
    std::fs::rename(&kept, &summary).expect("the snapshot back");
    crash_marker(dir.path());
    let store = MessageStore::open(small_config(dir.path())).expect("recover");
    assert!(!summary.exists(), "taken as it is read");
    let (open, all) = store.consume_queues_open();
    assert_eq!(all, 36, "every queue known");
    assert!(
        open <= 6,
        "only queues written after the snapshot were opened ({open} open)"
    );
    for q in [0, 13, 29] {
        assert_eq!(store.max_offset_in_queue("Quiet", q), 2);
        assert_eq!(body_at(&store, "Quiet", q, 1), format!("q{q}-m1"));
    }
    for q in 0..4 {
        assert_eq!(store.max_offset_in_queue("Busy", q), 75);
        for offset in [0, 29, 30, 49, 50, 74] {
            assert_eq!(
                body_at(&store, "Busy", q, offset),
                format!("q{q}-m{offset}")
            );
        }
    }
    for q in 0..2 {
        assert_eq!(store.max_offset_in_queue("Late", q), 3);
        assert_eq!(body_at(&store, "Late", q, 2), format!("q{q}-m2"));
    }
    // And the queues go on where they were.
    fill(&store, "Busy", 1, 75, 1).await;
    assert_eq!(store.max_offset_in_queue("Busy", 0), 76);
    assert_eq!(body_at(&store, "Busy", 0, 75), "q0-m75");
    store.shutdown();
}
