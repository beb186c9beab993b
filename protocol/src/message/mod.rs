//! The message model: stored-record codec (protocol.md 4.1-4.3), properties (4.4, 4.5), compression
//! (4.6), batch bodies (4.7), tags hash (4.10), BODYCRC, and message ids (section 5).

pub mod batch;
pub mod id;
pub mod kind;
pub mod properties;
pub mod record;
pub mod time;

pub use kind::{priority_of, MessageKind};
pub use properties::{
    delay_level_of, encode_into as encode_properties_into, encoded_len as encoded_properties_len,
    keys as property, split_keys, wait_store_ok, Properties, PropertyLookup, PropertyView,
};
pub use record::{MessageRecord, MessageVersion, RecordHead, RecordView};
pub use time::{now_ms, Clock, UtcTime};

use std::io::{Read, Write};

use super::error::RecordError;

/// Message sysFlag bits (protocol.md 4.3).
pub mod sys_flag {
    pub const COMPRESSED: i32 = 0x1;
    pub const MULTI_TAGS: i32 = 0x2;
    pub const TRANSACTION_NOT_TYPE: i32 = 0x0;
    pub const TRANSACTION_PREPARED_TYPE: i32 = 0x4;
    pub const TRANSACTION_COMMIT_TYPE: i32 = 0x8;
    pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0xC;
    pub const BORNHOST_V6: i32 = 0x10;
    pub const STOREHOST_V6: i32 = 0x20;

    /// The transaction type bits of a sysFlag.
    pub const fn transaction_type(sys_flag: i32) -> i32 {
        sys_flag & TRANSACTION_ROLLBACK_TYPE
    }

    /// Replaces the transaction type bits.
    pub const fn with_transaction_type(sys_flag: i32, kind: i32) -> i32 {
        (sys_flag & !TRANSACTION_ROLLBACK_TYPE) | kind
    }
}

/// Pull request sysFlag bits (protocol.md 2.5).
pub mod pull_sys_flag {
    pub const COMMIT_OFFSET: i32 = 0x1;
    pub const SUSPEND: i32 = 0x2;
    pub const SUBSCRIPTION: i32 = 0x4;
    pub const CLASS_FILTER: i32 = 0x8;
    pub const LITE_PULL: i32 = 0x10;
}

/// Java's `String.hashCode()`: `h = 31*h + c` over UTF-16 code units, wrapping.
pub fn java_string_hash(s: &str) -> i32 {
    java_string_hash_continued(0, s)
}

/// The hash of `a + s` given `h`, the hash of `a`: hashes of joined strings without joining.
pub fn java_string_hash_continued(h: i32, s: &str) -> i32 {
    s.encode_utf16().fold(h, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The consume-queue tags code of a `TAGS` value (0 when absent or empty).
pub fn tags_code(tags: Option<&str>) -> i64 {
    match tags {
        Some(t) if !t.is_empty() => i64::from(java_string_hash(t)),
        _ => 0,
    }
}

/// BODYCRC: CRC-32 (IEEE) of the stored body bytes, masked to 31 bits like Java's `UtilAll.crc32`.
pub fn body_crc(body: &[u8]) -> u32 {
    crc32fast::hash(body) & 0x7FFF_FFFF
}

/// Java clients' default compression threshold (`compressMsgBodyOverHowmuch`).
pub const COMPRESS_OVER_BYTES: usize = 4096;

/// zlib-compresses a body (RFC 1950), at Java's default level 5 unless told otherwise.
pub fn zlib_compress(body: &[u8], level: u32) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(body.len() / 2),
        flate2::Compression::new(level),
    );
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}

/// Inflates a zlib body, refusing output larger than `limit` bytes.
pub fn zlib_decompress(body: &[u8], limit: usize) -> Result<Vec<u8>, RecordError> {
    let mut out = Vec::with_capacity(body.len() * 2);
    flate2::read::ZlibDecoder::new(body)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| RecordError::Compression(e.to_string()))?;
    if out.len() > limit {
        return Err(RecordError::Compression(format!(
            "inflated body exceeds {limit} bytes"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_matches_java() {
        // Values computed by java.lang.String#hashCode.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("TagA"), 2598919);
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(java_string_hash("TopicTest#KEY1"), -1656969516);
        // Non-BMP characters hash as two UTF-16 surrogates (Java: 1772899).
        assert_eq!(java_string_hash("😀"), 1772899);
        assert_eq!(tags_code(None), 0);
        assert_eq!(tags_code(Some("TagA")), 2598919);
    }

    #[test]
    fn crc_is_ieee_masked() {
        // CRC-32/IEEE("123456789") = 0xCBF43926; masked to 31 bits.
        assert_eq!(body_crc(b"123456789"), 0xCBF4_3926 & 0x7FFF_FFFF);
        assert_eq!(body_crc(b""), 0);
    }

    #[test]
    fn zlib_round_trip_and_limit() {
        let body = vec![b'a'; 10_000];
        let packed = zlib_compress(&body, 5);
        assert_eq!(&packed[..1], &[0x78]);
        assert_eq!(zlib_decompress(&packed, 10_000).expect("ok"), body);
        assert!(zlib_decompress(&packed, 9_999).is_err());
        assert!(zlib_decompress(b"garbage", 100).is_err());
    }

    #[test]
    fn transaction_bits() {
        assert_eq!(
            sys_flag::transaction_type(0x4 | 0x1),
            sys_flag::TRANSACTION_PREPARED_TYPE
        );
        assert_eq!(
            sys_flag::with_transaction_type(0x5, sys_flag::TRANSACTION_COMMIT_TYPE),
            0x9
        );
    }
}
