use super::*;
use stellmq_remoting::protocol::message::{body_crc, RecordHead};

const SEGMENT: usize = 4096;
const MAX_MESSAGE: usize = 1024;

fn record(offset: i64, body: &[u8]) -> Vec<u8> {
    let head = RecordHead {
        body_crc: body_crc(body),
        queue_id: 0,
        flag: 0,
        queue_offset: 0,
        physical_offset: offset,
        sys_flag: 0,
        born_timestamp: 1,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_timestamp: 2,
        store_host: "127.0.0.1:2".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    let mut out = Vec::new();
    record::encode_record(&head, body, "T", "", &mut out).unwrap();
    out
}

fn blank(len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    out[..4].copy_from_slice(&(len as i32).to_be_bytes());
    out[4..8].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
    out
}

/// Records of varying sizes from `start` up to the segment end (closed by a blank), then
/// a few in the next segment.
fn stream(start: i64) -> Vec<u8> {
    let mut log = Vec::new();
    let mut offset = start;
    let mut i = 0;
    loop {
        let r = record(offset, &vec![b'a' + (i % 26) as u8; 50 + (i * 97) % 600]);
        let end = (offset / SEGMENT as i64 + 1) * SEGMENT as i64;
        if offset + r.len() as i64 + 8 > end {
            log.extend(blank((end - offset) as usize));
            offset = end;
            break;
        }
        offset += r.len() as i64;
        log.extend(r);
        i += 1;
    }
    for j in 0..3 {
        let r = record(offset, &vec![b'z'; 10 + j * 300]);
        offset += r.len() as i64;
        log.extend(r);
    }
    log
}

/// What the appends write, blanks as header plus zeros.
fn written(appends: &[Append], at: &mut i64, out: &mut Vec<u8>) {
    for a in appends {
        match a {
            Append::Records { offset, bytes } => {
                assert_eq!(*offset, *at);
                out.extend_from_slice(bytes);
            }
            Append::Blank { offset, len } => {
                assert_eq!(*offset, *at);
                out.extend(blank(*len));
            }
        }
        *at = a.end();
    }
}

fn replay(start: i64, log: &[u8], cuts: &[usize]) -> (Vec<u8>, ReplicaVerifier) {
    let mut v = ReplicaVerifier::new(start, SEGMENT, MAX_MESSAGE);
    let mut out = Vec::new();
    let mut at = start;
    let mut prev = 0;
    for &cut in cuts.iter().chain([log.len()].iter()) {
        let offset = v.expected();
        let pushed = v.push(offset, Bytes::copy_from_slice(&log[prev..cut]));
        assert_eq!(pushed.error, None, "cut {prev}..{cut}");
        written(&pushed.appends, &mut at, &mut out);
        assert!(v.buffered() <= max_record_len(MAX_MESSAGE));
        prev = cut;
    }
    (out, v)
}

#[test]
fn any_split_into_frames_yields_the_same_whole_records() {
    let start = SEGMENT as i64;
    let log = stream(start);
    for cut in 0..=log.len() {
        let (out, v) = replay(start, &log, &[cut]);
        assert!(out == log, "split at {cut}");
        assert_eq!(v.expected(), start + log.len() as i64);
        assert_eq!(v.buffered(), 0);
    }
    let cuts: Vec<usize> = (1..log.len()).step_by(7).collect();
    let (out, _) = replay(start, &log, &cuts);
    assert!(out == log, "7-byte frames");
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..300 {
        let mut cuts: Vec<usize> = (0..rng.gen_range(1..40))
            .map(|_| rng.gen_range(0..=log.len()))
            .collect();
        cuts.sort_unstable();
        let (out, _) = replay(start, &log, &cuts);
        assert!(out == log, "cuts {cuts:?}");
    }
}

#[test]
fn records_are_handed_out_only_when_whole() {
    let r = record(0, b"hello");
    let mut v = ReplicaVerifier::new(0, SEGMENT, MAX_MESSAGE);
    let first = v.push(0, Bytes::copy_from_slice(&r[..40]));
    assert!(first.appends.is_empty() && first.error.is_none());
    assert_eq!(v.buffered(), 40);
    let second = v.push(40, Bytes::copy_from_slice(&r[40..]));
    assert_eq!(second.error, None);
    assert_eq!(
        second.appends,
        vec![Append::Records {
            offset: 0,
            bytes: Bytes::from(r.clone())
        }]
    );
}

/// A good record, then `bad` in the same frame: only the good one comes out.
fn refused(bad: Vec<u8>) -> VerifyError {
    let good = record(0, b"good");
    let mut frame = good.clone();
    frame.extend(bad);
    let mut v = ReplicaVerifier::new(0, SEGMENT, MAX_MESSAGE);
    let pushed = v.push(0, Bytes::from(frame));
    assert_eq!(
        pushed.appends,
        vec![Append::Records {
            offset: 0,
            bytes: Bytes::from(good)
        }]
    );
    pushed.error.expect("refused")
}

#[test]
fn bad_records_are_refused_with_their_offset() {
    let at = record(0, b"good").len() as i64;
    let mut crc = record(at, b"body");
    let last = crc.len() - 4;
    crc[last - 2] ^= 1; // inside the body
    assert!(matches!(
        refused(crc),
        VerifyError::Corrupt { offset, source: RecordError::BadCrc { .. } } if offset == at
    ));
    assert_eq!(
        refused(record(at + 8, b"body")),
        VerifyError::WrongPhysicalOffset {
            offset: at,
            stored: at + 8
        }
    );
    let mut magic = record(at, b"body");
    magic[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    assert_eq!(
        refused(magic),
        VerifyError::BadMagic {
            offset: at,
            magic: 0x1234_5678
        }
    );
    assert!(matches!(
        refused(blank(100)),
        VerifyError::BlankNotAtSegmentEnd { offset, total: 100, .. } if offset == at
    ));
    for total in [0, 7, -1, (max_record_len(MAX_MESSAGE) + 1) as i32] {
        let mut sized = record(at, b"body");
        sized[..4].copy_from_slice(&total.to_be_bytes());
        assert!(
            matches!(refused(sized), VerifyError::BadSize { offset, .. } if offset == at),
            "{total}"
        );
    }
    let mut crossing = record(at, b"body");
    crossing[..4].copy_from_slice(&(SEGMENT as i32).to_be_bytes());
    assert!(matches!(
        refused(crossing),
        VerifyError::BadSize { .. } | VerifyError::CrossesSegment { .. }
    ));
}

#[test]
fn frames_must_be_contiguous() {
    let mut v = ReplicaVerifier::new(0, SEGMENT, MAX_MESSAGE);
    assert_eq!(
        v.push(100, Bytes::new()).error,
        Some(VerifyError::UnalignedStart(100))
    );
    let mut v = ReplicaVerifier::new(0, SEGMENT, MAX_MESSAGE);
    let r = record(SEGMENT as i64, b"x");
    assert_eq!(v.push(SEGMENT as i64, Bytes::new()).error, None);
    assert_eq!(v.push(SEGMENT as i64, Bytes::from(r.clone())).error, None);
    let next = SEGMENT as i64 + r.len() as i64;
    assert_eq!(
        v.push(next + 1, Bytes::new()).error,
        Some(VerifyError::NotContiguous {
            expected: next,
            got: next + 1
        })
    );
}

#[test]
fn arbitrary_frames_never_panic_or_overbuffer() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let log = stream(0);
    for _ in 0..3000 {
        let mut v = ReplicaVerifier::new(0, SEGMENT, MAX_MESSAGE);
        let mut bytes = log.clone();
        for _ in 0..rng.gen_range(0..4) {
            let i = rng.gen_range(0..bytes.len());
            bytes[i] = rng.gen();
        }
        let mut pos = 0;
        while pos < bytes.len() {
            let n = rng.gen_range(0..2000).min(bytes.len() - pos);
            let offset = if rng.gen_bool(0.02) {
                rng.gen()
            } else {
                v.expected()
            };
            let pushed = v.push(offset, Bytes::copy_from_slice(&bytes[pos..pos + n]));
            assert!(v.buffered() <= max_record_len(MAX_MESSAGE));
            if pushed.error.is_some() {
                break;
            }
            pos += n;
        }
    }
}
