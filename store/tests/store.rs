//! The store through its public API: round trips, restart, torn tails, retention, disk full.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::{decode, message, small_config};
use parking_lot::Mutex;
use stellmq_protocol::message::java_string_hash;
use stellmq_store::{
    AcceptAll, GetMessageStatus, MessageArrivingListener, MessageStore, PutMessageStatus,
    StoreOptions,
};

const T: Duration = Duration::from_secs(10);

async fn fill(store: &MessageStore, n: usize) -> Vec<i64> {
    let mut phys = Vec::new();
    for i in 0..n {
        let topic = if i % 3 == 0 { "TopicB" } else { "TopicA" };
        let body = format!("body-{i}-{}", "x".repeat(i % 400));
        let r = store
            .put_message(message(
                topic,
                (i % 4) as i32,
                body.as_bytes(),
                &format!("k{i} shared"),
                if i % 2 == 0 { "even" } else { "odd" },
            ))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk, "{:?}", r.remark);
        phys.push(r.append.expect("append").first_phys_offset());
    }
    assert!(store.wait_dispatched(T));
    phys
}

fn read_all(store: &MessageStore, topic: &str, queue: i32) -> Vec<String> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let r = store.get_messages(topic, queue, offset, 32, &AcceptAll);
        match r.status {
            GetMessageStatus::Found => {
                for (m, qo) in r.messages.iter().zip(&r.queue_offsets) {
                    let rec = decode(m);
                    assert_eq!(rec.head.queue_offset, *qo);
                    assert_eq!(rec.topic, topic);
                    out.push(String::from_utf8(rec.body.to_vec()).expect("utf8"));
                }
                offset = r.next_begin_offset;
            }
            GetMessageStatus::OffsetOverflowOne => return out,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn expected(topic: &str, queue: i32, n: usize) -> Vec<String> {
    (0..n)
        .filter(|i| {
            (if i % 3 == 0 { "TopicB" } else { "TopicA" }) == topic && (i % 4) as i32 == queue
        })
        .map(|i| format!("body-{i}-{}", "x".repeat(i % 400)))
        .collect()
}

#[tokio::test]
async fn round_trip_across_segment_rolls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    let phys = fill(&store, 600).await;
    assert!(
        store.commit_log_file_count() >= 3,
        "segments rolled: {} files, max offset {}",
        store.commit_log_file_count(),
        store.commit_log_max_offset()
    );
    for topic in ["TopicA", "TopicB"] {
        for q in 0..4 {
            assert_eq!(
                read_all(&store, topic, q),
                expected(topic, q, 600),
                "{topic}/{q}"
            );
        }
    }
    // Lookup by physical offset.
    let rec = decode(&store.look_message_by_offset(phys[123]).expect("record"));
    assert_eq!(
        rec.body.as_ref(),
        format!("body-123-{}", "x".repeat(123)).as_bytes()
    );
    assert_eq!(rec.head.physical_offset, phys[123]);
    // Keys, across index files.
    let found = store.query_message("TopicA", "k125", 32, 0, i64::MAX);
    assert_eq!(found.messages.len(), 1);
    assert_eq!(decode(&found.messages[0]).head.physical_offset, phys[125]);
    assert!(
        store
            .query_message("TopicB", "k125", 32, 0, i64::MAX)
            .messages
            .is_empty(),
        "key is per topic"
    );
    let shared = store.query_message("TopicA", "shared", 1000, 0, i64::MAX);
    assert_eq!(shared.messages.len(), 400);
    assert_eq!(
        store
            .query_message("TopicA", "shared", 7, 0, i64::MAX)
            .messages
            .len(),
        7
    );
    // Tags: the ConsumeQueue holds Java's hash, so filtering needs no CommitLog read.
    let even = java_string_hash("even") as i64;
    let r = store.get_messages("TopicA", 1, 0, 32, &move |code: i64| code == even);
    assert_eq!(
        r.status,
        GetMessageStatus::NoMatchedMessage,
        "queue 1 of TopicA holds only odd messages"
    );
    assert!(r.next_begin_offset > 0);
    let entry = store.consume_queue_entry("TopicA", 2, 0).expect("entry");
    assert_eq!(entry.tags_code, even);
    // Offsets.
    assert_eq!(store.min_offset_in_queue("TopicA", 1), 0);
    assert_eq!(
        store.max_offset_in_queue("TopicA", 1),
        expected("TopicA", 1, 600).len() as i64
    );
    assert_eq!(store.max_offset_in_queue("Nope", 0), 0);
}

