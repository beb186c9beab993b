//! The TLS keys, named as RocketMQ's `TlsSystemConfig` names them, for `broker.conf`,
//! `namesrv.conf` and RocketMQ's separate `tls.config.file`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use stellmq_config::{properties_config, read_properties_file, ConfigError, ConfigValue};

properties_config! {
    /// TLS settings of a server's remoting port and of a process's outbound connections.
    pub struct TlsConfig {
        /// TLS on the remoting port: `disabled` (plaintext only), `permissive` (plaintext
        /// and TLS on one port, told apart by the first byte) or `enforcing` (TLS only; a
        /// plaintext connection is closed). Also read as `tlsMode`. StellMQ's default is
        /// disabled (RocketMQ's is permissive with a generated test certificate).
        server_mode: TlsMode = "tls.server.mode" => TlsMode::Disabled,
        /// The server's X.509 certificate chain, PEM (leaf first). Reloaded when it changes.
        server_cert_path: Option<PathBuf> = "tls.server.certPath" => None,
        /// The server's private key, PEM (PKCS#8, PKCS#1 or SEC1), unencrypted. Reloaded
        /// when it changes.
        server_key_path: Option<PathBuf> = "tls.server.keyPath" => None,
        /// Password of an encrypted server key. StellMQ refuses encrypted keys with a clear
        /// error: decrypt it with `openssl pkcs8 -topk8 -nocrypt`.
        server_key_password: String = "tls.server.keyPassword" => String::new(),
        /// Client certificates: `none`, `optional` (verified when sent) or `require`.
        server_need_client_auth: ClientAuth = "tls.server.need.client.auth" => ClientAuth::None,
        /// CA certificates (PEM) that client certificates must chain to. Reloaded when it
        /// changes.
        server_trust_cert_path: Option<PathBuf> = "tls.server.trustCertPath" => None,
        /// A TLS handshake that takes longer than this (ms) closes the connection. (StellMQ key.)
        server_handshake_timeout_millis: u64 = "tls.server.handshakeTimeoutMillis" => 10_000,
        /// How often (ms) the certificate, key and CA files are checked for changes.
        /// (StellMQ key.)
        server_reload_check_interval_millis: u64 = "tls.server.reloadCheckIntervalMillis" => 1_000,
        /// Outbound connections (to name servers, to the master) use TLS.
        client_enable: bool = "tls.enable" => false,
        /// CA certificates (PEM) the peer's certificate must chain to; the certificate must
        /// also name the host or IP address dialled.
        client_trust_cert_path: Option<PathBuf> = "tls.client.trustCertPath" => None,
        /// Certificate chain (PEM) presented to servers that ask for one.
        client_cert_path: Option<PathBuf> = "tls.client.certPath" => None,
        /// Private key (PEM, unencrypted) of tls.client.certPath.
        client_key_path: Option<PathBuf> = "tls.client.keyPath" => None,
        /// Password of an encrypted client key (refused, as tls.server.keyPassword).
        client_key_password: String = "tls.client.keyPassword" => String::new(),
        /// Trust any server certificate (RocketMQ's test mode): encrypts, authenticates
        /// nobody. An explicit opt-in; never for production.
        test_mode_enable: bool = "tls.test.mode.enable" => false,
        /// A properties file with more of these keys (all but tls.server.mode and
        /// tls.enable), read at start-up; its values win. Empty = none.
        config_file: Option<PathBuf> = "tls.config.file" => None,
    }
}

/// RocketMQ's name for `tls.server.mode` in its own config classes.
const MODE_ALIAS: &str = "tlsMode";

/// Keys `tls.config.file` may not set, as in RocketMQ.
const NOT_FROM_FILE: &[&str] = &["tls.server.mode", "tls.enable", "tls.config.file"];

impl TlsConfig {
    /// Sets one key, `tlsMode` included; `Ok(false)` when it is not a TLS key.
    pub fn set_key(&mut self, key: &str, value: &str) -> Result<bool, ConfigError> {
        if key != MODE_ALIAS {
            return self.set(key, value);
        }
        // Errors name the key the file used.
        self.set("tls.server.mode", value).map_err(|e| match e {
            ConfigError::InvalidValue {
                value, expected, ..
            } => ConfigError::InvalidValue {
                key: MODE_ALIAS.to_owned(),
                value,
                expected,
            },
            other => other,
        })
    }

    /// Whether `key` is one of these keys (or the `tlsMode` alias).
    pub fn is_tls_key(key: &str) -> bool {
        key == MODE_ALIAS || Self::KEYS.contains(&key)
    }

