//! Certificates and keys from PEM files.

use std::path::Path;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::RootCertStore;

use super::error::TlsError;

/// Markers of the encrypted key formats (PKCS#8 EncryptedPrivateKeyInfo, OpenSSL's legacy
/// `Proc-Type: 4,ENCRYPTED` headers).
const ENCRYPTED_KEY_MARKERS: &[&str] = &["ENCRYPTED PRIVATE KEY", "Proc-Type: 4,ENCRYPTED"];

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

fn bad_pem(path: &Path, error: pem::Error) -> TlsError {
    TlsError::BadPem {
        path: path.to_owned(),
        reason: error.to_string(),
    }
}

/// Every certificate in the file, in order (a chain: leaf first).
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad_pem(path, e))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(certs)
}

/// The first private key in the file; encrypted keys are refused with a clear error.
pub fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    if ENCRYPTED_KEY_MARKERS.iter().any(|m| text.contains(m)) {
        return Err(TlsError::EncryptedKey {
            path: path.to_owned(),
        });
    }
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(key) => Ok(key),
        Err(pem::Error::NoItemsFound) => Err(TlsError::NoPrivateKey {
            path: path.to_owned(),
        }),
        Err(e) => Err(bad_pem(path, e)),
    }
}

/// The CA certificates of a trust file.
pub fn read_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in read_certificates(path)? {
        roots.add(cert).map_err(|e| TlsError::BadPem {
            path: path.to_owned(),
            reason: format!("not a usable CA certificate: {e}"),
        })?;
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_encrypted_and_missing_keys_clearly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let encrypted = dir.path().join("enc.key");
        std::fs::write(
            &encrypted,
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n",
        )
        .expect("write");
        assert!(matches!(
            read_private_key(&encrypted),
            Err(TlsError::EncryptedKey { .. })
        ));
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "nothing here\n").expect("write");
        assert!(matches!(
            read_private_key(&empty),
            Err(TlsError::NoPrivateKey { .. })
        ));
        assert!(matches!(
            read_certificates(&empty),
            Err(TlsError::NoCertificate { .. })
        ));
        assert!(matches!(
            read_certificates(&dir.path().join("absent.pem")),
            Err(TlsError::Read { .. })
        ));
    }

    #[test]
    fn reads_generated_pem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        std::fs::write(dir.path().join("c.pem"), cert.pem()).expect("write");
        std::fs::write(dir.path().join("k.pem"), key.serialize_pem()).expect("write");
        assert_eq!(
            read_certificates(&dir.path().join("c.pem"))
                .expect("certs")
                .len(),
            1
        );
        read_private_key(&dir.path().join("k.pem")).expect("key");
        assert_eq!(
            read_roots(&dir.path().join("c.pem")).expect("roots").len(),
            1
        );
    }
}
