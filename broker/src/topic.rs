//! Topic configurations (`topics.json`): system topics, auto-creation, permissions.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::{
    perm, DataVersion, TopicConfig, TopicConfigSerializeWrapper,
};
use tokio::sync::Notify;

use crate::config::BrokerConfig;
use crate::persist;

pub const AUTO_CREATE_TOPIC_KEY: &str = "TBW102";
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
pub const BENCHMARK_TOPIC: &str = "BenchmarkTest";
pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
pub const RETRY_PREFIX: &str = "%RETRY%";
pub const DLQ_PREFIX: &str = "%DLQ%";
pub const MAX_TOPIC_LENGTH: usize = 127;

/// Topics producers may not send to (spec 7.5).
pub const NOT_ALLOWED_SEND_TOPICS: &[&str] = &[
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT,
    crate::timer::TIMER_TOPIC,
];

pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_PREFIX}{group}")
}

pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_PREFIX}{group}")
}

/// Why a topic name is unusable, if it is (RocketMQ's rules and remarks).
pub fn validate_topic_name(topic: &str) -> Option<String> {
    if topic.trim().is_empty() {
        return Some("The specified topic is blank.".into());
    }
    if !topic
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        return Some(format!(
            "The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    if topic.len() > MAX_TOPIC_LENGTH {
        return Some(format!(
            "The specified topic is longer than topic max length {MAX_TOPIC_LENGTH}."
        ));
    }
    None
}

pub struct TopicConfigManager {
    path: PathBuf,
    table: RwLock<BTreeMap<String, TopicConfig>>,
    version: RwLock<DataVersion>,
    system_topics: Vec<String>,
    auto_create_enabled: bool,
    /// Signalled when the name servers should hear about a change now.
    pub register_now: Arc<Notify>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl TopicConfigManager {
    /// Loads `topics.json` and makes sure the system topics exist.
    pub fn load(
        path: PathBuf,
        config: &BrokerConfig,
        delay_levels: usize,
    ) -> std::io::Result<Self> {
        let loaded: Option<TopicConfigSerializeWrapper> = persist::load(&path)?;
        let loaded = loaded.unwrap_or_default();
        let mut table = loaded.topic_config_table;
        let mut system = Vec::new();
        let mut add = |config: TopicConfig| {
            system.push(config.topic_name.clone());
            table.entry(config.topic_name.clone()).or_insert(config);
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
        let mut version = loaded.data_version;
        if version.timestamp == 0 {
            version = DataVersion::new(now_ms());
        }
        let manager = Self {
            path,
            table: RwLock::new(table),
            version: RwLock::new(version),
            system_topics: system,
            auto_create_enabled: config.auto_create_topic_enable,
            register_now: Arc::new(Notify::new()),
        };
        manager.persist();
        Ok(manager)
    }

    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.table.read().get(topic).cloned()
    }

    pub fn is_system_topic(&self, topic: &str) -> bool {
        self.system_topics.iter().any(|t| t == topic) || NOT_ALLOWED_SEND_TOPICS.contains(&topic)
    }

    /// Creates or replaces a topic (admin), persists and asks for re-registration.
    pub fn update(&self, config: TopicConfig) {
        tracing::info!(event = "TOPIC_CREATED", topic = %config.topic_name, read = config.read_queue_nums, write = config.write_queue_nums, perm = config.perm, "topic created or updated");
        self.table.write().insert(config.topic_name.clone(), config);
        self.changed();
    }

    pub fn delete(&self, topic: &str) -> bool {
        let removed = self.table.write().remove(topic).is_some();
        if removed {
            tracing::info!(event = "TOPIC_DELETED", %topic, "topic deleted");
            self.changed();
        }
        removed
    }

    fn changed(&self) {
        self.version.write().next(now_ms());
        self.persist();
        self.register_now.notify_one();
    }

    /// Auto-creates `topic` from the template `default_topic` on a send (spec 7.6).
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        queue_nums: i32,
        topic_sys_flag: i32,
    ) -> Option<TopicConfig> {
        if let Some(existing) = self.get(topic) {
            return Some(existing);
        }
        let template = self.get(default_topic)?;
        if default_topic == AUTO_CREATE_TOPIC_KEY && !self.auto_create_enabled {
            return None;
        }
        if !perm::is_inherited(template.perm) {
            tracing::warn!(%topic, template = %default_topic, "auto-create refused: the template topic does not allow inheriting");
            return None;
        }
        let queues = queue_nums.min(template.write_queue_nums).max(1);
        let mut config =
            TopicConfig::with_queues(topic, queues, queues, template.perm & !perm::INHERIT);
        config.topic_filter_type = template.topic_filter_type.clone();
        config.topic_sys_flag = topic_sys_flag;
        self.update(config.clone());
        Some(config)
    }

    /// Creates a retry or DLQ topic if missing.
    pub fn ensure_topic(&self, topic: &str, queue_nums: i32, perm: i32) -> TopicConfig {
        if let Some(existing) = self.get(topic) {
            return existing;
        }
        let config = TopicConfig::with_queues(topic, queue_nums, queue_nums, perm);
        self.update(config.clone());
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
        let mut table = self.all();
        if let Some(bp) = broker_perm.filter(|p| !perm::is_readable(*p) || !perm::is_writeable(*p))
        {
            for config in table.values_mut() {
                config.perm &= bp | perm::INHERIT;
            }
        }
        TopicConfigSerializeWrapper {
            data_version: self.data_version(),
            topic_config_table: table,
        }
    }

    /// A slave takes its master's topics when their version changed (spec 9.4).
    pub fn replace_from_master(&self, master: TopicConfigSerializeWrapper) -> bool {
        if *self.version.read() == master.data_version {
            return false;
        }
        *self.table.write() = master.topic_config_table;
        *self.version.write() = master.data_version;
        self.persist();
        true
    }

    pub fn persist(&self) {
        let wrapper = self.wrapper(None);
        if let Err(e) = persist::store(&self.path, &wrapper) {
            tracing::error!(file = %self.path.display(), error = %e, "cannot persist topics.json");
        }
    }
}
