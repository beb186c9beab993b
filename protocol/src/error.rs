//! Errors of the sans-IO protocol layer.

use thiserror::Error;

/// A frame that cannot be decoded. Any of these closes the connection it arrived on.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FrameError {
    #[error("frame of {length} bytes exceeds the maximum of {max} bytes")]
    TooLarge { length: usize, max: usize },
    #[error("frame length {0} is too small to hold a header length word")]
    LengthTooSmall(i64),
    #[error("header length {header} exceeds the frame's {available} bytes")]
    HeaderOverflow { header: usize, available: usize },
    #[error("unknown serialize type {0}")]
    UnknownSerializeType(u8),
    #[error("malformed JSON header: {0}")]
    Json(String),
    #[error("malformed ROCKETMQ binary header: {0}")]
    Binary(&'static str),
    #[error("header is not valid UTF-8")]
    Utf8,
}

/// A request header whose `extFields` do not hold what the request needs.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HeaderError {
    #[error("the request header misses required field '{0}'")]
    Missing(&'static str),
    #[error("the request header field '{field}' has an invalid value '{value}'")]
    Invalid { field: &'static str, value: String },
}

/// A JSON body that cannot be decoded.
#[derive(Debug, Error)]
pub enum BodyError {
    #[error("malformed JSON body: {0}")]
    Json(#[from] serde_json::Error),
    #[error("malformed body: {0}")]
    Malformed(String),
    #[error("body is not valid UTF-8")]
    Utf8,
    /// The server has no memory left for this body now; it may be sent again later.
    #[error("{0}")]
    OverBudget(String),
}

/// A stored message record or batch that cannot be decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RecordError {
    #[error("record truncated: needs {needed} bytes, {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("unknown magic code {0:#010x}")]
    BadMagic(u32),
    #[error("record total size {declared} does not match its content ({actual} bytes)")]
    SizeMismatch { declared: i64, actual: usize },
    #[error("body CRC {stored:#x} does not match computed {computed:#x}")]
    BadCrc { stored: u32, computed: u32 },
    #[error("{0}")]
    Invalid(&'static str),
    #[error("zlib: {0}")]
    Compression(String),
}
