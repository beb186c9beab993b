//! The broker's identity in controller mode, in RocketMQ 5's files beside the store.
//!
//! `<storePathRootDir>/brokerIdentity` holds `clusterName#brokerName#brokerId` once the
//! controller has assigned this broker its id; `brokerIdentity-temp` holds
//! `clusterName#brokerName#brokerId#registerCheckCode` between asking for an id and the
//! controller granting it, so a broker that restarts halfway applies for the same id with the
//! same check code instead of taking a second one. The register check code is
//! `<brokerAddress>;<millis>`, as RocketMQ makes it.
//!
//! The functions here do file I/O: call them from a blocking thread.

use std::path::{Path, PathBuf};

use stellmq_config::write_atomically;

/// File name of the assigned identity.
pub const IDENTITY_FILE: &str = "brokerIdentity";
/// File name of an identity being applied for.
pub const TEMP_IDENTITY_FILE: &str = "brokerIdentity-temp";

/// An identity the controller granted (or is being asked for, with its check code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerIdentityFile {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    /// Only in the temp file.
    pub register_check_code: Option<String>,
}

/// Why an identity file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is damaged ({reason}); remove it to let the broker apply for a new id")]
    Damaged { path: PathBuf, reason: String },
    #[error(
        "{path} names cluster {found_cluster} and broker {found_broker}, but this broker is \
         {cluster}/{broker}; fix the config or remove the file"
    )]
    OtherBroker {
        path: PathBuf,
        found_cluster: String,
        found_broker: String,
        cluster: String,
        broker: String,
    },
}

impl BrokerIdentityFile {
    fn encode(&self) -> String {
        let mut text = format!(
            "{}#{}#{}",
            self.cluster_name, self.broker_name, self.broker_id
        );
        if let Some(code) = &self.register_check_code {
            text.push('#');
            text.push_str(code);
        }
        text
    }

    fn decode(text: &str, temp: bool) -> Result<Self, String> {
        let fields: Vec<&str> = text.trim().split('#').collect();
        let wanted = if temp { 4 } else { 3 };
        // A check code holds an address and a time, never a '#'; anything else is damage.
        let (cluster_name, broker_name, broker_id, check_code) = match fields.as_slice() {
            [cluster, broker, id] if !temp => (cluster, broker, id, None),
            [cluster, broker, id, code] if temp => (cluster, broker, id, Some(code)),
            _ => return Err(format!("{} fields, expected {wanted}", fields.len())),
        };
        if fields.iter().any(|f| f.is_empty()) {
            return Err("an empty field".into());
        }
        let broker_id = broker_id
            .parse::<i64>()
            .ok()
            .filter(|id| *id > 0)
            .ok_or_else(|| format!("broker id {broker_id:?} is not a positive number"))?;
        Ok(Self {
            cluster_name: (*cluster_name).to_owned(),
            broker_name: (*broker_name).to_owned(),
            broker_id,
            register_check_code: check_code.map(|code| (*code).to_owned()),
        })
    }

    /// Refuses a file written for another cluster or brokerName.
    pub fn check_belongs(
        &self,
        path: &Path,
        cluster: &str,
        broker: &str,
    ) -> Result<(), MetadataError> {
        if self.cluster_name == cluster && self.broker_name == broker {
            return Ok(());
        }
        Err(MetadataError::OtherBroker {
            path: path.to_owned(),
            found_cluster: self.cluster_name.clone(),
            found_broker: self.broker_name.clone(),
            cluster: cluster.to_owned(),
            broker: broker.to_owned(),
        })
    }
}

/// The two identity files of one store.
#[derive(Debug, Clone)]
pub struct IdentityFiles {
    pub assigned: PathBuf,
    pub temp: PathBuf,
}

impl IdentityFiles {
    pub fn in_store(store_root: &Path) -> Self {
        Self {
            assigned: store_root.join(IDENTITY_FILE),
            temp: store_root.join(TEMP_IDENTITY_FILE),
        }
    }

