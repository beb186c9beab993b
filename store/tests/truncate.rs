//! Runtime truncation of a replica's store (controller mode): cut, append different bytes,
//! read them back, restart.

mod common;

use std::time::Duration;

use common::{decode, message, small_config};
use stellmq_store::{AcceptAll, GetMessageStatus, MessageStore, PutMessageStatus, StoreError};

const T: Duration = Duration::from_secs(10);

async fn put(store: &MessageStore, queue: i32, body: &str) -> i64 {
    let r = store
        .put_message(message("CutTopic", queue, body.as_bytes(), body, "t"))
        .await;
    assert_eq!(r.status, PutMessageStatus::PutOk, "{:?}", r.remark);
    r.append.expect("append").first_phys_offset()
}

fn bodies(store: &MessageStore, queue: i32) -> Vec<String> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let r = store.get_messages("CutTopic", queue, offset, 32, &AcceptAll);
        match r.status {
            GetMessageStatus::Found => {
                for m in &r.messages {
                    out.push(String::from_utf8(decode(m).body.to_vec()).expect("utf8"));
                }
                offset = r.next_begin_offset;
            }
            _ => return out,
        }
    }
}

fn keys_found(store: &MessageStore, key: &str) -> usize {
    store
        .query_message("CutTopic", key, 32, 0, i64::MAX)
        .messages
        .len()
}

#[tokio::test]
async fn cut_append_different_bytes_read_back_and_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    // Enough to roll several 64 KiB segments, so the cut deletes whole files too.
    for i in 0..300 {
        put(&store, i % 2, &format!("kept-{i}-{}", "k".repeat(200))).await;
    }
    assert!(store.wait_dispatched(T));
    let cut = store.commit_log_max_offset();
    let (q0, q1) = (
        store.max_offset_in_queue("CutTopic", 0),
        store.max_offset_in_queue("CutTopic", 1),
    );
    for i in 0..400 {
        put(&store, i % 2, &format!("divergent-{i}-{}", "d".repeat(300))).await;
    }
    assert!(store.wait_dispatched(T));
    assert!(store.commit_log_file_count() >= 3);

    // A master's store (accepting writes) is never cut.
    assert!(matches!(
        store.truncate_to(cut),
        Err(StoreError::TruncateRefused(_))
    ));
    store.set_replica(true);
    let done = store
        .truncate_to(cut)
        .expect("truncate")
        .expect("something cut");
    assert_eq!(done.new_max, cut);
    assert_eq!(store.commit_log_max_offset(), cut);
    assert_eq!(store.max_offset_in_queue("CutTopic", 0), q0);
    assert_eq!(store.max_offset_in_queue("CutTopic", 1), q1);
    assert!(bodies(&store, 0).iter().all(|b| b.starts_with("kept-")));
    assert_eq!(bodies(&store, 0).len() + bodies(&store, 1).len(), 300);
    assert_eq!(
        keys_found(&store, "divergent-7-ddd"),
        0,
        "no index entry survives the cut"
    );
    assert_eq!(
        store.truncate_to(cut).expect("again"),
        None,
        "nothing past the end"
    );
    assert!(store.truncate_to(-1).is_err());

    // Different bytes at the same offsets, through the ordinary write path.
    store.set_replica(false);
    let mut first_new = None;
    for i in 0..50 {
        let at = put(&store, i % 2, &format!("new-{i}")).await;
        first_new.get_or_insert(at);
    }
    assert_eq!(first_new, Some(cut), "the next write starts at the cut");
    assert!(store.wait_dispatched(T));
    let expect = |q: i32| -> Vec<String> {
        let mut v: Vec<String> = (0..300)
            .filter(|i| i % 2 == q)
            .map(|i| format!("kept-{i}-{}", "k".repeat(200)))
            .collect();
        v.extend((0..50).filter(|i| i % 2 == q).map(|i| format!("new-{i}")));
        v
    };
    assert_eq!(bodies(&store, 0), expect(0));
    assert_eq!(bodies(&store, 1), expect(1));
    // Index entries are written by their own thread after dispatch: poll.
    let deadline = std::time::Instant::now() + T;
    while keys_found(&store, "new-3") == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(keys_found(&store, "new-3"), 1);
    drop(store);

    let store = MessageStore::open(small_config(dir.path())).expect("reopen");
    assert_eq!(bodies(&store, 0), expect(0));
    assert_eq!(bodies(&store, 1), expect(1));
    assert_eq!(keys_found(&store, "divergent-7-ddd"), 0);
}

#[tokio::test]
async fn a_cut_survives_a_crash_before_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    for i in 0..100 {
        put(&store, 0, &format!("kept-{i}")).await;
    }
    assert!(store.wait_dispatched(T));
    let cut = store.commit_log_max_offset();
    for i in 0..100 {
        put(&store, 0, &format!("divergent-{i}")).await;
    }
    assert!(store.wait_dispatched(T));
    store.set_replica(true);
    store.truncate_to(cut).expect("truncate");
    // Leave the abort file as a crash does: copy the files while the store runs.
    let copy = tempfile::tempdir().expect("copy");
    copy_dir(dir.path(), copy.path());
    drop(store);
    let store = MessageStore::open(small_config(copy.path())).expect("recover the copy");
    assert_eq!(store.commit_log_max_offset(), cut);
    let got = bodies(&store, 0);
    assert_eq!(got.len(), 100);
    assert!(got.iter().all(|b| b.starts_with("kept-")));
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "lock" {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
