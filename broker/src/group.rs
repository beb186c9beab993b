//! Subscription groups (`subscriptionGroup.json`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::{
    DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper,
};

use crate::persist;

/// Groups created at startup (spec 7.5); the last four may consume in broadcast mode.
const SYSTEM_GROUPS: &[&str] = &[
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
];

pub struct SubscriptionGroupManager {
    path: PathBuf,
    table: RwLock<BTreeMap<String, SubscriptionGroupConfig>>,
    version: RwLock<DataVersion>,
    auto_create: bool,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl SubscriptionGroupManager {
    pub fn load(path: PathBuf, auto_create: bool) -> std::io::Result<Self> {
        let loaded: SubscriptionGroupWrapper = persist::load(&path)?.unwrap_or_default();
        let mut table = loaded.subscription_group_table;
        for group in SYSTEM_GROUPS {
            table
                .entry((*group).to_owned())
                .or_insert_with(|| SubscriptionGroupConfig::new(*group));
        }
        let mut version = loaded.data_version;
        if version.timestamp == 0 {
            version = DataVersion::new(now_ms());
        }
        let manager = Self {
            path,
            table: RwLock::new(table),
            version: RwLock::new(version),
            auto_create,
        };
        manager.persist();
        Ok(manager)
    }

    pub fn get(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.table.read().get(group).cloned()
    }

    /// The group's config, auto-created with defaults when allowed (spec 7.7).
    pub fn find_or_create(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        if let Some(config) = self.get(group) {
            return Some(config);
        }
        if !self.auto_create || group.trim().is_empty() {
            return None;
        }
        let config = SubscriptionGroupConfig::new(group);
        tracing::info!(event = "GROUP_CREATED", %group, "subscription group auto-created");
        self.table.write().insert(group.to_owned(), config.clone());
        self.changed();
        Some(config)
    }

    pub fn update(&self, config: SubscriptionGroupConfig) {
        tracing::info!(event = "GROUP_UPDATED", group = %config.group_name, "subscription group created or updated");
        self.table.write().insert(config.group_name.clone(), config);
        self.changed();
    }

    pub fn delete(&self, group: &str) -> bool {
        let removed = self.table.write().remove(group).is_some();
        if removed {
            tracing::info!(event = "GROUP_DELETED", %group, "subscription group deleted");
            self.changed();
        }
        removed
    }

    pub fn wrapper(&self) -> SubscriptionGroupWrapper {
        SubscriptionGroupWrapper {
            data_version: *self.version.read(),
            subscription_group_table: self.table.read().clone(),
        }
    }

    /// A slave takes its master's groups when their version changed (spec 9.4).
    pub fn replace_from_master(&self, master: SubscriptionGroupWrapper) -> bool {
        if *self.version.read() == master.data_version {
            return false;
        }
        *self.table.write() = master.subscription_group_table;
        *self.version.write() = master.data_version;
        self.persist();
        true
    }

    fn changed(&self) {
        self.version.write().next(now_ms());
        self.persist();
    }

    pub fn persist(&self) {
        if let Err(e) = persist::store(&self.path, &self.wrapper()) {
            tracing::error!(file = %self.path.display(), error = %e, "cannot persist subscriptionGroup.json");
        }
    }
}
