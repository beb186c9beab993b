//! The Apache RocketMQ "remoting" transport for StellMQ.
//!
//! * [`net`] is the tokio transport: a server with a processor registry and bounded lanes, and a
//!   client with per-connection request correlation, timeouts and oneway calls.
//! * [`protocol`] is the sans-IO codec of crate `stellmq-protocol` (frames, headers, codes,
//!   bodies, records), re-exported so the transport's users name one crate; code that needs
//!   the codec only (the store, ACL, fuzzers) depends on `stellmq-protocol` alone.
//!
//! The formats implemented here are described in `docs/protocol.md` (sections 1-5).
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod net;
pub use stellmq_protocol as protocol;