    /// The granted identity, if any.
    pub fn read_assigned(&self) -> Result<Option<BrokerIdentityFile>, MetadataError> {
        read(&self.assigned, false)
    }

    /// The identity being applied for, if any.
    pub fn read_temp(&self) -> Result<Option<BrokerIdentityFile>, MetadataError> {
        read(&self.temp, true)
    }

    /// Records the id this broker is about to apply for.
    pub fn write_temp(&self, identity: &BrokerIdentityFile) -> Result<(), MetadataError> {
        write(&self.temp, identity)
    }

    /// Records the granted id, then forgets the application.
    pub fn promote_temp(&self, granted: &BrokerIdentityFile) -> Result<(), MetadataError> {
        let assigned = BrokerIdentityFile {
            register_check_code: None,
            ..granted.clone()
        };
        write(&self.assigned, &assigned)?;
        self.clear_temp()
    }

    /// Forgets an application the controller refused.
    pub fn clear_temp(&self) -> Result<(), MetadataError> {
        remove(&self.temp)
    }
}

fn read(path: &Path, temp: bool) -> Result<Option<BrokerIdentityFile>, MetadataError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(MetadataError::Io {
                what: "read",
                path: path.to_owned(),
                source,
            })
        }
    };
    BrokerIdentityFile::decode(&text, temp)
        .map(Some)
        .map_err(|reason| MetadataError::Damaged {
            path: path.to_owned(),
            reason,
        })
}

fn write(path: &Path, identity: &BrokerIdentityFile) -> Result<(), MetadataError> {
    write_atomically(path, identity.encode().as_bytes()).map_err(|source| MetadataError::Io {
        what: "write",
        path: path.to_owned(),
        source,
    })
}

fn remove(path: &Path) -> Result<(), MetadataError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(MetadataError::Io {
            what: "remove",
            path: path.to_owned(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(code: Option<&str>) -> BrokerIdentityFile {
        BrokerIdentityFile {
            cluster_name: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            broker_id: 2,
            register_check_code: code.map(str::to_owned),
        }
    }

    #[test]
    fn files_use_rocketmq_layout() {
        let dir = tempfile::tempdir().unwrap();
        let files = IdentityFiles::in_store(dir.path());
        assert_eq!(files.read_assigned().unwrap(), None);
        let applied = identity(Some("127.0.0.1:10911;1700000000000"));
        files.write_temp(&applied).unwrap();
        assert_eq!(
            std::fs::read_to_string(&files.temp).unwrap(),
            "DefaultCluster#broker-a#2#127.0.0.1:10911;1700000000000"
        );
        assert_eq!(files.read_temp().unwrap(), Some(applied.clone()));

        files.promote_temp(&applied).unwrap();
        assert_eq!(
            std::fs::read_to_string(&files.assigned).unwrap(),
            "DefaultCluster#broker-a#2"
        );
        assert_eq!(files.read_temp().unwrap(), None);
        assert_eq!(files.read_assigned().unwrap(), Some(identity(None)));
    }

    #[test]
    fn damaged_files_are_reported_not_guessed() {
        let dir = tempfile::tempdir().unwrap();
        let files = IdentityFiles::in_store(dir.path());
        for bad in ["", "a#b", "a#b#x", "a#b#0", "a##2", "a#b#2#extra"] {
            std::fs::write(&files.assigned, bad).unwrap();
            let err = files.read_assigned().unwrap_err();
            assert!(
                matches!(err, MetadataError::Damaged { .. }),
                "{bad:?}: {err}"
            );
        }
        std::fs::write(&files.temp, "a#b#2").unwrap();
        assert!(files.read_temp().is_err());
    }

    #[test]
    fn another_brokers_file_is_refused() {
        let id = identity(None);
        let path = Path::new("/x/brokerIdentity");
        assert!(id.check_belongs(path, "DefaultCluster", "broker-a").is_ok());
        let err = id
            .check_belongs(path, "DefaultCluster", "broker-b")
            .unwrap_err();
        assert!(err.to_string().contains("broker-b"), "{err}");
    }
}
