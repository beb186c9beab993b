//! The broker's JSON config files under `storePathRootDir/config`: fastjson's pretty dialect,
//! written atomically with a `.bak`, read back with either dialect.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use stellmq_remoting::config::{read_with_backup, write_atomically};
use stellmq_remoting::protocol::body::fastjson;

pub fn config_path(store_root: &Path, name: &str) -> PathBuf {
    store_root.join("config").join(name)
}

/// Loads a config file (or its backup); `None` when neither exists or parses.
pub fn load<T: DeserializeOwned>(path: &Path) -> std::io::Result<Option<T>> {
    read_with_backup(path, |bytes| match fastjson::decode::<T>(bytes) {
        Ok(value) => Some(value),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot parse config file");
            None
        }
    })
}

/// Writes a config file atomically.
pub fn store<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let text = fastjson::encode_with(value, fastjson::Style::FastjsonPretty);
    write_atomically(path, text.as_bytes())
}
