//! Subscription groups (kept in the [`MetadataStore`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::{
    DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper,
};
use stellmq_remoting::protocol::names::{self, NameError, SYSTEM_GROUP_PREFIX};
use thiserror::Error;

use crate::context::now_ms;
use crate::limits::{AutoCreateLimits, AutoCreateRefused};
use crate::metadata_journal::{JournalSlot, MetadataChange, MetadataJournal};
use crate::persist::{self, Generations, Persisted, WriteBehind};
use stellmq_metadata::{MetadataError, MetadataStore, Named};

/// Groups created at startup (protocol.md 7.5); the last four may consume in broadcast mode.
const SYSTEM_GROUPS: &[&str] = &[
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
];

/// Whether `group` is one of the broker's own (built in, or `CID_RMQ_SYS_...`): clients
/// may not delete it, nor consume or commit offsets with the broker's internal groups.
pub fn is_system_group(group: &str) -> bool {
    SYSTEM_GROUPS.contains(&group) || is_internal_group(group)
}

/// Groups the broker itself consumes with (transaction checks).
pub fn is_internal_group(group: &str) -> bool {
    group.starts_with(SYSTEM_GROUP_PREFIX)
}

/// Why a group could not be found or created.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GroupError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(transparent)]
    Limit(#[from] AutoCreateRefused),
    #[error("subscription group {0} does not exist and autoCreateSubscriptionGroup is off")]
    NotExist(String),
    #[error("the group {0} is reserved for the broker")]
    Reserved(String),
}

pub struct SubscriptionGroupManager {
    store: Arc<MetadataStore>,
    writes: WriteBehind<SubscriptionGroupConfig>,
    table: RwLock<BTreeMap<String, SubscriptionGroupConfig>>,
    version: RwLock<DataVersion>,
    /// `autoCreateSubscriptionGroup`, as last set (it changes at runtime).
    auto_create: AtomicBool,
    limits: Arc<AutoCreateLimits>,
    /// Where changes are written for the slaves (see [`crate::metadata_journal`]).
    journal: JournalSlot,
}

impl SubscriptionGroupManager {
    /// Loads the groups (blocking); changes are committed by the writer task.
    pub fn load(
        store: Arc<MetadataStore>,
        auto_create: bool,
        limits: Arc<AutoCreateLimits>,
    ) -> Result<Self, MetadataError> {
        let (mut table, version) = store.groups()?;
        let writes = WriteBehind::new("subscription groups");
        for group in SYSTEM_GROUPS {
            if !table.contains_key(*group) {
                let config = SubscriptionGroupConfig::new(*group);
                writes.changed((*group).to_owned(), Some(config.clone()));
                table.insert((*group).to_owned(), config);
            }
        }
        let version = version
            .filter(|v| v.timestamp != 0)
            .unwrap_or_else(|| DataVersion::new(now_ms()));
        Ok(Self {
            store,
            writes,
            table: RwLock::new(table),
            version: RwLock::new(version),
            auto_create: AtomicBool::new(auto_create),
            limits,
            journal: JournalSlot::new(),
        })
    }

    /// From now on every change is journaled (once the store and writer exist).
    pub fn set_journal(&self, journal: Arc<MetadataJournal>) {
        let _ = self.journal.set(journal);
    }

    fn journal(&self, change: impl FnOnce() -> MetadataChange) {
        if let Some(journal) = self.journal.get() {
            journal.record(&change());
        }
    }

    /// Groups configured.
    pub fn len(&self) -> usize {
        self.table.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.read().is_empty()
    }

    pub fn get(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.table.read().get(group).cloned()
    }

    /// Follows a runtime change of `autoCreateSubscriptionGroup`.
    pub fn set_auto_create(&self, enabled: bool) {
        self.auto_create.store(enabled, Ordering::Release);
    }

