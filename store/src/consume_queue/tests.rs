use super::*;

const FILE: usize = ENTRY_SIZE * 4;

#[test]
fn entries_fill_files_in_order_and_gaps_are_blanks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
    let cq = store.find_or_create("T", 0).expect("queue");
    // Across a file roll (4 entries per file), then a gap of two.
    for logical in 0..6 {
        cq.put(logical, logical * 100, 100, 7).expect("put");
    }
    cq.put(8, 800, 100, 7).expect("put past a gap");
    cq.put(3, 999, 1, 1).expect("an old offset is ignored");
    assert_eq!(cq.max_offset(), 9);
    assert_eq!(cq.entry(3).map(|e| e.phys_offset), Some(300));
    assert_eq!(cq.entry(5).map(|e| e.phys_offset), Some(500));
    assert_eq!(cq.entry(6).map(|e| e.size), Some(BLANK_SIZE));
    assert_eq!(cq.entry(8).map(|e| e.phys_offset), Some(800));
}

fn put_all(cq: &ConsumeQueue, logicals: std::ops::Range<i64>) {
    for logical in logicals {
        cq.put(logical, 1_000 + logical * 100, 100, logical)
            .expect("put");
    }
}

fn phys(cq: &ConsumeQueue, logical: i64) -> Option<i64> {
    cq.entry(logical).map(|e| e.phys_offset)
}

#[test]
fn an_idle_queue_closes_answers_its_bounds_closed_and_reopens_where_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
    let cq = store.find_or_create("T", 0).expect("queue");
    put_all(&cq, 0..6);
    cq.flush().expect("flush");
    assert!(!cq.close_if_idle(Duration::from_secs(60)), "just used");
    assert!(cq.close_if_idle(Duration::ZERO));
    assert_eq!(store.open_count(), (0, 1));
    assert_eq!((cq.min_offset(), cq.max_offset()), (0, 6));
    assert!(!cq.is_open(), "bounds are answered without the files");
    assert_eq!(cq.unflushed(), 0);

    put_all(&cq, 6..9);
    assert!(cq.is_open(), "an append reopens it");
    assert_eq!(store.open_count(), (1, 1));
    for logical in 0..9 {
        assert_eq!(
            phys(&cq, logical),
            Some(1_000 + logical * 100),
            "entry {logical}"
        );
    }
    assert_eq!(cq.max_offset(), 9);

    cq.flush().expect("flush");
    assert!(cq.close_if_idle(Duration::ZERO));
    assert_eq!(phys(&cq, 7), Some(1_700), "a read reopens it too");
}

#[test]
fn a_queue_in_use_or_not_flushed_stays_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
    let cq = store.find_or_create("T", 0).expect("queue");
    put_all(&cq, 0..2);
    assert!(!cq.close_if_idle(Duration::ZERO), "unflushed entries");
    cq.flush().expect("flush");
    let in_use = cq.segments().expect("open");
    assert!(!cq.close_if_idle(Duration::ZERO), "a user holds the files");
    drop(in_use);
    assert!(cq.close_if_idle(Duration::ZERO));
}

#[test]
fn a_loaded_store_has_every_queue_closed_recovered_and_retention_leaves_them_closed() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
        for queue in 0..3 {
            let cq = store.find_or_create("T", queue).expect("queue");
            put_all(&cq, 0..6);
            cq.flush().expect("flush");
        }
    }
    // The CommitLog's valid range ends inside entry 5 of every queue.
    let store = ConsumeQueueStore::load(dir.path(), FILE, 0..1_550).expect("reload");
    assert_eq!(store.open_count(), (0, 3));
    let cq = store.find("T", 1).expect("queue");
    assert_eq!(cq.max_offset(), 5, "entry 5 ends beyond the log and is cut");
    assert_eq!(cq.max_phys_offset(), 1_500);

    // Retention below the first entry changes nothing and opens nothing.
    cq.correct_min_offset(1_000);
    assert_eq!(cq.delete_expired(1_000), 0);
    assert!(!cq.is_open());
    // Past the first three entries, the queue opens to move its min offset.
    assert_eq!(cq.delete_expired(1_250), 0);
    assert_eq!(cq.min_offset(), 3);
    assert_eq!(phys(&cq, 3), Some(1_300));
    // Past the first file (entries 0-3), closed again: the file goes.
    cq.flush().expect("flush");
    assert!(cq.close_if_idle(Duration::ZERO));
    assert_eq!(cq.delete_expired(1_400), 1);
    assert_eq!(cq.min_offset(), 4);
}