#[tokio::test]
async fn statuses_follow_rocketmq() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    assert_eq!(
        store.get_messages("T", 0, 0, 32, &AcceptAll).status,
        GetMessageStatus::NoMatchedLogicQueue
    );
    for i in 0..5 {
        store
            .put_message(message("T", 0, format!("m{i}").as_bytes(), "", ""))
            .await;
    }
    assert!(store.wait_dispatched(T));
    let r = store.get_messages("T", 0, 0, 2, &AcceptAll);
    assert_eq!(
        (
            r.status,
            r.messages.len(),
            r.next_begin_offset,
            r.min_offset,
            r.max_offset
        ),
        (GetMessageStatus::Found, 2, 2, 0, 5)
    );
    let r = store.get_messages("T", 0, 5, 32, &AcceptAll);
    assert_eq!(
        (r.status, r.next_begin_offset),
        (GetMessageStatus::OffsetOverflowOne, 5)
    );
    let r = store.get_messages("T", 0, 9, 32, &AcceptAll);
    assert_eq!(
        (r.status, r.next_begin_offset),
        (GetMessageStatus::OffsetOverflowBadly, 0)
    );
    assert_eq!(r.status.name(), "OFFSET_OVERFLOW_BADLY");
}

#[tokio::test]
async fn batches_get_consecutive_queue_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    store.put_message(message("T", 1, b"first", "", "")).await;
    let batch: Vec<_> = (0..10)
        .map(|i| message("T", 1, format!("b{i}").as_bytes(), &format!("bk{i}"), ""))
        .collect();
    let r = store.put_messages(batch).await;
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let append = r.append.expect("append");
    assert_eq!(append.queue_offset, 1);
    assert_eq!(append.phys_offsets.len(), 10);
    assert!(store.wait_dispatched(T));
    let got = store.get_messages("T", 1, 1, 32, &AcceptAll);
    assert_eq!(got.messages.len(), 10);
    for (i, m) in got.messages.iter().enumerate() {
        let rec = decode(m);
        assert_eq!(rec.head.queue_offset, 1 + i as i64);
        assert_eq!(rec.head.physical_offset, append.phys_offsets[i]);
    }
    assert_eq!(
        store
            .query_message("T", "bk7", 5, 0, i64::MAX)
            .messages
            .len(),
        1
    );
    let mixed = vec![message("T", 1, b"a", "", ""), message("T", 2, b"b", "", "")];
    assert_eq!(
        store.put_messages(mixed).await.status,
        PutMessageStatus::MessageIllegal
    );
    let too_big = message("T", 0, &vec![0u8; 17 * 1024], "", "");
    assert_eq!(
        store.put_message(too_big).await.status,
        PutMessageStatus::MessageIllegal
    );
}

#[tokio::test]
async fn restart_after_clean_stop_keeps_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let phys = {
        let store = MessageStore::open(small_config(dir.path())).expect("open");
        let phys = fill(&store, 300).await;
        store.shutdown();
        assert!(
            !dir.path().join("abort").exists(),
            "clean stop removes abort"
        );
        phys
    };
    let store = MessageStore::open(small_config(dir.path())).expect("reopen");
    for topic in ["TopicA", "TopicB"] {
        for q in 0..4 {
            assert_eq!(read_all(&store, topic, q), expected(topic, q, 300));
        }
    }
    assert_eq!(
        store
            .query_message("TopicA", "k299", 4, 0, i64::MAX)
            .messages
            .len(),
        1
    );
    let r = store
        .put_message(message("TopicA", 1, b"after restart", "again", ""))
        .await;
    let append = r.append.expect("stored");
    assert!(append.first_phys_offset() > phys[299]);
    assert_eq!(
        append.queue_offset,
        expected("TopicA", 1, 300).len() as i64,
        "queue offsets continue"
    );
}

