//! Why TLS settings could not be turned into a working configuration.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TlsError {
    #[error("{key} must be set when {because}")]
    Missing {
        key: &'static str,
        because: &'static str,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} holds no PEM certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)", path.display())]
    NoPrivateKey { path: PathBuf },
    #[error(
        "{} is an encrypted private key, which StellMQ does not read; decrypt it with \
         `openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.plain` and keep the file readable \
         by the broker's user only",
        path.display()
    )]
    EncryptedKey { path: PathBuf },
    #[error("{}: {reason}", path.display())]
    BadPem { path: PathBuf, reason: String },
    #[error("{what}: {source}")]
    Rustls {
        what: &'static str,
        #[source]
        source: rustls::Error,
    },
    #[error("client certificate verifier: {0}")]
    ClientVerifier(#[from] rustls::server::VerifierBuilderError),
    #[error("server certificate verifier: {0}")]
    ServerVerifier(rustls::server::VerifierBuilderError),
    #[error("'{0}' is not a host name or IP address a certificate can name")]
    ServerName(String),
}
