//! The Apache RocketMQ "remoting" protocol for StellMQ.
//!
//! * [`protocol`] is sans-IO: frames, JSON and ROCKETMQ binary headers, typed request and
//!   response codes, typed request headers, JSON bodies in fastjson's dialect, and the stored
//!   message record codec with message ids. Nothing in it performs I/O or is async.
//! * [`net`] is the tokio transport: a server with a processor registry and bounded lanes, and a
//!   client with per-connection request correlation, timeouts and oneway calls.
//!
//! The formats implemented here are described in `docs/protocol.md` (sections 1-5).
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod net;
pub mod protocol;