#[tokio::test]
async fn torn_tail_is_truncated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (last_phys, end) = {
        let store = MessageStore::open(small_config(dir.path())).expect("open");
        let phys = fill(&store, 100).await;
        let end = store.commit_log_max_offset();
        store.shutdown();
        (phys[99], end)
    };
    // A half-written record, then garbage, after the last message; and a crash marker.
    let seg_size = 64 * 1024i64;
    let seg = dir
        .path()
        .join("commitlog")
        .join(format!("{:020}", end / seg_size * seg_size));
    let whole = std::fs::read(&seg).expect("segment");
    let last_pos = (last_phys % seg_size) as usize;
    let last_len = (end - last_phys) as usize;
    let mut torn = whole.clone();
    let tail = (end % seg_size) as usize;
    torn[tail..tail + last_len / 2].copy_from_slice(&whole[last_pos..last_pos + last_len / 2]);
    torn[tail + last_len / 2..tail + last_len / 2 + 7].copy_from_slice(b"garbage");
    std::fs::write(&seg, &torn).expect("tear");
    std::fs::write(dir.path().join("abort"), b"").expect("abort");

    let store = MessageStore::open(small_config(dir.path())).expect("recovers");
    assert_eq!(
        store.commit_log_max_offset(),
        end,
        "torn tail cut at the last valid record"
    );
    for topic in ["TopicA", "TopicB"] {
        for q in 0..4 {
            assert_eq!(read_all(&store, topic, q), expected(topic, q, 100));
        }
    }
    let r = store
        .put_message(message("TopicA", 1, b"new", "new-key", ""))
        .await;
    assert_eq!(r.status, PutMessageStatus::PutOk);
    assert_eq!(r.append.expect("append").first_phys_offset(), end);
    drop(store);
    let store = MessageStore::open(small_config(dir.path())).expect("reopens");
    assert!(store.wait_dispatched(T));
    assert_eq!(
        store
            .query_message("TopicA", "new-key", 4, 0, i64::MAX)
            .messages
            .len(),
        1
    );
}

#[tokio::test]
async fn retention_deletes_expired_files_and_their_queues() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    fill(&store, 900).await;
    let files_before = store.commit_log_file_count();
    assert!(files_before >= 4);
    // Age every segment but the last two by 100 hours.
    let mut segments: Vec<_> = std::fs::read_dir(dir.path().join("commitlog"))
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .collect();
    segments.sort();
    let old = SystemTime::now() - Duration::from_secs(100 * 3600);
    for seg in &segments[..segments.len() - 2] {
        std::fs::File::options()
            .write(true)
            .open(seg)
            .expect("open")
            .set_modified(old)
            .expect("mtime");
    }
    let deleted = store.clean_expired_files_now();
    assert!(deleted > 0, "expired segments deleted");
    assert!(store.commit_log_min_offset() > 0);
    let min = store.min_offset_in_queue("TopicA", 1);
    assert!(min > 0, "consume queue start moved past deleted data");
    let r = store.get_messages("TopicA", 1, 0, 32, &AcceptAll);
    assert_eq!(
        (r.status, r.next_begin_offset),
        (GetMessageStatus::OffsetTooSmall, min)
    );
    let r = store.get_messages("TopicA", 1, min, 32, &AcceptAll);
    assert_eq!(r.status, GetMessageStatus::Found);
    let cq_files = std::fs::read_dir(dir.path().join("consumequeue/TopicA/1"))
        .expect("dir")
        .count();
    assert!(
        cq_files < 4,
        "old consume queue files deleted too ({cq_files} left)"
    );
    // Files within their reserved time stay.
    assert_eq!(store.clean_expired_files_now(), 0);
}

