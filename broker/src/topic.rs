//! Topic configurations (kept in the [`MetadataStore`]): system topics, auto-creation,
//! permissions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use stellmq_remoting::protocol::body::{
    perm, DataVersion, TopicConfig, TopicConfigSerializeWrapper,
};
use stellmq_remoting::protocol::names::{self, NameError, SYSTEM_TOPIC_PREFIX};
use thiserror::Error;
use tokio::sync::Notify;

use crate::config::BrokerConfig;
use crate::context::now_ms;
use crate::limits::{AutoCreateLimits, AutoCreateRefused};
use crate::metadata_journal::{JournalSlot, MetadataChange, MetadataJournal};
use crate::persist::{self, Generations, Persisted, WriteBehind};
use stellmq_metadata::{MetadataError, MetadataStore, Named};

pub const AUTO_CREATE_TOPIC_KEY: &str = "TBW102";
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
pub const BENCHMARK_TOPIC: &str = "BenchmarkTest";
pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
pub use stellmq_remoting::protocol::names::{DLQ_PREFIX, RETRY_PREFIX};

/// Topics producers may not send to (protocol.md 7.5), besides every `rmq_sys_` topic.
pub const NOT_ALLOWED_SEND_TOPICS: &[&str] = &[
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT,
];

/// Whether producers may not send to `topic`.
pub fn is_not_allowed_send_topic(topic: &str) -> bool {
    NOT_ALLOWED_SEND_TOPICS.contains(&topic) || topic.starts_with(SYSTEM_TOPIC_PREFIX)
}

/// The most topics an incremental registration names; beyond, the whole table is sent.
const MAX_INCREMENTAL_REGISTRATION: usize = 1_000;

/// `table` as registered: with `broker_perm` lacking read or write, every topic is
/// reported with that reduced permission.
fn with_broker_perm(
    data_version: DataVersion,
    mut table: BTreeMap<String, TopicConfig>,
    broker_perm: Option<i32>,
) -> TopicConfigSerializeWrapper {
    if let Some(bp) = broker_perm.filter(|p| !perm::is_readable(*p) || !perm::is_writeable(*p)) {
        for config in table.values_mut() {
            config.perm &= bp | perm::INHERIT;
        }
    }
    TopicConfigSerializeWrapper {
        data_version,
        topic_config_table: table,
    }
}

/// Why a topic could not be created.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CreateTopicError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(transparent)]
    Limit(#[from] AutoCreateRefused),
    /// The template does not exist or does not allow inheriting (protocol.md 7.6).
    #[error("the topic cannot be auto-created from its template {0}")]
    NoTemplate(String),
}

pub struct TopicConfigManager {
    store: Arc<MetadataStore>,
    writes: WriteBehind<TopicConfig>,
    table: RwLock<BTreeMap<String, TopicConfig>>,
    version: RwLock<DataVersion>,
    system_topics: Vec<String>,
    /// `autoCreateTopicEnable`, as last set (it changes at runtime).
    auto_create_enabled: AtomicBool,
    limits: Arc<AutoCreateLimits>,
    /// Signalled when the name servers should hear about a change now.
    pub register_now: Arc<Notify>,
    /// Topics changed since the registrar last took them; `None` when there were too many
    /// to name, or a change touched every topic (then all are registered).
    unregistered: Mutex<Option<BTreeSet<String>>>,
    /// Where changes are written for the slaves (see [`crate::metadata_journal`]).
    journal: JournalSlot,
}

