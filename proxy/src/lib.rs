//! StellMQ's gRPC proxy (`mqproxy`): RocketMQ 5's `apache.rocketmq.v2.MessagingService`, so
//! the RocketMQ 5 SDKs (Java, Go, C#, Python, Node.js, Rust, C++) work against StellMQ
//! unchanged. It runs as RocketMQ's proxy runs in cluster mode: apart from the brokers, which
//! it reaches over remoting like any client.
//!
//! Layers, each importing only those below it:
//! - `server` (the gRPC port: plaintext and TLS on one port, the boot and the stop)
//! - `grpc` (one module per RPC; clients and their settings; RocketMQ 5's status codes)
//! - `cluster` (routes, sends, POP, transactions over remoting; knows nothing of gRPC)
//! - `config` (RocketMQ's `rmq-proxy.json` keys), `pb` (the generated protobuf types)
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod cluster;
pub mod config;
pub mod grpc;
mod listener;
mod metrics;
pub mod remoting;
pub mod server;

/// The generated apache.rocketmq.v2 messages and services (crate `stellmq-grpc-api`).
pub use stellmq_grpc_api::pb;
