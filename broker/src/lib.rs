//! StellMQ's broker: RocketMQ-compatible send, pull with long polling, consumer offsets and
//! groups, retry and dead letters, delay messages, queries and admin requests, over
//! [`stellmq_store`].
//!
//! [`start`] runs one (port 0 works) and returns a handle that shuts it down cleanly;
//! `mqbroker` (package `stellmq-servers`, which composes servers) is a thin binary around it.
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod auth;
pub mod clients;
pub mod config;
pub mod context;
pub mod deferred;
pub mod filter;
pub mod group;
pub mod ha;
pub mod limits;
pub mod metadata_journal;
pub mod metrics;
pub mod offset;
pub mod paging;
mod persist;
pub mod processor;
pub mod registration;
pub mod replicas;
mod role_services;
mod routes;
pub mod runtime;
pub mod schedule;
mod server;
pub mod settings;
pub mod slave_sync;
mod state;
pub mod stats;
#[cfg(test)]
mod testing;
pub mod timer;
pub mod topic;
pub mod transaction;

pub mod writer;

pub use config::{BrokerConfig, BrokerStartConfig};
pub use server::{start, BrokerError, BrokerHandle};
