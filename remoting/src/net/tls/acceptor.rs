//! The server side: which connections are TLS (by their first byte), the handshake, and
//! the configuration in use (replaced by [`super::reload`] when the files change).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use thiserror::Error;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::config::{TlsConfig, TlsMode};
use super::error::TlsError;
use super::reload::Fingerprints;
use super::server_files::ServerTlsFiles;

/// The first byte of a TLS connection: a handshake record (RocketMQ's
/// `TlsModeHandler.HANDSHAKE_MAGIC_CODE`). A remoting frame starts with its length, whose
/// first byte is never this large under any frame size limit a server accepts.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// A server's TLS: its mode and the certificate in use. Cheap to clone.
#[derive(Clone)]
pub struct ServerTls {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub mode: TlsMode,
    pub files: ServerTlsFiles,
    pub current: RwLock<TlsAcceptor>,
    /// What the files looked like when `current` was built.
    pub loaded_from: Fingerprints,
    pub handshake_timeout: Duration,
    pub reload_interval: Duration,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("mode", &self.inner.mode)
            .field("files", &self.inner.files)
            .finish()
    }
}

/// A connection the server keeps.
pub enum Accepted {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// Why a connection was closed before it carried a request.
#[derive(Debug, Error)]
pub enum Refused {
    #[error("closed before sending anything")]
    ClosedEarly,
    #[error("sent nothing for {0:?}")]
    Silent(Duration),
    #[error("plaintext connection refused: tls.server.mode is enforcing")]
    Plaintext,
    #[error("TLS handshake not done within {0:?}")]
    HandshakeTimeout(Duration),
    #[error("TLS handshake failed: {0}")]
    Handshake(std::io::Error),
    #[error("cannot read the first byte: {0}")]
    Io(std::io::Error),
}

impl Refused {
    /// Closed without a word (port probes, health checks): not worth a warning.
    pub fn is_quiet(&self) -> bool {
        matches!(self, Refused::ClosedEarly | Refused::Silent(_))
    }
}

impl ServerTls {
    /// The server TLS `config` asks for, with its files read; `None` when the mode is
    /// disabled.
    pub fn from_config(config: &TlsConfig) -> Result<Option<Self>, TlsError> {
        Self::with_alpn(config, Vec::new())
    }

    /// Like [`Self::from_config`], offering `alpn` protocols in the handshake (a gRPC server
    /// offers `h2`).
    pub fn with_alpn(config: &TlsConfig, alpn: Vec<Vec<u8>>) -> Result<Option<Self>, TlsError> {
        if config.server_mode == TlsMode::Disabled {
            return Ok(None);
        }
        let mut files = ServerTlsFiles::from_config(config)?;
        files.alpn = alpn;
        let loaded_from = Fingerprints::of(&files.paths());
        let acceptor = TlsAcceptor::from(files.build()?);
        tracing::info!(
            mode = ?config.server_mode,
            cert = %files.cert.display(),
            client_auth = ?files.client_auth,
            "TLS on the remoting port"
        );
        Ok(Some(Self {
            inner: Arc::new(Inner {
                mode: config.server_mode,
                files,
                current: RwLock::new(acceptor),
                loaded_from,
                handshake_timeout: Duration::from_millis(
                    config.server_handshake_timeout_millis.max(1),
                ),
                reload_interval: Duration::from_millis(
                    config.server_reload_check_interval_millis.max(10),
                ),
            }),
        }))
    }

    pub fn mode(&self) -> TlsMode {
        self.inner.mode
    }

    /// Tells TLS from plaintext by the first byte (waiting up to `first_byte_timeout` for
    /// it), refuses plaintext when enforcing, and runs the handshake within the handshake
    /// timeout. Runs in the connection's own task.
    pub async fn accept(
        &self,
        stream: TcpStream,
        first_byte_timeout: Duration,
    ) -> Result<Accepted, Refused> {
        let mut first = [0u8; 1];
        let peeked = tokio::time::timeout(first_byte_timeout, stream.peek(&mut first))
            .await
            .map_err(|_| Refused::Silent(first_byte_timeout))?
            .map_err(Refused::Io)?;
        if peeked == 0 {
            return Err(Refused::ClosedEarly);
        }
        if first[0] != TLS_HANDSHAKE_RECORD {
            return match self.inner.mode {
                TlsMode::Enforcing => Err(Refused::Plaintext),
                TlsMode::Permissive | TlsMode::Disabled => Ok(Accepted::Plain(stream)),
            };
        }
        let acceptor = self.inner.current.read().clone();
        let timeout = self.inner.handshake_timeout;
        let tls = tokio::time::timeout(timeout, acceptor.accept(stream))
            .await
            .map_err(|_| Refused::HandshakeTimeout(timeout))?
            .map_err(Refused::Handshake)?;
        Ok(Accepted::Tls(Box::new(tls)))
    }
}
