//! SEND_BATCH_MESSAGE bodies (protocol.md 4.7): back-to-back client-encoded messages.
//!
//! Each item: TOTALSIZE (4), MAGICCODE (4, ignored), BODYCRC (4, ignored), FLAG (4),
//! BODY (4 + n), PROPERTIES (2 + p).

use bytes::{BufMut, Bytes};

use crate::error::RecordError;
use crate::reader::{ByteReader, Short};

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
pub fn decode_at_most(buf: Bytes, max: usize) -> Result<Vec<BatchItem>, BatchError> {
    let mut items = Vec::new();
    let mut reader = ByteReader::new(&buf);
    while reader.remaining() > 0 {
        if items.len() >= max {
            return Err(BatchError::TooMany { max });
        }
        let start = reader.pos();
        let item = decode_item(&mut reader, &buf)?;
        let used = reader.pos() - start;
        if item.0 != used {
            return Err(RecordError::SizeMismatch {
                declared: item.0 as i64,
                actual: used,
            }
            .into());
        }
        items.push(item.1);
    }
    Ok(items)
}

/// One item from `reader` (over `buf`): its declared total size and the item.
fn decode_item(
    reader: &mut ByteReader<'_>,
    buf: &Bytes,
) -> Result<(usize, BatchItem), RecordError> {
    if reader.remaining() < FIXED_LEN {
        return Err(RecordError::Truncated {
            needed: FIXED_LEN,
            available: reader.remaining(),
        });
    }
    let truncated = |s: Short| RecordError::Truncated {
        needed: s.needed,
        available: s.available,
    };
    let total = usize::try_from(reader.i32().map_err(truncated)?)
        .map_err(|_| RecordError::Invalid("negative batch item size"))?;
    let _magic = reader.i32().map_err(truncated)?;
    let _crc = reader.i32().map_err(truncated)?;
    let flag = reader.i32().map_err(truncated)?;
    let body_len = usize::try_from(reader.i32().map_err(truncated)?)
        .map_err(|_| RecordError::Invalid("negative body length"))?;
    let body = buf.slice_ref(reader.take(body_len).map_err(truncated)?);
    let props_len = usize::try_from(reader.i16().map_err(truncated)?)
        .map_err(|_| RecordError::Invalid("negative properties length"))?;
    let props = reader.take(props_len).map_err(truncated)?;
    let properties = std::str::from_utf8(props)
        .map_err(|_| RecordError::Invalid("batch properties are not UTF-8"))?
        .to_owned();
    Ok((
        total,
        BatchItem {
            flag,
            body,
            properties,
        },
    ))
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
