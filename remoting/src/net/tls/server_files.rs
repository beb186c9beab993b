//! The files a server's TLS is built from, and the rustls configuration built from them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;

use super::config::{ClientAuth, TlsConfig};
use super::error::TlsError;
use super::pem::{read_certificates, read_private_key, read_roots};
use super::provider;

/// Certificate, key and client CA of a server, and whether clients need certificates.
#[derive(Debug, Clone)]
pub(crate) struct ServerTlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub trust: Option<PathBuf>,
    pub client_auth: ClientAuth,
    /// Protocols offered in the handshake (ALPN), e.g. `h2` for gRPC; empty for remoting.
    pub alpn: Vec<Vec<u8>>,
}

const BECAUSE_TLS_ON: &str = "tls.server.mode is permissive or enforcing";
const BECAUSE_CLIENT_AUTH: &str = "tls.server.need.client.auth is optional or require";

impl ServerTlsFiles {
    pub fn from_config(config: &TlsConfig) -> Result<Self, TlsError> {
        let cert = config.server_cert_path.clone().ok_or(TlsError::Missing {
            key: "tls.server.certPath",
            because: BECAUSE_TLS_ON,
        })?;
        let key = config.server_key_path.clone().ok_or(TlsError::Missing {
            key: "tls.server.keyPath",
            because: BECAUSE_TLS_ON,
        })?;
        let trust = config.server_trust_cert_path.clone();
        if config.server_need_client_auth != ClientAuth::None && trust.is_none() {
            return Err(TlsError::Missing {
                key: "tls.server.trustCertPath",
                because: BECAUSE_CLIENT_AUTH,
            });
        }
        Ok(Self {
            cert,
            key,
            trust,
            client_auth: config.server_need_client_auth,
            alpn: Vec::new(),
        })
    }

    /// The files to watch for changes.
    pub fn paths(&self) -> Vec<&Path> {
        let mut paths = vec![self.cert.as_path(), self.key.as_path()];
        paths.extend(self.trust.as_deref());
        paths
    }

    /// Reads the files and builds the rustls configuration (blocking: file reads).
    pub fn build(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let certs = read_certificates(&self.cert)?;
        let key = read_private_key(&self.key)?;
        let provider = provider();
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|source| TlsError::Rustls {
                what: "TLS protocol versions",
                source,
            })?;
        let builder = match (&self.trust, self.client_auth) {
            (Some(trust), ClientAuth::Optional | ClientAuth::Require) => {
                let roots = Arc::new(read_roots(trust)?);
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
                let verifier = if self.client_auth == ClientAuth::Optional {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                builder.with_client_cert_verifier(verifier.build()?)
            }
            _ => builder.with_no_client_auth(),
        };
        let mut config =
            builder
                .with_single_cert(certs, key)
                .map_err(|source| TlsError::Rustls {
                    what: "the certificate and key do not make a usable pair",
                    source,
                })?;
        config.alpn_protocols = self.alpn.clone();
        Ok(Arc::new(config))
    }
}
