//! Handshake version 2 (controller mode): version 1's hello, challenge and proof, plus the
//! epoch histories both sides need so that a slave cuts what its new master never had.
//!
//! * slave → master, right after version 1's identity: the *term*: the master epoch the
//!   controller told the slave to follow (i32), the number of the slave's epoch entries
//!   (u16, at most [`MAX_EPOCH_ENTRIES`]) and each entry: epoch (i32), startOffset (i64).
//! * master → slave, in place of version 1's last byte: [`super::ACCEPTED`] followed by the
//!   master's entries (u16 count, then epoch i32, startOffset i64, endOffset i64 each; the
//!   last one ends at the master's max offset), or [`REFUSED_EPOCH`] followed by the
//!   master's own epoch (i32) when the slave follows another term, after which the master
//!   closes the connection.
//!
//! All integers big-endian. The identity (and so the proof) is version 1's.
//!
//! Version 3 is version 2 whose master → slave frames also carry the master's confirm offset
//! (what every SyncStateSet member has): a header of [`CONFIRMED_FRAME_HEADER_LEN`] bytes,
//! version 1's offset (i64) and size (i32) followed by the confirm offset (i64). The slave
//! makes no byte past it consumable, so a consumer reading from a slave never reads what a
//! later master may cut (RocketMQ's AutoSwitch HA sends it in its transfer header too). A
//! version 3 master also serves version 2 slaves; a version 3 slave refused by a master
//! that speaks only version 2 tries version 2 next.

use stellmq_remoting::protocol::{i32_at, i64_at};
use stellmq_store::epoch::EpochEntry;

/// `0xFF "SMQHA"` then version 2.
pub const HANDSHAKE_MAGIC_V2: [u8; 8] = [0xFF, b'S', b'M', b'Q', b'H', b'A', 0x00, 0x02];
/// `0xFF "SMQHA"` then version 3.
pub const HANDSHAKE_MAGIC_V3: [u8; 8] = [0xFF, b'S', b'M', b'Q', b'H', b'A', 0x00, 0x03];
/// A version 3 frame header: offset (i64), size (i32), the master's confirm offset (i64).
pub const CONFIRMED_FRAME_HEADER_LEN: usize = super::FRAME_HEADER_LEN + 8;
/// The most epoch entries either side sends (one per master term).
pub const MAX_EPOCH_ENTRIES: usize = 4096;
/// The slave's term head: followed epoch (i32) + entry count (u16).
pub const TERM_HEAD_LEN: usize = 6;
/// One slave entry: epoch (i32) + start (i64).
pub const SLAVE_ENTRY_LEN: usize = 12;
/// One master entry: epoch (i32) + start (i64) + end (i64).
pub const MASTER_ENTRY_LEN: usize = 20;
/// The master's answer to a slave that follows another term.
pub const REFUSED_EPOCH: u8 = 0x02;

/// A malformed epoch block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EpochWireError {
    #[error("{0} epoch entries (at most {MAX_EPOCH_ENTRIES})")]
    TooMany(usize),
    #[error("epoch entries of {got} bytes, expected {expected}")]
    Length { expected: usize, got: usize },
    #[error("negative epoch or offset in an epoch entry")]
    Negative,
}

/// A version 3 frame header.
pub fn encode_confirmed_frame_header(
    offset: i64,
    size: usize,
    confirm_offset: i64,
) -> [u8; CONFIRMED_FRAME_HEADER_LEN] {
    let mut header = [0u8; CONFIRMED_FRAME_HEADER_LEN];
    let frame = super::encode_frame_header(offset, size);
    for (to, from) in header
        .iter_mut()
        .zip(frame.iter().chain(&confirm_offset.to_be_bytes()))
    {
        *to = *from;
    }
    header
}

/// Decodes a version 3 frame header: the frame and the master's confirm offset.
pub fn decode_confirmed_frame_header(
    header: &[u8; CONFIRMED_FRAME_HEADER_LEN],
) -> Result<(super::FrameHeader, i64), super::FrameError> {
    let (frame, confirm) = header
        .split_first_chunk::<{ super::FRAME_HEADER_LEN }>()
        .ok_or(super::FrameError::BadSize(-1))?;
    let frame = super::decode_frame_header(frame)?;
    let confirm = i64_at(confirm, 0).unwrap_or_default();
    if confirm < 0 {
        return Err(super::FrameError::NegativeOffset(confirm));
    }
    Ok((frame, confirm))
}