    /// Applies the TLS keys of `props` (others ignored), then `tls.config.file` if set.
    pub fn load(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        for (key, value) in props {
            config.set_key(key, value)?;
        }
        config.merge_config_file()?;
        Ok(config)
    }

    /// Reads `tls.config.file`, if set, over these settings.
    pub fn merge_config_file(&mut self) -> Result<(), ConfigError> {
        let Some(path) = self.config_file.clone() else {
            return Ok(());
        };
        for (key, value) in read_properties_file(&path)? {
            if !NOT_FROM_FILE.contains(&key.as_str()) {
                self.set(&key, &value)?;
            }
        }
        Ok(())
    }

    /// The `(key, value)` pairs to print, with the key passwords masked.
    pub fn printable_entries(&self) -> Vec<(&'static str, String)> {
        let mut entries = self.entries();
        for (key, value) in &mut entries {
            if key.ends_with("keyPassword") && !value.is_empty() {
                *value = "******".to_owned();
            }
        }
        entries
    }
}

/// RocketMQ's `TlsMode`: what a server's remoting port accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Plaintext only.
    #[default]
    Disabled,
    /// Plaintext and TLS on the same port.
    Permissive,
    /// TLS only.
    Enforcing,
}

impl ConfigValue for TlsMode {
    const EXPECTED: &'static str = "disabled, permissive or enforcing";
    fn parse_value(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "disabled" => Some(Self::Disabled),
            "permissive" => Some(Self::Permissive),
            "enforcing" => Some(Self::Enforcing),
            _ => None,
        }
    }
    fn render(&self) -> String {
        match self {
            Self::Disabled => "disabled",
            Self::Permissive => "permissive",
            Self::Enforcing => "enforcing",
        }
        .to_owned()
    }
}

/// `tls.server.need.client.auth`: whether clients must present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    #[default]
    None,
    /// A certificate is verified when the client sends one.
    Optional,
    /// Clients without a valid certificate are refused.
    Require,
}

impl ConfigValue for ClientAuth {
    const EXPECTED: &'static str = "none, optional or require";
    fn parse_value(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "" | "none" => Some(Self::None),
            "optional" => Some(Self::Optional),
            "require" => Some(Self::Require),
            _ => None,
        }
    }
    fn render(&self) -> String {
        match self {
            Self::None => "none",
            Self::Optional => "optional",
            Self::Require => "require",
        }
        .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_config::parse_properties;

    #[test]
    fn reads_rocketmq_keys_and_the_alias() {
        let props = parse_properties(
            "tlsMode=ENFORCING\ntls.server.certPath=/c.pem\ntls.server.need.client.auth=require\ntls.enable=true\nlistenPort=1\n",
        );
        let config = TlsConfig::load(&props).expect("valid");
        assert_eq!(config.server_mode, TlsMode::Enforcing);
        assert_eq!(config.server_cert_path, Some(PathBuf::from("/c.pem")));
        assert_eq!(config.server_need_client_auth, ClientAuth::Require);
        assert!(config.client_enable);
        assert!(TlsConfig::is_tls_key("tlsMode"));
        assert!(!TlsConfig::is_tls_key("listenPort"));
    }

    #[test]
    fn refuses_unknown_modes() {
        let err = TlsConfig::default()
            .set_key("tls.server.mode", "strict")
            .expect_err("invalid");
        assert!(err
            .to_string()
            .contains("disabled, permissive or enforcing"));
        let err = TlsConfig::default()
            .set_key("tlsMode", "strict")
            .expect_err("invalid");
        assert!(err.to_string().starts_with("config key 'tlsMode'"), "{err}");
    }

    #[test]
    fn config_file_wins_except_for_mode_and_enable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("tls.properties");
        std::fs::write(
            &file,
            "tls.server.mode=enforcing\ntls.enable=true\ntls.server.keyPath=/from-file.key\ntls.test.mode.enable=true\n",
        )
        .expect("write");
        let props = parse_properties(&format!(
            "tls.server.mode=permissive\ntls.server.keyPath=/conf.key\ntls.config.file={}\n",
            file.display()
        ));
        let config = TlsConfig::load(&props).expect("valid");
        assert_eq!(config.server_mode, TlsMode::Permissive);
        assert!(!config.client_enable);
        assert_eq!(
            config.server_key_path,
            Some(PathBuf::from("/from-file.key"))
        );
        assert!(config.test_mode_enable);
    }

    #[test]
    fn masks_passwords_when_printed() {
        let mut config = TlsConfig::default();
        config
            .set_key("tls.server.keyPassword", "secret")
            .expect("valid");
        let printed = config.printable_entries();
        assert!(printed
            .iter()
            .any(|(k, v)| *k == "tls.server.keyPassword" && v == "******"));
    }
}
