//! The client side: `tls.enable`, the CA a server's certificate must chain to, a client
//! certificate for servers that ask for one, and RocketMQ's test mode (trust any server).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::config::TlsConfig;
use super::error::TlsError;
use super::pem::{read_certificates, read_private_key, read_roots};
use super::provider;

/// Client TLS settings (RocketMQ's `tls.enable` and `tls.client.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ClientTlsConfig {
    /// `tls.enable`: connect with TLS.
    pub enable: bool,
    /// `tls.client.trustCertPath`: CA certificates (PEM) the server's must chain to; the
    /// certificate must also name the host or IP address dialled.
    pub trust_cert_path: Option<PathBuf>,
    /// `tls.client.certPath`: a certificate chain for servers that ask for one.
    pub cert_path: Option<PathBuf>,
    /// `tls.client.keyPath`: its private key (PEM, unencrypted).
    pub key_path: Option<PathBuf>,
    /// `tls.test.mode.enable`: trust any server certificate. Encrypts, but authenticates
    /// nobody; an explicit opt-in for tests.
    pub trust_any_server: bool,
}

impl TlsConfig {
    /// The client side of these settings.
    pub fn client(&self) -> ClientTlsConfig {
        ClientTlsConfig {
            enable: self.client_enable,
            trust_cert_path: self.client_trust_cert_path.clone(),
            cert_path: self.client_cert_path.clone(),
            key_path: self.client_key_path.clone(),
            trust_any_server: self.test_mode_enable,
        }
    }
}

/// A client's TLS context, shared by its connections. Cheap to clone.
#[derive(Clone)]
pub struct ClientTls {
    connector: TlsConnector,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientTls")
    }
}

impl ClientTls {
    /// The TLS context `config` asks for, with its files read; `None` when TLS is off.
    pub fn from_config(config: &ClientTlsConfig) -> Result<Option<Self>, TlsError> {
        if !config.enable {
            return Ok(None);
        }
        let provider = provider();
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|source| TlsError::Rustls {
                what: "TLS protocol versions",
                source,
            })?;
        let builder = if config.trust_any_server {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(TrustAnyServer(provider)))
        } else {
            let trust = config.trust_cert_path.as_ref().ok_or(TlsError::Missing {
                key: "tls.client.trustCertPath",
                because: "tls.enable is true (or set tls.test.mode.enable to trust any server)",
            })?;
            let roots = Arc::new(read_roots(trust)?);
            let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(TlsError::ServerVerifier)?;
            builder.with_webpki_verifier(verifier)
        };
        let client_config = match (&config.cert_path, &config.key_path) {
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(read_certificates(cert)?, read_private_key(key)?)
                .map_err(|source| TlsError::Rustls {
                    what: "the client certificate and key do not make a usable pair",
                    source,
                })?,
            (Some(_), None) => {
                return Err(TlsError::Missing {
                    key: "tls.client.keyPath",
                    because: "tls.client.certPath is set",
                })
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Some(Self {
            connector: TlsConnector::from(Arc::new(client_config)),
        }))
    }

    /// Runs the client handshake over `stream` to `addr` (`host:port`), whose host the
    /// server's certificate must name.
    pub(crate) async fn connect(
        &self,
        addr: &str,
        stream: TcpStream,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let name = server_name(addr).map_err(std::io::Error::other)?;
        self.connector.connect(name, stream).await
    }
}

/// The host part of `host:port` (`[v6]:port` too) as a name to verify.
fn server_name(addr: &str) -> Result<ServerName<'static>, TlsError> {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).map_err(|_| TlsError::ServerName(host.to_owned()))
}

/// `tls.test.mode.enable`: any certificate is accepted, though the handshake signatures are
/// still checked (the server holds the key of the certificate it sent).
#[derive(Debug)]
struct TrustAnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for TrustAnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_from_addresses() {
        assert!(matches!(
            server_name("127.0.0.1:10911"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(matches!(
            server_name("[::1]:9876"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(matches!(
            server_name("broker-a.example:10911"),
            Ok(ServerName::DnsName(_))
        ));
        assert!(server_name("bad host:1").is_err());
    }

    #[test]
    fn enabled_without_trust_is_a_clear_error() {
        let err = ClientTls::from_config(&ClientTlsConfig {
            enable: true,
            ..Default::default()
        })
        .expect_err("no trust");
        assert!(err.to_string().contains("tls.client.trustCertPath"));
        assert!(ClientTls::from_config(&ClientTlsConfig::default())
            .expect("off")
            .is_none());
    }
}
