use super::*;

/// Disk blocks of `path` in bytes (st_blocks is in 512-byte units).
fn disk_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("metadata").blocks() * 512
}

#[test]
fn a_sparse_file_takes_disk_a_page_at_a_time_as_it_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(segment_name(0));
    let size = 256 * PAGE_SIZE;
    let file = MappedFile::open_sparse(&path, 0, size, DirSync::Now).expect("open");
    assert_eq!(
        std::fs::metadata(&path).expect("metadata").len(),
        size as u64
    );
    assert_eq!(
        disk_bytes(&path),
        0,
        "nothing reserved before the first write"
    );
    assert_eq!(file.try_append_bytes(&[7u8; 20]).expect("room"), Some(0));
    assert_eq!(file.reserved(), RESERVE_CHUNK);
    let entries_per_page = PAGE_SIZE / 20;
    for _ in 1..=entries_per_page {
        file.try_append_bytes(&[7u8; 20]).expect("room");
    }
    assert_eq!(
        file.reserved(),
        2 * RESERVE_CHUNK,
        "reserved just ahead of the writes"
    );
    assert!(disk_bytes(&path) <= 2 * RESERVE_CHUNK as u64 + PAGE_SIZE as u64);
    assert_eq!(file.read(20, 20), Some(&[7u8; 20][..]));

    let whole =
        MappedFile::open(&dir.path().join(segment_name(size as i64)), 0, size).expect("open");
    assert_eq!(whole.reserved(), size, "an ordinary file is reserved whole");
}

#[test]
fn a_reopened_sparse_file_reserves_from_its_write_position_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(segment_name(0));
    let size = 64 * PAGE_SIZE;
    drop(MappedFile::open_sparse(&path, 0, size, DirSync::Now).expect("create"));
    let file = MappedFile::open_sparse(&path, 0, size, DirSync::Now).expect("reopen");
    assert_eq!(file.reserved(), 0);
    // Recovery found the queue's entries starting in its third page.
    file.set_positions(2 * PAGE_SIZE);
    file.try_append_bytes(&[1u8; 20]).expect("room");
    assert_eq!(file.reserved(), 3 * PAGE_SIZE);
    assert!(
        disk_bytes(&path) <= 2 * PAGE_SIZE as u64,
        "the empty pages stay empty"
    );
}

#[test]
fn append_read_truncate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(segment_name(4096));
    let file = Arc::new(MappedFile::open(&path, 4096, 3 * PAGE_SIZE).expect("open"));
    assert_eq!(
        path.file_name().and_then(|n| n.to_str()),
        Some("00000000000000004096")
    );
    assert_eq!(file.append_bytes(b"hello"), Some(0));
    assert_eq!(file.append_bytes(b"world"), Some(5));
    assert_eq!(file.read(0, 10), Some(&b"helloworld"[..]));
    assert_eq!(file.read(5, 6), None, "unpublished");
    let bytes = file.bytes(5, 5).expect("published");
    assert_eq!(bytes.as_ref(), b"world");
    assert!(file.append(3 * PAGE_SIZE, |_| {}).is_none());
    file.truncate_to(5);
    assert_eq!(file.wrote_position(), 5);
    assert_eq!(
        file.read_unpublished(5, 5),
        Some(&[0u8; 5][..]),
        "torn tail zeroed"
    );
    assert_eq!(
        bytes.as_ref(),
        &[0u8; 5][..],
        "(a slice of a truncated range sees the change)"
    );
    file.flush().expect("flush");
    assert_eq!(file.flushed_position(), 5);
    file.warm();
    assert_eq!(file.wrote_position(), 5);
}

/// The warmer's zeros never land on appended bytes: appends racing a warm of the same
/// file (several chunks long) all read back intact, and the tail past them is zeros.
#[test]
fn warming_while_appending_keeps_every_appended_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let size = 4 * WARM_CHUNK;
    let file = Arc::new(MappedFile::open(&dir.path().join("w"), 0, size).expect("open"));
    let warmer = {
        let file = file.clone();
        std::thread::spawn(move || file.warm())
    };
    let mut expected = Vec::new();
    for i in 0u32.. {
        let record = [(i % 251) as u8 + 1; 997];
        if file.append_bytes(&record).is_none() {
            break;
        }
        expected.extend_from_slice(&record);
    }
    warmer.join().expect("warmer");
    assert_eq!(file.read(0, expected.len()), Some(&expected[..]));
    let tail = size - expected.len();
    assert!(file
        .read_unpublished(expected.len(), tail)
        .is_some_and(|t| t.iter().all(|&b| b == 0)));
}

#[test]
fn atomics_are_aligned_and_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = MappedFile::open(&dir.path().join("idx"), 0, PAGE_SIZE).expect("open");
    file.atomic_u32(40)
        .expect("aligned")
        .store(7, Ordering::Release);
    assert!(file.atomic_u32(41).is_none());
    assert!(file.atomic_u64(PAGE_SIZE - 4).is_none());
    assert_eq!(
        file.atomic_u32(40).map(|a| a.load(Ordering::Acquire)),
        Some(7)
    );
}