#[tokio::test]
async fn full_disk_refuses_writes_until_space_returns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let usage = Arc::new(AtomicU64::new(10));
    let probe_usage = usage.clone();
    let mut config = small_config(dir.path());
    config.disk_space_warning_level_ratio = 90;
    let options = StoreOptions {
        disk_usage: Some(Arc::new(move |_: &std::path::Path| {
            Some(probe_usage.load(Ordering::SeqCst) as f64 / 100.0)
        })),
        ..StoreOptions::default()
    };
    let store = MessageStore::open_with(config, options).expect("open");
    assert_eq!(
        store
            .put_message(message("T", 0, b"ok", "", ""))
            .await
            .status,
        PutMessageStatus::PutOk
    );
    usage.store(95, Ordering::SeqCst);
    let deadline = std::time::Instant::now() + T;
    while !store.is_disk_full() {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = store.put_message(message("T", 0, b"no", "", "")).await;
    assert_eq!(refused.status, PutMessageStatus::ServiceNotAvailable);
    assert!(
        refused
            .remark
            .as_deref()
            .unwrap_or("")
            .contains("disk full"),
        "{:?}",
        refused.remark
    );
    usage.store(50, Ordering::SeqCst);
    while store.is_disk_full() {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        store
            .put_message(message("T", 0, b"again", "", ""))
            .await
            .status,
        PutMessageStatus::PutOk
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_flush_group_commits_concurrent_writers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = small_config(dir.path());
    config.flush_disk_type = stellmq_store::FlushDiskType::Sync;
    let store = Arc::new(MessageStore::open(config).expect("open"));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..200 {
        let store = store.clone();
        tasks.spawn(async move {
            store
                .put_message(message("T", i % 4, format!("m{i}").as_bytes(), "", ""))
                .await
                .status
        });
    }
    while let Some(status) = tasks.join_next().await {
        assert_eq!(status.expect("task"), PutMessageStatus::PutOk);
    }
    assert!(store.wait_dispatched(T));
    assert_eq!(
        (0..4)
            .map(|q| store.max_offset_in_queue("T", q))
            .sum::<i64>(),
        200
    );
}

struct Recorder(Mutex<Vec<(String, i32, i64)>>);

impl MessageArrivingListener for Recorder {
    fn arriving(&self, topic: &str, queue_id: i32, logical_offset: i64, _tags: i64, _ts: i64) {
        self.0
            .lock()
            .push((topic.to_owned(), queue_id, logical_offset));
    }
}

#[tokio::test]
async fn arrivals_are_announced_and_special_records_dispatched_right() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
    store.set_arriving_listener(recorder.clone());
    store.put_message(message("T", 3, b"one", "", "")).await;
    // A prepared transaction half: indexed, but not in any consume queue.
    let mut prepared = message("T", 3, b"half", "half-key", "");
    prepared.sys_flag = 0x4;
    store.put_message(prepared).await;
    // A delay message: its tags code is the delivery time.
    let mut delayed = message("SCHEDULE_TOPIC_XXXX", 2, b"later", "", "");
    delayed.properties.push_str("DELAY\u{1}3\u{2}");
    let stored_at = store
        .put_message(delayed)
        .await
        .append
        .expect("append")
        .store_timestamp;
    assert!(store.wait_dispatched(T));
    assert_eq!(
        store.max_offset_in_queue("T", 3),
        1,
        "the half message has no queue entry"
    );
    assert_eq!(
        store
            .query_message("T", "half-key", 4, 0, i64::MAX)
            .messages
            .len(),
        1
    );
    let entry = store
        .consume_queue_entry("SCHEDULE_TOPIC_XXXX", 2, 0)
        .expect("entry");
    assert_eq!(entry.tags_code, stored_at + 10_000, "level 3 = 10 s");
    let seen = recorder.0.lock().clone();
    assert_eq!(
        seen,
        vec![
            ("T".to_owned(), 3, 1),
            ("SCHEDULE_TOPIC_XXXX".to_owned(), 2, 1)
        ]
    );
}

