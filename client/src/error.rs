//! Client errors that say what went wrong and keep the cause.

use std::time::Duration;

use stellmq_remoting::net::tls::TlsError;
use stellmq_remoting::net::RemotingError;
use stellmq_remoting::protocol::error::{BodyError, RecordError};
use stellmq_remoting::protocol::message::id::IdError;
use stellmq_remoting::protocol::HeaderError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("no name server address configured (use -n or NAMESRV_ADDR)")]
    NoNameServer,
    /// Every name server was tried; this is what the last one did.
    #[error("no name server answered: {0}")]
    NameServerUnreachable(#[source] RemotingError),
    #[error("topic {0} does not exist (no route in the name server)")]
    TopicNotExist(String),
    #[error("{0}")]
    Remoting(#[from] RemotingError),
    #[error("bad response body: {0}")]
    Body(#[from] BodyError),
    #[error("bad response header: {0}")]
    Header(#[from] HeaderError),
    #[error("bad message record: {0}")]
    Record(#[from] RecordError),
    #[error("bad broker message id: {0}")]
    MessageId(#[from] IdError),
    #[error("no reply to request {correlation} within {timeout:?}")]
    NoReply {
        correlation: String,
        timeout: Duration,
    },
    #[error("send task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("{0}")]
    Invalid(String),
    #[error("TLS settings: {0}")]
    Tls(#[from] TlsError),
}

impl ClientError {
    /// The response code of a broker or name server that refused the request.
    pub fn remote_code(&self) -> Option<i32> {
        match self {
            ClientError::Remoting(e) => e.remote_code(),
            _ => None,
        }
    }
}
