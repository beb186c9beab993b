//! The HA port: a slave's hello read by the master, and the master's transfer frames checked
//! record by record by the slave.

use bytes::Bytes;
use stellmq_broker::ha::protocol::{
    self, decode_frame_header, decode_hello, SlaveIdentity, FRAME_HEADER_LEN,
};
use stellmq_broker::ha::verify::{max_record_len, Append, ReplicaVerifier};

/// Segment size the slave side uses here: small, so blanks and segment ends come up often.
const SEGMENT: usize = 4096;
const MAX_MESSAGE: usize = 1024;

/// Input: a hello, then transfer frames (12-byte header + body) until the bytes run out.
pub fn ha_frame(data: &[u8]) -> bool {
    let hello_ok = hello(data);
    let _ = data.first().map(|b| protocol::decode_challenge_len(*b));
    let epochs_ok = epochs(data);
    frames(data) || hello_ok || epochs_ok
}

/// Controller mode's epoch blocks (handshake version 2), read as a slave's term and as a
/// master's entries; what decodes re-encodes to the same bytes.
fn epochs(data: &[u8]) -> bool {
    use protocol::v2;
    let mut ok = false;
    if let Some((head, rest)) = data.split_first_chunk::<{ v2::TERM_HEAD_LEN }>() {
        if let Ok((_, count)) = v2::decode_term_head(head) {
            let body = rest.get(..count * v2::SLAVE_ENTRY_LEN).unwrap_or(rest);
            ok |= v2::decode_slave_entries(body, count).is_ok();
        }
    }
    if let Some((count, rest)) = data.split_first_chunk::<2>() {
        if let Ok(count) = v2::decode_master_count(*count) {
            let body = rest.get(..count * v2::MASTER_ENTRY_LEN).unwrap_or(rest);
            if let Ok(entries) = v2::decode_master_entries(body, count) {
                let again = v2::encode_master_entries(&entries).expect("decoded entries encode");
                assert_eq!(&again[2..], body);
                ok = true;
            }
        }
    }
    ok
}

fn hello(data: &[u8]) -> bool {
    match decode_hello(data) {
        Ok(Some(hello)) => {
            assert!(hello.len <= data.len());
            let again = hello.identity.encode().expect("a decoded identity encodes");
            assert_eq!(
                SlaveIdentity::decode(&again).expect("re-decodes"),
                hello.identity
            );
            true
        }
        _ => false,
    }
}

/// Feeds frames to a verifier for an empty log; what it hands out must be contiguous from
/// where the first frame anchored it, and never more than it was given.
fn frames(data: &[u8]) -> bool {
    let mut verifier = ReplicaVerifier::new(0, SEGMENT, MAX_MESSAGE);
    let mut rest = data;
    let mut accepted = false;
    let mut next: Option<i64> = None;
    let mut given = 0usize;
    let mut handed = 0usize;
    while let Some((head, tail)) = rest.split_first_chunk::<FRAME_HEADER_LEN>() {
        let Ok(header) = decode_frame_header(head) else {
            break;
        };
        let Some((body, after)) = tail.split_at_checked(header.size.min(tail.len())) else {
            break;
        };
        rest = after;
        given += body.len();
        let pushed = verifier.push(header.offset, Bytes::copy_from_slice(body));
        for append in &pushed.appends {
            let offset = match append {
                Append::Records { offset, bytes } => {
                    handed += bytes.len();
                    *offset
                }
                Append::Blank { offset, len } => {
                    assert_eq!(
                        (offset + *len as i64) % SEGMENT as i64,
                        0,
                        "blank ends a segment"
                    );
                    *offset
                }
            };
            if let Some(expected) = next {
                assert_eq!(offset, expected, "appends are contiguous");
            }
            next = Some(append.end());
            accepted = true;
        }
        assert!(handed <= given, "never more record bytes than received");
        assert!(verifier.buffered() <= max_record_len(MAX_MESSAGE));
        if pushed.error.is_some() {
            break;
        }
    }
    accepted
}
