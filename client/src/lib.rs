//! StellMQ's Rust client for RocketMQ-compatible brokers.
//!
//! [`Producer`], [`TransactionProducer`], [`PushConsumer`], [`LitePullConsumer`], and
//! [`pop::PopClient`] (RocketMQ 5 POP: receipt handles, acks, invisible times), and
//! [`admin::AdminClient`], what `mqadmin` needs (topics, groups, routes, cluster info,
//! broker config and runtime info, offsets and consume progress, connections, message queries,
//! offset resets, name server KV and config).
//!
//! Plain ACL: give [`ProducerConfig::credentials`], [`ConsumerConfig::credentials`] or
//! [`admin::AdminClient::with_credentials`] a [`SessionCredentials`], and every request to
//! name servers and brokers is signed (`AccessKey`, `Signature`) as RocketMQ's
//! `AclClientRPCHook` signs, by the remoting client as its last step before the wire.
//!
//! Layers, each importing only those below it:
//! - `transaction`, `reply` (over the producer); `producer/`, `consumer/`, `admin/`
//! - `instance` (one shared client instance: connections, routes, heartbeats), `inbound`
//!   (the broker's calls to it) and `probe` (the broker's questions about a running consumer)
//! - `namesrv` (name-server list, route lookup), `request` (typed requests, response codes
//!   mapped to errors in one place)
//! - `message`, `route`, `namespace`, `error`

pub mod admin;
pub mod consumer;
pub mod error;
mod inbound;
mod instance;
pub mod message;
pub mod namespace;
mod namesrv;
pub mod pop;
mod probe;
pub mod producer;
pub mod reply;
mod request;
pub mod route;
pub mod transaction;

pub use admin::AdminClient;
pub use consumer::{ConsumeResult, ConsumerConfig, ExpressionType, LitePullConsumer, PushConsumer};
pub use error::ClientError;
pub use message::{Message, ReceivedMessage, SendResult, SendStatus};
pub use producer::{Producer, ProducerConfig};
pub use stellmq_remoting::net::tls::ClientTlsConfig;
pub use stellmq_remoting::protocol::signature::SessionCredentials;
pub use transaction::{TransactionProducer, TransactionSendResult, TransactionState};
