//! tokio transport for the remoting protocol.
//!
//! * [`Channel`]: one connection (TCP, or TLS over TCP), used the same way on both sides: requests flow in both
//!   directions, responses are matched to requests by opaque in a per-connection table, and
//!   a single writer task coalesces outgoing frames.
//! * [`RemotingServer`]: accept loop with a connection cap, a processor registry keyed by
//!   request code with one bounded [`Lane`] per processor, idle close and graceful shutdown.
//! * [`RemotingClient`]: connections per address, reused and re-established after failure.
//! * [`tls`]: TLS for both (RocketMQ's `tlsMode` and `tls.*` keys).

mod channel;
mod client;
mod deadline;
mod error;
#[cfg(feature = "process")]
pub mod log_line;
mod pending;
#[cfg(feature = "process")]
pub mod process;
mod processor;
mod server;
pub mod tls;

pub use channel::{Channel, ChannelConfig, InFlight, InboundHandler, PendingResponse, SlowReader};
pub use client::{ClientConfig, RemotingClient};
pub use error::RemotingError;
pub use processor::{
    answer, handler, AnswerFn, HandlerFn, Lane, ProcessFuture, ProcessResult, ProcessorError,
    RequestContext, RequestObserver, RequestProcessor,
};
pub use server::{ConnectionListener, RemotingServer, ServerConfig, ServerHandle};

/// Parses `host:port` (IPv4, `[v6]` or a resolvable name is left to the caller).
pub fn parse_addr(addr: &str) -> Result<std::net::SocketAddr, RemotingError> {
    addr.trim()
        .parse()
        .map_err(|_| RemotingError::BadAddress(addr.to_owned()))
}
