//! TLS on the remoting ports (rustls with the `ring` provider), with RocketMQ's modes and
//! key names.
//!
//! * [`TlsConfig`]: the `tls.*` keys of `broker.conf` / `namesrv.conf` (and RocketMQ's
//!   `tls.config.file`).
//! * [`ServerTls`]: a server's mode and certificate. In `permissive` mode one port serves
//!   plaintext and TLS, told apart by the first byte (0x16 starts a TLS handshake); in
//!   `enforcing` mode plaintext connections are closed. The handshake runs in the
//!   connection's own task with a timeout, so a stalled or failed one holds nothing shared.
//!   The certificate, key and client CA reload when their files change.
//! * [`ClientTls`]: `tls.enable` for outbound connections, verifying the server against
//!   `tls.client.trustCertPath` (or trusting anyone in RocketMQ's explicit test mode).

mod acceptor;
mod config;
mod connector;
mod error;
mod pem;
mod reload;
mod server_files;

use std::sync::Arc;

pub use acceptor::{Accepted, Refused, ServerTls};
pub use config::{ClientAuth, TlsConfig, TlsMode};
pub use connector::{ClientTls, ClientTlsConfig};
pub use error::TlsError;

/// The one crypto provider: `ring`, which builds with a C compiler alone.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