#[tokio::test]
async fn offsets_by_time_and_earliest_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    let mut times = Vec::new();
    for i in 0..5 {
        let r = store
            .put_message(message("T", 0, format!("m{i}").as_bytes(), "", ""))
            .await;
        times.push(r.append.expect("append").store_timestamp);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert!(store.wait_dispatched(T));
    assert_eq!(store.earliest_message_time("T", 0), Some(times[0]));
    assert_eq!(store.offset_in_queue_by_time("T", 0, times[2]), 2);
    assert_eq!(
        store.offset_in_queue_by_time("T", 0, times[2] + 1),
        2,
        "closer to m2"
    );
    assert_eq!(
        store.offset_in_queue_by_time("T", 0, times[3] - 1),
        3,
        "closer to m3"
    );
    assert_eq!(store.offset_in_queue_by_time("T", 0, 0), 0);
    assert_eq!(store.offset_in_queue_by_time("T", 0, i64::MAX), 5);
    assert_eq!(store.message_store_timestamp("T", 0, 4), Some(times[4]));
}

#[tokio::test]
async fn a_second_store_on_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _store = MessageStore::open(small_config(dir.path())).expect("open");
    let err = MessageStore::open(small_config(dir.path()))
        .err()
        .expect("locked");
    assert!(err.to_string().contains("lock"), "{err}");
}

#[tokio::test]
async fn replicated_bytes_must_continue_the_log() {
    use stellmq_store::commitlog::ReplicaError;
    let dir = tempfile::tempdir().expect("dir");
    let config = small_config(dir.path());
    let segment = config.mapped_file_size_commit_log as i64;
    let store = MessageStore::open(config).expect("store");
    assert!(matches!(
        store.append_replicated(100, b"abc").await,
        Err(ReplicaError::Unaligned { offset: 100 })
    ));
    let end = store
        .append_replicated(segment, b"abcd")
        .await
        .expect("an empty log may start at a segment boundary");
    assert_eq!(end, segment + 4);
    assert_eq!(store.commit_log_min_offset(), segment);
    assert!(matches!(
        store.append_replicated(segment + 8, b"x").await,
        Err(ReplicaError::Diverged { local_max, .. }) if local_max == segment + 4
    ));
    let too_long = vec![0u8; segment as usize];
    assert!(matches!(
        store.append_replicated(segment + 4, &too_long).await,
        Err(ReplicaError::CrossesSegment { .. })
    ));
    assert_eq!(
        store.commit_log_max_offset(),
        segment + 4,
        "nothing partial was kept"
    );
}

