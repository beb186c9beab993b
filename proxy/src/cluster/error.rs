//! What can go wrong between the proxy and the brokers or name servers.

use stellmq_remoting::net::RemotingError;
use thiserror::Error;

/// A failed call to the cluster, typed so the gRPC side can pick RocketMQ 5's status code.
#[derive(Debug, Error)]
pub enum ClusterError {
    #[error("topic {0} does not exist")]
    TopicNotFound(String),
    #[error("consumer group {0} does not exist")]
    GroupNotFound(String),
    #[error("no writable queue of topic {0}")]
    NoWritableQueue(String),
    #[error("no readable queue of topic {0}")]
    NoReadableQueue(String),
    #[error("broker {0} is not in the topic's route")]
    UnknownBroker(String),
    #[error("{0}")]
    Remoting(#[from] RemotingError),
    #[error("the broker's answer cannot be read: {0}")]
    BadAnswer(String),
}
