//! SEND_BATCH_MESSAGE bodies (protocol.md 4.7): back-to-back client-encoded messages.
//!
//! Each item: TOTALSIZE (4), MAGICCODE (4, ignored), BODYCRC (4, ignored), FLAG (4),
//! BODY (4 + n), PROPERTIES (2 + p).

use bytes::{Buf, BufMut, Bytes};

use crate::protocol::error::RecordError;

const FIXED_LEN: usize = 4 + 4 + 4 + 4 + 4 + 2;

/// One message of a batch as the producer encoded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchItem {
    pub flag: i32,
    pub body: Bytes,
    /// The message's own encoded properties string.
    pub properties: String,
}

/// Why a batch body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("a batch may hold at most {max} messages")]
    TooMany { max: usize },
}

/// Splits a batch body into its messages; the bodies share the input's memory.
pub fn decode(buf: Bytes) -> Result<Vec<BatchItem>, RecordError> {
    decode_at_most(buf, usize::MAX).map_err(|e| match e {
        BatchError::Record(e) => e,
        BatchError::TooMany { .. } => RecordError::Invalid("too many messages in a batch"),
    })
}

/// Like [`decode`], refusing a body of more than `max` messages before decoding them all.
pub fn decode_at_most(mut buf: Bytes, max: usize) -> Result<Vec<BatchItem>, BatchError> {
    let mut items = Vec::new();
    while !buf.is_empty() {
        if items.len() >= max {
            return Err(BatchError::TooMany { max });
        }
        if buf.len() < FIXED_LEN {
            return Err(RecordError::Truncated {
                needed: FIXED_LEN,
                available: buf.len(),
            }
            .into());
        }
        let total = usize::try_from(buf.get_i32())
            .map_err(|_| RecordError::Invalid("negative batch item size"))?;
        let _magic = buf.get_i32();
        let _crc = buf.get_i32();
        let flag = buf.get_i32();
        let body_len = usize::try_from(buf.get_i32())
            .map_err(|_| RecordError::Invalid("negative body length"))?;
        if buf.len() < body_len + 2 {
            return Err(RecordError::Truncated {
                needed: body_len + 2,
                available: buf.len(),
            }
            .into());
        }
        let body = buf.split_to(body_len);
        let props_len = usize::try_from(buf.get_i16())
            .map_err(|_| RecordError::Invalid("negative properties length"))?;
        if buf.len() < props_len {
            return Err(RecordError::Truncated {
                needed: props_len,
                available: buf.len(),
            }
            .into());
        }
        let props = buf.split_to(props_len);
        let used = FIXED_LEN + body_len + props_len;
        if total != used {
            return Err(RecordError::SizeMismatch {
                declared: total as i64,
                actual: used,
            }
            .into());
        }
        let properties = String::from_utf8(props.to_vec())
            .map_err(|_| RecordError::Invalid("batch properties are not UTF-8"))?;
        items.push(BatchItem {
            flag,
            body,
            properties,
        });
    }
    Ok(items)
}

/// Encodes messages the way the Java client's `MessageBatch` does.
pub fn encode(items: &[BatchItem]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        items
            .iter()
            .map(|i| FIXED_LEN + i.body.len() + i.properties.len())
            .sum(),
    );
    for item in items {
        let total = FIXED_LEN + item.body.len() + item.properties.len();
        out.put_i32(total as i32);
        out.put_i32(0);
        out.put_i32(0);
        out.put_i32(item.flag);
        out.put_i32(item.body.len() as i32);
        out.put_slice(&item.body);
        out.put_i16(item.properties.len() as i16);
        out.put_slice(item.properties.as_bytes());
    }
    out
}