/// ASYNC_FLUSH with flushCommitLogTimed (RocketMQ's default) flushes on its interval only;
/// untimed, appends wake the flusher as soon as flushCommitLogLeastPages are dirty.
#[tokio::test]
async fn async_flush_waits_for_its_interval_unless_untimed() {
    for timed in [true, false] {
        let dir = tempfile::tempdir().expect("dir");
        let store = MessageStore::open(stellmq_store::MessageStoreConfig {
            flush_interval_commit_log: 60_000,
            flush_commit_log_least_pages: 1,
            flush_commit_log_thorough_interval: 600_000,
            flush_commit_log_timed: timed,
            mapped_file_size_commit_log: 1 << 20,
            ..small_config(dir.path())
        })
        .expect("store");
        for i in 0..40 {
            let body = format!("{i}{}", "b".repeat(1000));
            let r = store
                .put_message(message("Flush", 0, body.as_bytes(), "", ""))
                .await;
            assert_eq!(r.status, PutMessageStatus::PutOk);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let unflushed = store.commit_log_unflushed_bytes();
        if timed {
            assert!(
                unflushed > 40_000,
                "timed: nothing flushed before the interval ({unflushed})"
            );
        } else {
            assert!(
                unflushed < 4096,
                "untimed: flushed as pages filled ({unflushed})"
            );
        }
        store.shutdown();
    }
}

#[tokio::test]
async fn topic_names_never_leave_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    let store = MessageStore::open(small_config(&dir.path().join("store"))).expect("open");
    for topic in ["../outside", "a/b", "..", ""] {
        let r = store.put_message(message(topic, 0, b"x", "", "")).await;
        assert_eq!(r.status, PutMessageStatus::MessageIllegal, "{topic:?}");
        assert!(
            matches!(
                store.delete_topic(topic),
                Err(stellmq_store::StoreError::UnsafeName(_))
            ),
            "{topic:?}"
        );
    }
    assert!(outside.exists(), "nothing outside the store was touched");
    let r = store.put_message(message("Fine", 0, b"x", "", "")).await;
    assert!(r.is_ok());
    assert!(store.wait_dispatched(std::time::Duration::from_secs(5)));
    assert_eq!(read_all(&store, "Fine", 0).len(), 1);
}

/// Writers racing across many segment rolls (each waiting for the allocator's file outside
/// the append lock, while the allocator warms the file they write) leave only whole,
/// CRC-valid records, and the log reopens to the same end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_across_segment_rolls_keep_every_record_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(MessageStore::open(small_config(dir.path())).expect("open"));
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..150 {
                let body = format!("w{w}-{i}-{}", "r".repeat((i * 13) % 700));
                let r = store
                    .put_message(message("Roll", w, body.as_bytes(), "", ""))
                    .await;
                assert_eq!(r.status, PutMessageStatus::PutOk, "{:?}", r.remark);
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
    assert!(store.commit_log_file_count() > 5, "many rolls");
    assert!(store.wait_dispatched(T));
    let end = store.commit_log_max_offset();
    let counts: Vec<usize> = (0..8).map(|q| read_all(&store, "Roll", q).len()).collect();
    assert_eq!(counts, vec![150; 8]);
    drop(store);
    std::fs::write(dir.path().join("abort"), b"").expect("crash marker");
    let store = MessageStore::open(small_config(dir.path())).expect("reopens");
    assert_eq!(
        store.commit_log_max_offset(),
        end,
        "every record validated (CRC) on recovery"
    );
}

/// Writers racing the warmer of a segment several warm chunks long: every record stays whole
/// (the dispatcher, which halts on an undecodable record, dispatches them all), repeatedly.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn appends_racing_the_warmer_stay_whole() {
    for _ in 0..20 {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = stellmq_store::MessageStoreConfig {
            mapped_file_size_commit_log: 8 * 1024 * 1024,
            ..small_config(dir.path())
        };
        let store = Arc::new(MessageStore::open(config).expect("open"));
        let mut tasks = Vec::new();
        for w in 0..4 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..50 {
                    let body = format!("w{w}-{i}-{}", "z".repeat((i * 97) % 3000));
                    let r = store
                        .put_message(message("Warm", w, body.as_bytes(), "", ""))
                        .await;
                    assert_eq!(r.status, PutMessageStatus::PutOk, "{:?}", r.remark);
                }
            }));
        }
        for t in tasks {
            t.await.expect("writer");
        }
        assert!(
            store.wait_dispatched(Duration::from_secs(3)),
            "every record dispatched"
        );
        let counts: Vec<usize> = (0..4).map(|q| read_all(&store, "Warm", q).len()).collect();
        assert_eq!(counts, vec![50; 4]);
    }
}