#[test]
fn closing_while_the_dispatcher_appends_and_readers_read_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = ENTRY_SIZE * 1024;
    let store = ConsumeQueueStore::load(dir.path(), file, 0..i64::MAX).expect("load");
    let cq = store.find_or_create("T", 0).expect("queue");
    let closes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let closer = {
        let (cq, stop, closes) = (cq.clone(), stop.clone(), closes.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                let _ = cq.flush();
                if cq.close_if_idle(Duration::ZERO) {
                    closes.fetch_add(1, Ordering::AcqRel);
                }
                std::thread::yield_now();
            }
        })
    };
    let reader = {
        let (cq, stop) = (cq.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                let max = cq.max_offset();
                if max > 0 {
                    let logical = max - 1;
                    let entry = cq.entry(logical).expect("a written entry is readable");
                    assert_eq!(entry.phys_offset, 1_000 + logical * 100);
                }
            }
        })
    };
    // Bursts of appends, each followed by a close (readers keep reading throughout).
    let mut written = 0;
    for round in 1..=50 {
        put_all(&cq, written..written + 100);
        written += 100;
        let deadline = Instant::now() + Duration::from_secs(5);
        while closes.load(Ordering::Acquire) < round && Instant::now() < deadline {
            std::thread::yield_now();
        }
    }
    stop.store(true, Ordering::Release);
    closer.join().expect("closer");
    reader.join().expect("reader");
    assert!(
        closes.load(Ordering::Acquire) >= 50,
        "closed {closes:?} times"
    );
    assert_eq!(cq.max_offset(), written);
    for logical in 0..written {
        assert_eq!(
            phys(&cq, logical),
            Some(1_000 + logical * 100),
            "entry {logical}"
        );
    }
}

#[test]
fn a_new_queue_leaves_its_directory_syncs_to_the_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
    store.sync_new_dirs().expect("sync");
    let cq = store.find_or_create("Fresh", 3).expect("queue");
    put_all(&cq, 0..1);
    let pending = store.dir_syncs.pending();
    let expected = [
        dir.path().to_owned(),
        dir.path().join("Fresh"),
        dir.path().join("Fresh/3"),
    ];
    assert_eq!(
        pending,
        expected.into_iter().collect(),
        "the new entries of each directory"
    );
    store.sync_new_dirs().expect("sync");
    assert!(store.dir_syncs.pending().is_empty());
}

#[test]
fn a_queue_deleted_before_the_flush_leaves_nothing_to_sync_and_no_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
    let cq = store.find_or_create("Brief", 0).expect("queue");
    put_all(&cq, 0..1);
    drop(cq);
    store.delete_topic("Brief").expect("deleted");
    store
        .sync_new_dirs()
        .expect("a vanished directory is not an error");
    assert!(store.dir_syncs.pending().is_empty());
}

#[test]
fn a_burst_of_new_queues_is_synced_in_one_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ConsumeQueueStore::load(dir.path(), FILE, 0..i64::MAX).expect("load");
    store.sync_new_dirs().expect("sync");
    for queue in 0..100 {
        put_all(&store.find_or_create("Burst", queue).expect("queue"), 0..1);
    }
    assert!(store.dir_syncs.pending().len() > 100);
    store.sync_new_dirs().expect("one syncfs");
    assert!(store.dir_syncs.pending().is_empty());
}
