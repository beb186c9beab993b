//! Client errors that say what went wrong.

use stellmq_remoting::net::RemotingError;
use stellmq_remoting::protocol::error::{BodyError, RecordError};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("no name server address configured (use -n or NAMESRV_ADDR)")]
    NoNameServer,
    #[error("no name server answered: {0}")]
    NameServerUnreachable(String),
    #[error("topic {0} does not exist (no route in the name server)")]
    TopicNotExist(String),
    #[error("{0}")]
    Remoting(#[from] RemotingError),
    #[error("bad response body: {0}")]
    Body(#[from] BodyError),
    #[error("bad message record: {0}")]
    Record(#[from] RecordError),
    #[error("{0}")]
    Invalid(String),
}