impl TopicConfigManager {
    /// Loads the topics (blocking) and makes sure the system topics exist; changes are
    /// committed by the writer task ([`persist::run_writer`]).
    pub fn load(
        store: Arc<MetadataStore>,
        config: &BrokerConfig,
        delay_levels: usize,
        limits: Arc<AutoCreateLimits>,
    ) -> Result<Self, MetadataError> {
        let (mut table, version) = store.topics()?;
        let writes = WriteBehind::new("topics");
        let mut system = Vec::new();
        let mut add = |config: TopicConfig| {
            system.push(config.topic_name.clone());
            if !table.contains_key(&config.topic_name) {
                writes.changed(config.topic_name.clone(), Some(config.clone()));
                table.insert(config.topic_name.clone(), config);
            }
        };
        if config.auto_create_topic_enable {
            let n = config.default_topic_queue_nums;
            add(TopicConfig::with_queues(
                AUTO_CREATE_TOPIC_KEY,
                n,
                n,
                perm::INHERIT | perm::READ | perm::WRITE,
            ));
        }
        add(TopicConfig::with_queues(SELF_TEST_TOPIC, 1, 1, 6));
        add(TopicConfig::with_queues(BENCHMARK_TOPIC, 1024, 1024, 6));
        let inherit_rw = |on: bool| {
            if on {
                perm::INHERIT | perm::READ | perm::WRITE
            } else {
                perm::INHERIT
            }
        };
        add(TopicConfig::with_queues(
            config.broker_cluster_name.clone(),
            16,
            16,
            inherit_rw(config.cluster_topic_enable),
        ));
        add(TopicConfig::with_queues(
            config.broker_name.clone(),
            1,
            1,
            inherit_rw(config.broker_topic_enable),
        ));
        add(TopicConfig::with_queues(OFFSET_MOVED_EVENT, 1, 1, 6));
        let levels = delay_levels.max(1) as i32;
        add(TopicConfig::with_queues(SCHEDULE_TOPIC, levels, levels, 6));
        if config.trace_topic_enable {
            add(TopicConfig::with_queues(
                config.msg_trace_topic_name.clone(),
                1,
                1,
                6,
            ));
        }
        add(TopicConfig::with_queues(
            format!("{}_REPLY_TOPIC", config.broker_cluster_name),
            1,
            1,
            6,
        ));
        let version = version
            .filter(|v| v.timestamp != 0)
            .unwrap_or_else(|| DataVersion::new(now_ms()));
        Ok(Self {
            store,
            writes,
            table: RwLock::new(table),
            version: RwLock::new(version),
            system_topics: system,
            auto_create_enabled: AtomicBool::new(config.auto_create_topic_enable),
            limits,
            register_now: Arc::new(Notify::new()),
            unregistered: Mutex::new(None),
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

    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.table.read().get(topic).cloned()
    }

    /// What `read` takes from a topic's config, without cloning the config.
    pub fn read<R>(&self, topic: &str, read: impl FnOnce(&TopicConfig) -> R) -> Option<R> {
        self.table.read().get(topic).map(read)
    }

    pub fn contains(&self, topic: &str) -> bool {
        self.table.read().contains_key(topic)
    }

    pub fn len(&self) -> usize {
        self.table.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.read().is_empty()
    }

    /// Topics created at startup, the fixed system topics and every `rmq_sys_` topic:
    /// admins may neither create nor delete them.
    pub fn is_system_topic(&self, topic: &str) -> bool {
        self.system_topics.iter().any(|t| t == topic) || is_not_allowed_send_topic(topic)
    }

    /// Creates or replaces a topic (admin); returns the generation to wait for with
    /// [`TopicConfigManager::persisted`].
    pub fn update(&self, config: TopicConfig) -> Result<u64, CreateTopicError> {
        names::check_topic(&config.topic_name)?;
        Ok(self.insert(config))
    }

    /// Journals, then inserts: the change precedes in the log every message that can see it.
    fn insert(&self, config: TopicConfig) -> u64 {
        tracing::info!(event = "TOPIC_CREATED", topic = %config.topic_name, read = config.read_queue_nums, write = config.write_queue_nums, perm = config.perm, "topic created or updated");
        self.journal(|| MetadataChange::Topic(config.clone()));
        self.table
            .write()
            .insert(config.topic_name.clone(), config.clone());
        self.changed(config.topic_name.clone(), Some(config))
    }

    /// Removes a topic; the generation to wait for, or `None` if it did not exist.
    pub fn delete(&self, topic: &str) -> Option<u64> {
        if !self.contains(topic) {
            return None;
        }
        self.journal(|| MetadataChange::TopicDeleted(topic.to_owned()));
        let removed = self.table.write().remove(topic).is_some();
        removed.then(|| {
            tracing::info!(event = "TOPIC_DELETED", %topic, "topic deleted");
            self.changed(topic.to_owned(), None)
        })
    }

    fn changed(&self, topic: String, config: Option<TopicConfig>) -> u64 {
        {
            // One lock for both, so the registrar takes a version with exactly its topics.
            let mut version = self.version.write();
            version.next(now_ms());
            let mut unregistered = self.unregistered.lock();
            if let Some(topics) = unregistered.as_mut() {
                topics.insert(topic.clone());
                if topics.len() > MAX_INCREMENTAL_REGISTRATION {
                    *unregistered = None;
                }
            }
        }
        self.register_now.notify_one();
        self.writes.changed(topic, config)
    }

    /// A change that reaches every topic (the broker's permission): a new version, and
    /// every topic registered again.
    pub fn changed_all(&self) {
        {
            let mut version = self.version.write();
            version.next(now_ms());
            *self.unregistered.lock() = None;
        }
        self.register_now.notify_one();
    }

    /// The topics changed since the last call (`None`: register them all) and the data
    /// version that includes their changes, for an incremental registration.
    pub fn take_unregistered(&self) -> (Option<Vec<String>>, DataVersion) {
        let version = self.version.read();
        let taken = self
            .unregistered
            .lock()
            .replace(BTreeSet::new())
            .map(|topics| topics.into_iter().collect());
        (taken, *version)
    }

    /// Waits until the change of `generation` is committed (false after a while).
    pub async fn persisted(&self, generation: u64) -> bool {
        self.writes.written(generation, persist::WRITE_WAIT).await
    }

    /// The topics as a restart would load them: what is committed.
    #[cfg(test)]
    pub(crate) fn committed(&self) -> BTreeMap<String, TopicConfig> {
        self.store.topics().expect("the store reads").0
    }

    /// Waits until every change so far is committed (false after a while).
    pub async fn persisted_all(&self) -> bool {
        self.persisted(self.writes.generation()).await
    }

    /// Follows a runtime change of `autoCreateTopicEnable`.
    pub fn set_auto_create(&self, enabled: bool) {
        self.auto_create_enabled.store(enabled, Ordering::Release);
    }

    /// Auto-creates `topic` from the template `default_topic` on a send (protocol.md 7.6).
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        queue_nums: i32,
        topic_sys_flag: i32,
    ) -> Result<TopicConfig, CreateTopicError> {
        if let Some(existing) = self.get(topic) {
            return Ok(existing);
        }
        names::check_topic(topic)?;
        let no_template = || CreateTopicError::NoTemplate(default_topic.to_owned());
        let template = self.get(default_topic).ok_or_else(no_template)?;
        if default_topic == AUTO_CREATE_TOPIC_KEY
            && !self.auto_create_enabled.load(Ordering::Acquire)
        {
            return Err(no_template());
        }
        if !perm::is_inherited(template.perm) {
            tracing::warn!(%topic, template = %default_topic, "auto-create refused: the template topic does not allow inheriting");
            return Err(no_template());
        }
        self.limits.admit_topic(self.len())?;
        let queues = queue_nums.min(template.write_queue_nums).max(1);
        let mut config =
            TopicConfig::with_queues(topic, queues, queues, template.perm & !perm::INHERIT);
        config.topic_filter_type = template.topic_filter_type.clone();
        config.topic_sys_flag = topic_sys_flag;
        self.insert(config.clone());
        Ok(config)
    }

    /// Creates a retry or DLQ topic a client's action needs, within the auto-create limits.
    pub fn auto_create(
        &self,
        topic: &str,
        queue_nums: i32,
        perm: i32,
    ) -> Result<TopicConfig, CreateTopicError> {
        if let Some(existing) = self.get(topic) {
            return Ok(existing);
        }
        names::check_topic(topic)?;
        self.limits.admit_topic(self.len())?;
        let config = TopicConfig::with_queues(topic, queue_nums, queue_nums, perm);
        self.insert(config.clone());
        Ok(config)
    }

    /// Creates one of the broker's own topics (transactions, timers) if missing; no limits.
    pub fn ensure_internal_topic(&self, topic: &str, queue_nums: i32, perm: i32) -> TopicConfig {
        if let Some(existing) = self.get(topic) {
            return existing;
        }
        let config = TopicConfig::with_queues(topic, queue_nums, queue_nums, perm);
        self.insert(config.clone());
        config
    }

    pub fn all(&self) -> BTreeMap<String, TopicConfig> {
        self.table.read().clone()
    }

    pub fn data_version(&self) -> DataVersion {
        *self.version.read()
    }

    /// The wrapper for GET_ALL_TOPIC_CONFIG and registration; with `broker_perm` lacking read
    /// or write, every topic is reported with that reduced permission.
    pub fn wrapper(&self, broker_perm: Option<i32>) -> TopicConfigSerializeWrapper {
        // The version first: the table read after it holds at least its changes.
        let data_version = self.data_version();
        let table = self.all();
        with_broker_perm(data_version, table, broker_perm)
    }

    /// One page of the table (see [`crate::paging::page`]) with the current version.
    pub fn page(
        &self,
        asked_version: Option<&str>,
        seq: Option<i32>,
        max: usize,
    ) -> TopicConfigSerializeWrapper {
        let data_version = self.data_version();
        let table = crate::paging::page(&self.table.read(), asked_version, &data_version, seq, max);
        TopicConfigSerializeWrapper {
            data_version,
            topic_config_table: table,
        }
    }

    /// Like [`Self::wrapper`], with only `topics` (those that still exist).
    pub fn wrapper_of(
        &self,
        version: DataVersion,
        topics: &[String],
        broker_perm: Option<i32>,
    ) -> TopicConfigSerializeWrapper {
        let table = {
            let all = self.table.read();
            topics
                .iter()
                .filter_map(|t| all.get(t).map(|c| (t.clone(), c.clone())))
                .collect()
        };
        with_broker_perm(version, table, broker_perm)
    }

    /// A slave takes its master's topics when their version changed (protocol.md 9.4); topics
    /// whose names are not valid are left out.
    pub fn replace_from_master(&self, mut master: TopicConfigSerializeWrapper) -> bool {
        if *self.version.read() == master.data_version {
            return false;
        }
        master.topic_config_table.retain(|name, _| {
            let valid = names::check_topic(name).is_ok();
            if !valid {
                tracing::warn!(topic = %name, "master's topic with an invalid name ignored");
            }
            valid
        });
        let mut table = self.table.write();
        for (name, change) in persist::diff(&table, &master.topic_config_table) {
            self.writes.changed(name, change);
        }
        *table = master.topic_config_table;
        *self.version.write() = master.data_version;
        true
    }
}

impl Persisted for TopicConfigManager {
    fn write_behind(&self) -> &dyn Generations {
        &self.writes
    }

    fn write_pending(&self) -> Result<(), MetadataError> {
        self.writes.commit_with(|changes| {
            self.store
                .write_named(Named::Topics, changes, &self.data_version())
        })
    }
}
