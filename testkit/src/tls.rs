//! Certificates for TLS tests: a certificate authority of the test's own, and the
//! certificates it issues, as PEM files in a temporary directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use stellmq_remoting::net::tls::{ClientTls, ClientTlsConfig, TlsConfig, TlsMode};
use stellmq_remoting::net::ClientConfig;

/// The names a loopback server's certificate carries.
pub const LOOPBACK_NAMES: &[&str] = &["127.0.0.1", "localhost"];

/// A test certificate authority writing its files to a temporary directory.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    dir: tempfile::TempDir,
    issued: AtomicUsize,
}

impl TestCa {
    /// A new CA named `name`, its certificate written to [`TestCa::ca_path`].
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("a CA key");
        let issuer = CertifiedIssuer::self_signed(params, key).expect("a CA certificate");
        let dir = tempfile::tempdir().expect("a temporary directory for certificates");
        std::fs::write(dir.path().join("ca.pem"), issuer.pem()).expect("write the CA");
        Self {
            issuer,
            dir,
            issued: AtomicUsize::new(0),
        }
    }

    /// The CA certificate (PEM): what clients or servers trust.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Issues a certificate for `names` (IP addresses or host names) and writes it and its
    /// key to new files; returns `(certificate, key)`.
    pub fn issue(&self, names: &[&str]) -> (PathBuf, PathBuf) {
        let n = self.issued.fetch_add(1, Ordering::Relaxed);
        let cert = self.dir.path().join(format!("cert-{n}.pem"));
        let key = self.dir.path().join(format!("key-{n}.pem"));
        self.issue_to(names, &cert, &key);
        (cert, key)
    }

    /// Issues a certificate for `names` and writes it over `cert` and its key over `key`
    /// (the key first, each file replaced at once by a rename).
    pub fn issue_to(&self, names: &[&str], cert: &Path, key: &Path) {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("certificate parameters");
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().map_or("test", |n| n));
        let key_pair = KeyPair::generate().expect("a key");
        let issued = params
            .signed_by(&key_pair, &self.issuer)
            .expect("a certificate");
        replace_file(key, &key_pair.serialize_pem());
        replace_file(cert, &issued.pem());
    }

    /// Server TLS settings in `mode` with a new certificate for the loopback address.
    pub fn server_tls(&self, mode: TlsMode) -> TlsConfig {
        let (cert, key) = self.issue(LOOPBACK_NAMES);
        TlsConfig {
            server_mode: mode,
            server_cert_path: Some(cert),
            server_key_path: Some(key),
            ..TlsConfig::default()
        }
    }

    /// Client TLS settings that trust this CA.
    pub fn client_tls(&self) -> ClientTlsConfig {
        ClientTlsConfig {
            enable: true,
            trust_cert_path: Some(self.ca_path()),
            ..ClientTlsConfig::default()
        }
    }

    /// A remoting client configuration that trusts this CA.
    pub fn client_config(&self) -> ClientConfig {
        client_config(&self.client_tls())
    }
}

/// A remoting client configuration with `tls`.
pub fn client_config(tls: &ClientTlsConfig) -> ClientConfig {
    ClientConfig {
        tls: ClientTls::from_config(tls).expect("valid client TLS settings"),
        ..ClientConfig::default()
    }
}

fn replace_file(path: &Path, contents: &str) {
    let temporary = path.with_extension("new");
    std::fs::write(&temporary, contents).expect("write a certificate file");
    std::fs::rename(&temporary, path).expect("replace a certificate file");
}
