//! StellMQ's Rust client for RocketMQ-compatible brokers.
//!
//! So far: [`admin::AdminClient`], what `mqadmin` needs (topics, groups, routes, cluster info,
//! broker config and runtime info, offsets and consume progress, connections, message queries,
//! offset resets, name server KV and config). Producer and consumers are still to come.

pub mod admin;
pub mod error;

pub use admin::AdminClient;
pub use error::ClientError;
