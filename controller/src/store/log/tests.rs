use openraft::{CommittedLeaderId, EntryPayload, LogId as RaftLogId, RaftLogReader};

use super::*;
use crate::state::Event;

fn entry(term: u64, index: u64) -> Entry {
    Entry {
        log_id: RaftLogId::new(CommittedLeaderId::new(term, 0), index),
        payload: EntryPayload::Normal(Event::CleanBrokerData {
            broker_name: format!("b{index}"),
            broker_ids: None,
        }),
    }
}

async fn append(store: &mut LogStore, entries: Vec<Entry>) {
    let data = store.data.clone();
    let records: Vec<LogRecord> = entries.iter().cloned().map(LogRecord::Entry).collect();
    {
        let mut d = data.lock();
        for e in &entries {
            d.entries.insert(e.log_id.index, e.clone());
        }
    }
    store.write(records).await.expect("append");
}

#[tokio::test]
async fn recovers_entries_vote_truncation_and_purge() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut store = LogStore::open(dir.path()).expect("open");
        append(&mut store, (1..=5).map(|i| entry(1, i)).collect()).await;
        store.save_vote(&Vote::new(2, 1)).await.expect("vote");
        store
            .truncate(RaftLogId::new(CommittedLeaderId::new(1, 0), 4))
            .await
            .expect("truncate");
        store
            .purge(RaftLogId::new(CommittedLeaderId::new(1, 0), 1))
            .await
            .expect("purge");
        append(&mut store, vec![entry(2, 4)]).await;
    }
    let mut store = LogStore::open(dir.path()).expect("reopen");
    assert_eq!(
        store.read_vote().await.expect("vote"),
        Some(Vote::new(2, 1))
    );
    let entries = store.try_get_log_entries(0..100).await.expect("read");
    let ids: Vec<(u64, u64)> = entries
        .iter()
        .map(|e| (e.log_id.leader_id.term, e.log_id.index))
        .collect();
    assert_eq!(ids, vec![(1, 2), (1, 3), (2, 4)]);
    let state = store.get_log_state().await.expect("state");
    assert_eq!(state.last_purged_log_id.map(|l| l.index), Some(1));
    assert_eq!(state.last_log_id.map(|l| l.index), Some(4));
}

#[tokio::test]
async fn torn_tail_is_dropped_and_appends_continue() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut store = LogStore::open(dir.path()).expect("open");
        append(&mut store, (1..=3).map(|i| entry(1, i)).collect()).await;
    }
    let path = dir.path().join("log");
    let len = std::fs::metadata(&path).expect("meta").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open file");
    file.set_len(len - 3).expect("tear the last record");
    drop(file);
    {
        let mut store = LogStore::open(dir.path()).expect("recover");
        assert_eq!(store.entry_count(), 2);
        append(&mut store, vec![entry(1, 3)]).await;
    }
    let store = LogStore::open(dir.path()).expect("reopen");
    assert_eq!(
        store.entry_count(),
        3,
        "the append after recovery follows the intact records"
    );
}

#[tokio::test]
async fn an_unreadable_record_is_cut_with_everything_after_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut store = LogStore::open(dir.path()).expect("open");
        append(&mut store, vec![entry(1, 1)]).await;
    }
    let path = dir.path().join("log");
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.extend(records::encode(b"not a record"));
    std::fs::write(&path, &bytes).expect("write");
    {
        let mut store = LogStore::open(dir.path()).expect("recover");
        assert_eq!(store.entry_count(), 1);
        append(&mut store, vec![entry(1, 2)]).await;
    }
    let store = LogStore::open(dir.path()).expect("reopen");
    assert_eq!(
        store.entry_count(),
        2,
        "the append after recovery is readable"
    );
}

#[test]
fn arbitrary_bytes_recover_without_panicking() {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) as u8
    };
    for round in 0..200 {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bytes: Vec<u8> = (0..(round * 7) % 512).map(|_| next()).collect();
        if round % 3 == 0 {
            // A valid frame around junk JSON, then junk.
            let mut framed = records::encode(&bytes);
            framed.extend(&bytes);
            bytes = framed;
        }
        std::fs::write(dir.path().join("log"), &bytes).expect("write");
        let store = LogStore::open(dir.path()).expect("recovery never fails on content");
        assert_eq!(store.entry_count(), 0);
    }
}
