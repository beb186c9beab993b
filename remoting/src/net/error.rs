//! Transport errors, one kind per cause a caller may act on differently.

use std::time::Duration;

use thiserror::Error;

use crate::protocol::{FrameError, ResponseCode};

#[derive(Debug, Error)]
pub enum RemotingError {
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS handshake with {addr} failed: {source}")]
    TlsHandshake {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("connecting to {addr} timed out after {timeout:?}")]
    ConnectTimeout { addr: String, timeout: Duration },
    #[error("no response from {addr} within {timeout:?}")]
    Timeout { addr: String, timeout: Duration },
    #[error("connection to {addr} is closed")]
    ConnectionClosed { addr: String },
    #[error("{addr} answered {code} ({}): {remark}", ResponseCode::from_i32(*.code).map_or("UNKNOWN", |c| c.name()))]
    Remote {
        addr: String,
        code: i32,
        remark: String,
    },
    #[error("'{0}' is not a valid ip:port address")]
    BadAddress(String),
    #[error("frame error: {0}")]
    Frame(#[from] FrameError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl RemotingError {
    /// The remote response code, for [`RemotingError::Remote`].
    pub fn remote_code(&self) -> Option<i32> {
        match self {
            RemotingError::Remote { code, .. } => Some(*code),
            _ => None,
        }
    }
}