    /// The group's config, auto-created with defaults when allowed (protocol.md 7.7), for a
    /// client's pull, heartbeat or send-back.
    pub fn find_or_create(&self, group: &str) -> Result<SubscriptionGroupConfig, GroupError> {
        if let Some(config) = self.get(group) {
            return Ok(config);
        }
        names::check_group(group)?;
        if !self.auto_create.load(Ordering::Acquire) {
            return Err(GroupError::NotExist(group.to_owned()));
        }
        if is_internal_group(group) {
            return Err(GroupError::Reserved(group.to_owned()));
        }
        self.limits.admit_group(self.table.read().len())?;
        let config = SubscriptionGroupConfig::new(group);
        tracing::info!(event = "GROUP_CREATED", %group, "subscription group auto-created");
        self.journal(|| MetadataChange::Group(config.clone()));
        self.table.write().insert(group.to_owned(), config.clone());
        self.changed(group.to_owned(), Some(config.clone()));
        Ok(config)
    }

    /// Creates or replaces a group (admin); the generation to wait for.
    pub fn update(&self, config: SubscriptionGroupConfig) -> Result<u64, GroupError> {
        names::check_group(&config.group_name)?;
        tracing::info!(event = "GROUP_UPDATED", group = %config.group_name, "subscription group created or updated");
        self.journal(|| MetadataChange::Group(config.clone()));
        self.table
            .write()
            .insert(config.group_name.clone(), config.clone());
        Ok(self.changed(config.group_name.clone(), Some(config)))
    }

    /// Removes a group; the generation to wait for, or `None` if it did not exist.
    pub fn delete(&self, group: &str) -> Option<u64> {
        self.table.read().get(group)?;
        self.journal(|| MetadataChange::GroupDeleted(group.to_owned()));
        let removed = self.table.write().remove(group).is_some();
        removed.then(|| {
            tracing::info!(event = "GROUP_DELETED", %group, "subscription group deleted");
            self.changed(group.to_owned(), None)
        })
    }

    /// Waits until the change of `generation` is committed (false after a while).
    pub async fn persisted(&self, generation: u64) -> bool {
        self.writes.written(generation, persist::WRITE_WAIT).await
    }

    /// The groups as a restart would load them: what is committed.
    #[cfg(test)]
    pub(crate) fn committed(&self) -> BTreeMap<String, SubscriptionGroupConfig> {
        self.store.groups().expect("the store reads").0
    }

    pub fn data_version(&self) -> DataVersion {
        *self.version.read()
    }

    /// One page of the table (see [`crate::paging::page`]) with the current version.
    pub fn page(
        &self,
        asked_version: Option<&str>,
        seq: Option<i32>,
        max: usize,
    ) -> SubscriptionGroupWrapper {
        let data_version = *self.version.read();
        let table = crate::paging::page(&self.table.read(), asked_version, &data_version, seq, max);
        SubscriptionGroupWrapper {
            data_version,
            subscription_group_table: table,
        }
    }

    pub fn wrapper(&self) -> SubscriptionGroupWrapper {
        SubscriptionGroupWrapper {
            data_version: *self.version.read(),
            subscription_group_table: self.table.read().clone(),
        }
    }

    /// A slave takes its master's groups when their version changed (protocol.md 9.4); groups
    /// whose names are not valid are left out.
    pub fn replace_from_master(&self, mut master: SubscriptionGroupWrapper) -> bool {
        if *self.version.read() == master.data_version {
            return false;
        }
        master
            .subscription_group_table
            .retain(|name, _| names::check_group(name).is_ok());
        let mut table = self.table.write();
        for (name, change) in persist::diff(&table, &master.subscription_group_table) {
            self.writes.changed(name, change);
        }
        *table = master.subscription_group_table;
        *self.version.write() = master.data_version;
        true
    }

    fn changed(&self, group: String, config: Option<SubscriptionGroupConfig>) -> u64 {
        self.version.write().next(now_ms());
        self.writes.changed(group, config)
    }
}

impl Persisted for SubscriptionGroupManager {
    fn write_behind(&self) -> &dyn Generations {
        &self.writes
    }

    fn write_pending(&self) -> Result<(), MetadataError> {
        self.writes.commit_with(|changes| {
            let version = *self.version.read();
            self.store.write_named(Named::Groups, changes, &version)
        })
    }
}