/// Prologue records (the broker's metadata journal) are appended, in order, before the
/// next append's own records, or on their own; a replica's store refuses them.
#[tokio::test]
async fn prologue_records_precede_the_next_append() {
    let dir = tempfile::tempdir().expect("dir");
    let store = MessageStore::open(small_config(dir.path())).expect("store");
    assert_eq!(store.append_prologue().await, None, "nothing queued");
    for meta in ["meta-1", "meta-2"] {
        assert!(store.queue_prologue(message("Journal", 0, meta.as_bytes(), "", "")));
    }
    let sent = store
        .put_message(message("TopicA", 0, b"after", "", ""))
        .await;
    assert_eq!(sent.status, PutMessageStatus::PutOk);
    let message_at = sent.append.expect("append").first_phys_offset();
    assert!(store.wait_dispatched(T));
    assert_eq!(read_all(&store, "Journal", 0), ["meta-1", "meta-2"]);
    let r = store.get_messages("Journal", 0, 0, 32, &AcceptAll);
    for m in &r.messages {
        assert!(
            decode(m).head.physical_offset < message_at,
            "before the message"
        );
    }

    assert!(store.queue_prologue(message("Journal", 0, b"meta-3", "", "")));
    let end = store.append_prologue().await.expect("appended on its own");
    assert_eq!(end, store.commit_log_max_offset());
    assert!(store.wait_dispatched(T));
    assert_eq!(read_all(&store, "Journal", 0).len(), 3);

    store.set_replica(true);
    assert!(
        !store.queue_prologue(message("Journal", 0, b"meta-4", "", "")),
        "a slave's log is its master's"
    );
}

/// A confirm offset holds back what is not on every replica: the messages are stored and
/// numbered at once, but consumers see them only once the offset covers them whole.
#[tokio::test]
async fn messages_past_the_confirm_offset_are_not_consumable_until_it_covers_them() {
    let dir = tempfile::tempdir().expect("dir");
    let store = MessageStore::open(small_config(dir.path())).expect("store");
    let first = store
        .put_message(message("TopicC", 0, b"one", "", ""))
        .await;
    let first_end = first.append.expect("append").end_offset;
    assert!(store.wait_dispatched(T));

    store.set_confirm_offset(first_end);
    let second = store
        .put_message(message("TopicC", 0, b"two", "", ""))
        .await;
    let second = second.append.expect("append");
    assert_eq!(second.queue_offset, 1, "numbered at once");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(read_all(&store, "TopicC", 0), ["one"], "held back");

    // Part of the record is not enough.
    store.set_confirm_offset(second.end_offset - 1);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        read_all(&store, "TopicC", 0),
        ["one"],
        "a record is dispatched whole"
    );

    store.set_confirm_offset(second.end_offset);
    assert!(store.wait_dispatched(T));
    assert_eq!(read_all(&store, "TopicC", 0), ["one", "two"]);
    store.set_confirm_offset(i64::MAX);
    assert_eq!(store.confirm_offset(), i64::MAX);
}

/// A controller-mode broker reopens its store holding back the undispatched tail: its role
/// (and the new master's history) decides what of it survives.
#[tokio::test]
async fn a_store_opened_holding_dispatch_keeps_its_undispatched_tail_back() {
    let dir = tempfile::tempdir().expect("dir");
    {
        let store = MessageStore::open(small_config(dir.path())).expect("store");
        store
            .put_message(message("TopicH", 0, b"confirmed", "", ""))
            .await;
        assert!(store.wait_dispatched(T));
        store.set_confirm_offset(store.commit_log_max_offset());
        store
            .put_message(message("TopicH", 0, b"unconfirmed", "", ""))
            .await;
    }
    let options = StoreOptions {
        hold_dispatch: true,
        ..StoreOptions::default()
    };
    let store = MessageStore::open_with(small_config(dir.path()), options).expect("reopen");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(read_all(&store, "TopicH", 0), ["confirmed"]);
    store.set_confirm_offset(i64::MAX);
    assert!(store.wait_dispatched(T));
    assert_eq!(read_all(&store, "TopicH", 0), ["confirmed", "unconfirmed"]);
}
