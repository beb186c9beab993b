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
