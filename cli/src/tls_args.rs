//! `--tls` and friends: the client TLS settings of `mqadmin` and `mqbench`.

use std::path::PathBuf;

use stellmq_client::ClientTlsConfig;

/// How the tools connect: plaintext, or TLS (RocketMQ's `tls.enable` and `tls.client.*`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// Connect to name servers and brokers with TLS (tls.enable).
    #[arg(long = "tls", global = true)]
    pub tls: bool,
    /// CA certificates (PEM) the servers' certificates must chain to
    /// (tls.client.trustCertPath); implies --tls.
    #[arg(long = "tlsTrustCertPath", global = true, value_name = "PEM")]
    pub trust_cert_path: Option<PathBuf>,
    /// Client certificate chain (PEM) for servers that require one (tls.client.certPath).
    #[arg(long = "tlsCertPath", global = true, value_name = "PEM")]
    pub cert_path: Option<PathBuf>,
    /// Private key (PEM) of --tlsCertPath (tls.client.keyPath).
    #[arg(long = "tlsKeyPath", global = true, value_name = "PEM")]
    pub key_path: Option<PathBuf>,
    /// Trust any server certificate (tls.test.mode.enable): encrypts, authenticates nobody;
    /// for tests only. Implies --tls.
    #[arg(long = "tlsTestMode", global = true)]
    pub test_mode: bool,
}

impl TlsArgs {
    pub fn client_tls(&self) -> ClientTlsConfig {
        ClientTlsConfig {
            enable: self.tls || self.trust_cert_path.is_some() || self.test_mode,
            trust_cert_path: self.trust_cert_path.clone(),
            cert_path: self.cert_path.clone(),
            key_path: self.key_path.clone(),
            trust_any_server: self.test_mode,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trust_path_or_test_mode_turns_tls_on() {
        assert!(!TlsArgs::default().client_tls().enable);
        let trusted = TlsArgs {
            trust_cert_path: Some("ca.pem".into()),
            ..TlsArgs::default()
        };
        assert!(trusted.client_tls().enable);
        let test_mode = TlsArgs {
            test_mode: true,
            ..TlsArgs::default()
        };
        assert!(test_mode.client_tls().trust_any_server);
    }
}