/// What the slave sends after its identity.
pub fn encode_term(followed_epoch: i32, entries: &[EpochEntry]) -> Result<Vec<u8>, EpochWireError> {
    let count = u16::try_from(entries.len())
        .ok()
        .filter(|c| usize::from(*c) <= MAX_EPOCH_ENTRIES)
        .ok_or(EpochWireError::TooMany(entries.len()))?;
    let mut out = Vec::with_capacity(TERM_HEAD_LEN + entries.len() * SLAVE_ENTRY_LEN);
    out.extend_from_slice(&followed_epoch.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    for e in entries {
        out.extend_from_slice(&e.epoch.to_be_bytes());
        out.extend_from_slice(&e.start_offset.to_be_bytes());
    }
    Ok(out)
}

/// The followed epoch and the number of entries that follow (their bytes:
/// `count * SLAVE_ENTRY_LEN`).
pub fn decode_term_head(head: &[u8; TERM_HEAD_LEN]) -> Result<(i32, usize), EpochWireError> {
    let [e0, e1, e2, e3, c0, c1] = *head;
    let epoch = i32::from_be_bytes([e0, e1, e2, e3]);
    let count = usize::from(u16::from_be_bytes([c0, c1]));
    if count > MAX_EPOCH_ENTRIES {
        return Err(EpochWireError::TooMany(count));
    }
    Ok((epoch, count))
}

/// A slave's entries: `(epoch, startOffset)` pairs.
pub fn decode_slave_entries(bytes: &[u8], count: usize) -> Result<Vec<(i32, i64)>, EpochWireError> {
    check_len(bytes, count, SLAVE_ENTRY_LEN)?;
    bytes
        .chunks_exact(SLAVE_ENTRY_LEN)
        .map(|c| match (i32_at(c, 0), i64_at(c, 4)) {
            (Some(epoch), Some(start)) if epoch >= 0 && start >= 0 => Ok((epoch, start)),
            _ => Err(EpochWireError::Negative),
        })
        .collect()
}

/// The master's entries after [`super::ACCEPTED`]: count (u16) then the entries.
pub fn encode_master_entries(entries: &[EpochEntry]) -> Result<Vec<u8>, EpochWireError> {
    let count = u16::try_from(entries.len())
        .ok()
        .filter(|c| usize::from(*c) <= MAX_EPOCH_ENTRIES)
        .ok_or(EpochWireError::TooMany(entries.len()))?;
    let mut out = Vec::with_capacity(2 + entries.len() * MASTER_ENTRY_LEN);
    out.extend_from_slice(&count.to_be_bytes());
    for e in entries {
        out.extend_from_slice(&e.epoch.to_be_bytes());
        out.extend_from_slice(&e.start_offset.to_be_bytes());
        out.extend_from_slice(&e.end_offset.to_be_bytes());
    }
    Ok(out)
}

/// The number of master entries announced by their u16 count.
pub fn decode_master_count(count: [u8; 2]) -> Result<usize, EpochWireError> {
    let count = usize::from(u16::from_be_bytes(count));
    if count > MAX_EPOCH_ENTRIES {
        return Err(EpochWireError::TooMany(count));
    }
    Ok(count)
}

pub fn decode_master_entries(
    bytes: &[u8],
    count: usize,
) -> Result<Vec<EpochEntry>, EpochWireError> {
    check_len(bytes, count, MASTER_ENTRY_LEN)?;
    bytes
        .chunks_exact(MASTER_ENTRY_LEN)
        .map(|c| {
            let (epoch, start, end) = (i32_at(c, 0), i64_at(c, 4), i64_at(c, 12));
            let (Some(epoch), Some(start_offset), Some(end_offset)) = (epoch, start, end) else {
                return Err(EpochWireError::Negative);
            };
            let e = EpochEntry {
                epoch,
                start_offset,
                end_offset,
            };
            (e.epoch >= 0 && e.start_offset >= 0 && e.end_offset >= e.start_offset)
                .then_some(e)
                .ok_or(EpochWireError::Negative)
        })
        .collect()
}

fn check_len(bytes: &[u8], count: usize, each: usize) -> Result<(), EpochWireError> {
    let expected = count * each;
    if bytes.len() != expected {
        return Err(EpochWireError::Length {
            expected,
            got: bytes.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_and_master_entries_round_trip() {
        let entries = [EpochEntry::new(1, 0), EpochEntry::new(3, 4096)];
        let term = encode_term(3, &entries).unwrap();
        let head: [u8; TERM_HEAD_LEN] = term[..TERM_HEAD_LEN].try_into().unwrap();
        assert_eq!(decode_term_head(&head), Ok((3, 2)));
        assert_eq!(
            decode_slave_entries(&term[TERM_HEAD_LEN..], 2),
            Ok(vec![(1, 0), (3, 4096)])
        );
        let master = [
            EpochEntry {
                epoch: 1,
                start_offset: 0,
                end_offset: 4096,
            },
            EpochEntry {
                epoch: 3,
                start_offset: 4096,
                end_offset: 9000,
            },
        ];
        let bytes = encode_master_entries(&master).unwrap();
        assert_eq!(decode_master_count([bytes[0], bytes[1]]), Ok(2));
        assert_eq!(decode_master_entries(&bytes[2..], 2).unwrap(), master);
    }

    #[test]
    fn malformed_blocks_are_refused() {
        assert_eq!(
            decode_term_head(&[0, 0, 0, 1, 0xFF, 0xFF]),
            Err(EpochWireError::TooMany(65535))
        );
        assert!(decode_slave_entries(&[0; 11], 1).is_err());
        let mut negative = vec![0xFF; 4];
        negative.extend_from_slice(&0i64.to_be_bytes());
        assert_eq!(
            decode_slave_entries(&negative, 1),
            Err(EpochWireError::Negative)
        );
        let mut backwards = 1i32.to_be_bytes().to_vec();
        backwards.extend_from_slice(&10i64.to_be_bytes());
        backwards.extend_from_slice(&5i64.to_be_bytes());
        assert!(decode_master_entries(&backwards, 1).is_err());
    }
}
