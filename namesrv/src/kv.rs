//! The name server's KV store (PUT/GET/DELETE_KV_CONFIG), persisted to `kvConfigPath` as
//! `{"configTable":{"<namespace>":{"<key>":"<value>"}}}`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use stellmq_config::{read_with_backup, write_atomically};
use stellmq_remoting::protocol::body::fastjson;

/// Namespace of order-topic configurations (protocol.md 8.5).
pub const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KvConfigFile {
    #[serde(default)]
    config_table: BTreeMap<String, BTreeMap<String, String>>,
}

/// Namespaced key/value pairs. Writes persist the whole table before returning.
pub struct KvConfigManager {
    path: PathBuf,
    table: RwLock<BTreeMap<String, BTreeMap<String, String>>>,
}

impl KvConfigManager {
    /// Loads the table from `path` (or its `.bak`); a missing file is an empty table.
    pub fn load(path: PathBuf) -> std::io::Result<Self> {
        let file = read_with_backup(&path, |bytes| fastjson::decode::<KvConfigFile>(bytes).ok())?
            .unwrap_or_default();
        tracing::info!(path = %path.display(), namespaces = file.config_table.len(), "KV config loaded");
        Ok(Self {
            path,
            table: RwLock::new(file.config_table),
        })
    }

    pub fn put(&self, namespace: &str, key: &str, value: &str) -> std::io::Result<()> {
        let mut table = self.table.write();
        table
            .entry(namespace.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
        self.persist(&table)
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.table
            .read()
            .get(namespace)
            .and_then(|ns| ns.get(key))
            .cloned()
    }

    pub fn delete(&self, namespace: &str, key: &str) -> std::io::Result<()> {
        let mut table = self.table.write();
        let Some(ns) = table.get_mut(namespace) else {
            return Ok(());
        };
        if ns.remove(key).is_none() {
            return Ok(());
        }
        if ns.is_empty() {
            table.remove(namespace);
        }
        self.persist(&table)
    }

    pub fn namespace(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.table.read().get(namespace).cloned()
    }

    // Holding the write lock while persisting keeps the file in step with memory.
    fn persist(&self, table: &BTreeMap<String, BTreeMap<String, String>>) -> std::io::Result<()> {
        let file = KvConfigFile {
            config_table: table.clone(),
        };
        let text = fastjson::encode_with(&file, fastjson::Style::FastjsonPretty);
        write_atomically(&self.path, text.as_bytes())
    }
}
