//! The record format of the Raft log file: `[len: u32 BE][crc32c(payload): u32 BE][payload]`.
//!
//! Reading stops at the first record that is incomplete or whose checksum does not match
//! (a torn write at a crash): everything before it is kept, everything from it is dropped.

use std::io::Write;
use std::path::Path;

use crc32c::crc32c;

const HEADER: usize = 8;

/// Records larger than this are refused on write and treated as torn on read.
pub const MAX_RECORD: usize = 64 * 1024 * 1024;

/// Frames one payload.
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32c(payload).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The bytes a payload takes in the file, header included.
pub fn framed_len(payload: &[u8]) -> usize {
    HEADER + payload.len()
}

/// The intact records at the start of `bytes`, and the length they span.
pub fn decode_all(bytes: &[u8]) -> (Vec<&[u8]>, usize) {
    let mut records = Vec::new();
    let mut pos = 0;
    while let Some((payload, next)) = decode_at(bytes, pos) {
        records.push(payload);
        pos = next;
    }
    (records, pos)
}

fn decode_at(bytes: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let header = bytes.get(pos..pos.checked_add(HEADER)?)?;
    let len = u32::from_be_bytes(header.get(..4)?.try_into().ok()?) as usize;
    let crc = u32::from_be_bytes(header.get(4..8)?.try_into().ok()?);
    if len > MAX_RECORD {
        return None;
    }
    let start = pos + HEADER;
    let payload = bytes.get(start..start.checked_add(len)?)?;
    (crc32c(payload) == crc).then_some((payload, start + len))
}

/// Writes `content` to `path` through a temp file, fsync and rename, then fsyncs the
/// directory: the file is either the old or the new content after a crash.
pub fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_torn_or_corrupt_record() {
        let mut bytes = encode(b"one");
        bytes.extend(encode(b"two"));
        let intact = bytes.len();
        bytes.extend(encode(b"three"));
        let (records, len) = decode_all(&bytes);
        assert_eq!(records, vec![&b"one"[..], b"two", b"three"]);
        assert_eq!(len, bytes.len());

        let torn = &bytes[..bytes.len() - 2];
        let (records, len) = decode_all(torn);
        assert_eq!(records.len(), 2);
        assert_eq!(len, intact);

        let mut corrupt = bytes.clone();
        corrupt[intact + 9] ^= 0xFF;
        assert_eq!(decode_all(&corrupt).1, intact);
        assert_eq!(decode_all(&[0xFF; 8]).0.len(), 0);
    }
}
