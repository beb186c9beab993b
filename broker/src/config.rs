//! Broker configuration: RocketMQ's `BrokerConfig` and `NettyServerConfig` keys, the
//! store's `MessageStoreConfig` and the `tls.*` keys, all loaded from one `broker.conf`
//! (protocol.md 10).

use std::collections::BTreeMap;

use stellmq_config::properties_config;
use stellmq_config::{format_documented, format_properties, ConfigError, ConfigValue};
use stellmq_remoting::net::tls::TlsConfig;
use stellmq_remoting::protocol::signature::{parse_inner_credentials, SessionCredentials};
use stellmq_store::MessageStoreConfig;

fn default_namesrv() -> String {
    std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| "127.0.0.1:9876".to_owned())
}

properties_config! {
    /// Broker keys and defaults as RocketMQ's.
    pub struct BrokerConfig {
        /// Cluster this broker belongs to; also the name of a 16-queue system topic.
        broker_cluster_name: String = "brokerClusterName" => "DefaultCluster".to_owned(),
        /// Name of the broker group: a master and its slaves share it.
        broker_name: String = "brokerName" => "broker-a".to_owned(),
        /// 0 = master, > 0 = slave.
        broker_id: i64 = "brokerId" => 0,
        /// `ip:port;ip:port` of every name server (env NAMESRV_ADDR, else 127.0.0.1:9876).
        namesrv_addr: String = "namesrvAddr" => default_namesrv(),
        /// Address advertised to clients and stored as every message's STOREHOST.
        /// StellMQ defaults to loopback; set it to an address clients can reach.
        broker_ip1: String = "brokerIP1" => "127.0.0.1".to_owned(),
        /// Address advertised for HA (defaults to brokerIP1).
        broker_ip2: String = "brokerIP2" => String::new(),
        /// Port of the remoting server clients dial (0 picks a free port).
        listen_port: u16 = "listenPort" => 10911,
        /// 0 = listenPort + 1.
        ha_listen_port: u16 = "haListenPort" => 0,
        /// A slave's master HA address (`ip:port`); empty = learnt from the name server.
        ha_master_address: String = "haMasterAddress" => String::new(),
        /// Shared secret of a master/slave group (StellMQ): when set, a master admits only
        /// slaves that prove they know it (HMAC-SHA256 over a fresh nonce), and a slave
        /// replicates only from a master that asks for it. Empty = none; every broker of a
        /// group must use the same value. Never shown by GET_BROKER_CONFIG, not changeable
        /// at runtime.
        ha_auth_secret: String = "haAuthSecret" => String::new(),
        /// Home directory: `conf/plain_acl.yml` and `conf/acl/` are read from here when
        /// aclEnable is on (env ROCKETMQ_HOME, else STELLMQ_HOME, else the working directory).
        rocketmq_home: String = "rocketmqHome" => stellmq_acl::default_home(),
        /// Check every request against RocketMQ's plain ACL (`<rocketmqHome>/conf/plain_acl.yml`):
        /// signed access keys, white lists, topic and group permissions, admin accounts.
        acl_enable: bool = "aclEnable" => false,
        /// Credentials this broker signs its own requests with when other servers check
        /// ACL (registration with name servers, a slave's sync from its master), as RocketMQ
        /// 5 spells them: `{"accessKey":"...","secretKey":"..."}`. With aclEnable and no
        /// haAuthSecret, their secret key also authenticates slaves on the HA port.
        /// Never shown by GET_BROKER_CONFIG, not changeable at runtime.
        inner_client_authentication_credentials: String = "innerClientAuthenticationCredentials" => String::new(),
        /// ACL 2.0 (RocketMQ 5.3+): every request must be signed by an enabled user
        /// (users kept in the metadata store, managed with mqadmin createUser ...).
        authentication_enabled: bool = "authenticationEnabled" => false,
        /// ACL 2.0: every request must be allowed by its user's policies (super users may
        /// do anything).
        authorization_enabled: bool = "authorizationEnabled" => false,
        /// Request codes that skip authentication, comma-separated (`"10,11"`).
        authentication_whitelist: String = "authenticationWhitelist" => String::new(),
        /// Request codes that skip authorization, comma-separated.
        authorization_whitelist: String = "authorizationWhitelist" => String::new(),
        /// A super user created at start when no user of its name exists:
        /// `{"username":"...","password":"..."}`. Never shown by GET_BROKER_CONFIG.
        init_authentication_user: String = "initAuthenticationUser" => String::new(),
        /// Turn `<rocketmqHome>/conf/plain_acl.yml`'s accounts into ACL 2.0 users and
        /// policies at start (accounts whose user exists are left alone).
        migrate_auth_from_v1_enabled: bool = "migrateAuthFromV1Enabled" => false,
        /// A RocketMQ class name, accepted so RocketMQ's broker.conf works and not loaded:
        /// StellMQ's ACL 2.0 is built in (users and policies in the metadata store).
        authentication_provider: String = "authenticationProvider" => String::new(),
        /// A RocketMQ class name, accepted so RocketMQ's broker.conf works and not loaded:
        /// StellMQ's ACL 2.0 is built in (users and policies in the metadata store).
        authorization_provider: String = "authorizationProvider" => String::new(),
        /// A RocketMQ class name, accepted so RocketMQ's broker.conf works and not loaded:
        /// StellMQ's ACL 2.0 is built in (users and policies in the metadata store).
        authentication_metadata_provider: String = "authenticationMetadataProvider" => String::new(),
        /// A RocketMQ class name, accepted so RocketMQ's broker.conf works and not loaded:
        /// StellMQ's ACL 2.0 is built in (users and policies in the metadata store).
        authorization_metadata_provider: String = "authorizationMetadataProvider" => String::new(),
        /// A RocketMQ class name, accepted so RocketMQ's broker.conf works and not loaded:
        /// StellMQ's ACL 2.0 is built in (users and policies in the metadata store).
        authentication_strategy: String = "authenticationStrategy" => String::new(),
        /// A RocketMQ class name, accepted so RocketMQ's broker.conf works and not loaded:
        /// StellMQ's ACL 2.0 is built in (users and policies in the metadata store).
        authorization_strategy: String = "authorizationStrategy" => String::new(),
        /// Address the remoting and HA servers bind.
        bind_address: String = "bindAddress" => "0.0.0.0".to_owned(),
        /// ASYNC_MASTER, SYNC_MASTER or SLAVE.
        broker_role: BrokerRole = "brokerRole" => BrokerRole::AsyncMaster,
        /// Let producers create a topic by sending to it (from the TBW102 template).
        auto_create_topic_enable: bool = "autoCreateTopicEnable" => true,
        /// Create an unknown consumer group on its first heartbeat, pull or send-back.
        auto_create_subscription_group: bool = "autoCreateSubscriptionGroup" => true,
        /// Queues of TBW102, the template for auto-created topics.
        default_topic_queue_nums: i32 = "defaultTopicQueueNums" => 8,
        /// Permission of the whole broker: 6 = read and write, 4 = read only, 2 = write only.
        broker_permission: i32 = "brokerPermission" => 6,
        /// Metrics exporter (RocketMQ 5): `PROM` serves Prometheus' `GET /metrics` on
        /// metricsPromExporterHost:metricsPromExporterPort; `DISABLE` (default) serves none;
        /// `OTLP_GRPC` and `LOG` are not supported and leave metrics off (docs/metrics.md).
        metrics_exporter_type: stellmq_metrics::ExporterType = "metricsExporterType" => stellmq_metrics::ExporterType::Disable,
        /// Address the Prometheus endpoint binds; empty = every interface.
        metrics_prom_exporter_host: String = "metricsPromExporterHost" => String::new(),
        /// Port of the Prometheus endpoint (0 picks a free one).
        metrics_prom_exporter_port: u16 = "metricsPromExporterPort" => 5557,
        /// Make the cluster-name topic readable and writable (mqadmin uses it).
        cluster_topic_enable: bool = "clusterTopicEnable" => true,
        /// Make the broker-name topic readable and writable (clusterRT sends to it).
        broker_topic_enable: bool = "brokerTopicEnable" => true,
        /// Create the message trace topic (msgTraceTopicName) at startup.
        trace_topic_enable: bool = "traceTopicEnable" => false,
        /// Topic that message traces are sent to.
        msg_trace_topic_name: String = "msgTraceTopicName" => "RMQ_SYS_TRACE_TOPIC".to_owned(),
        /// RocketMQ 5 controller mode: the controllers elect this broker group's master and
        /// hand out broker ids; brokerRole is ignored and the broker starts as a slave
        /// without a master until the controller says (docs/controller-broker.md).
        enable_controller_mode: bool = "enableControllerMode" => false,
        /// Controller mode: the controllers' addresses, `ip:port;ip:port`.
        controller_addr: String = "controllerAddr" => String::new(),
        /// Controller mode: how often (ms) the broker asks the controller for its group's
        /// replica info.
        sync_broker_metadata_period: u64 = "syncBrokerMetadataPeriod" => 5_000,
        /// Controller mode: how long (ms) the controller keeps a silent broker alive.
        controller_heart_beat_timeout_mills: u64 = "controllerHeartBeatTimeoutMills" => 10_000,
        /// Controller mode: how often (ms) the broker sends the controller a heartbeat.
        broker_heartbeat_interval: u64 = "brokerHeartbeatInterval" => 1_000,
        /// Controller mode: this broker's election priority (lower is preferred among
        /// equally up-to-date replicas).
        broker_election_priority: i32 = "brokerElectionPriority" => i32::MAX,
        /// How often (ms) the broker registers with every name server.
        register_name_server_period: u64 = "registerNameServerPeriod" => 30_000,
        /// Timeout (ms) of one registration request.
        register_broker_timeout_mills: u64 = "registerBrokerTimeoutMills" => 6_000,
        /// Region reported in send responses (MSG_REGION).
        region_id: String = "regionId" => "DefaultRegion".to_owned(),
        /// Whether send responses tell clients that tracing is on (TRACE_ON).
        trace_on: bool = "traceOn" => true,
        /// A send that waited longer than this (ms) in the send lane is answered SYSTEM_BUSY.
        wait_time_mills_in_send_queue: u64 = "waitTimeMillsInSendQueue" => 200,
        /// Sends processed at once (workers of the send lane).
        send_message_thread_pool_nums: usize = "sendMessageThreadPoolNums" => 4,
        /// Sends waiting for a worker before new ones are answered SYSTEM_BUSY.
        send_thread_pool_queue_capacity: usize = "sendThreadPoolQueueCapacity" => 10_000,
        /// Pulls processed at once (workers of the pull lane).
        pull_message_thread_pool_nums: usize = "pullMessageThreadPoolNums" => 20,
        /// Pulls waiting for a worker before new ones are answered SYSTEM_BUSY.
        pull_thread_pool_queue_capacity: usize = "pullThreadPoolQueueCapacity" => 100_000,
        /// Queries by key or id processed at once.
        query_message_thread_pool_nums: usize = "queryMessageThreadPoolNums" => 8,
        /// Admin requests processed at once.
        admin_broker_thread_pool_nums: usize = "adminBrokerThreadPoolNums" => 16,
        /// Heartbeats and unregistrations processed at once.
        client_manage_thread_pool_nums: usize = "clientManageThreadPoolNums" => 8,
        /// Offset and consumer-list requests processed at once.
        consumer_manage_thread_pool_nums: usize = "consumerManageThreadPoolNums" => 8,
        /// How often (ms) consumerOffset.json is written.
        flush_consumer_offset_interval: u64 = "flushConsumerOffsetInterval" => 5_000,
        /// How often (ms) the progress of delayed and timer messages is written.
        flush_delay_offset_interval: u64 = "flushDelayOffsetInterval" => 10_000,
        /// Hold pulls that find nothing until a message arrives (long polling).
        long_polling_enable: bool = "longPollingEnable" => true,
        /// Without long polling, how long (ms) a pull that finds nothing is held.
        short_polling_time_mills: u64 = "shortPollingTimeMills" => 1_000,
        /// The longest a pull is held (ms), whatever suspend time the client asks for.
        /// (StellMQ key; clients ask for 15-30 s.)
        long_polling_max_suspend_millis: u64 = "longPollingMaxSuspendMillis" => 60_000,
        /// Pulls held at once, in all. Beyond it a pull that would wait is answered
        /// SYSTEM_BUSY, and clients retry a little later. (StellMQ key.)
        max_parked_pulls: usize = "maxParkedPulls" => 100_000,
        /// Pulls held at once for one connection. (StellMQ key.)
        max_parked_pulls_per_connection: usize = "maxParkedPullsPerConnection" => 10_000,
        /// Memory (estimated bytes) of held pulls, in all. (StellMQ key.)
        max_parked_pull_bytes: usize = "maxParkedPullBytes" => 256 * 1024 * 1024,
        /// Queues of the revive log `rmq_sys_REVIVE_LOG_<brokerClusterName>`, where POP
        /// checkpoints and acks are written (RocketMQ 5).
        revive_queue_num: i32 = "reviveQueueNum" => 8,
        /// How often (ms) the revive service looks for popped messages whose invisible time
        /// passed, and saves its progress.
        revive_interval: u64 = "reviveInterval" => 1_000,
        /// POPs held (long polling) at once, in all; beyond it a POP that finds nothing is
        /// answered POLLING_FULL.
        max_pop_polling_size: usize = "maxPopPollingSize" => 100_000,
        /// POPs held at once on one topic; beyond it POLLING_FULL.
        pop_polling_size: usize = "popPollingSize" => 1_024,
        /// The chance in 100 that a POP reads the group's retry topic before the topic
        /// (otherwise only when the topic did not fill the batch).
        pop_from_retry_probability: i32 = "popFromRetryProbability" => 20,
        /// The same for a POP served by priority (RocketMQ 5.4): 0 makes retried messages
        /// the lowest priority, 100 the highest.
        pop_from_retry_probability_for_priority: i32 = "popFromRetryProbabilityForPriority" => 0,
        /// Priority messages: true (RocketMQ's default) serves the highest queue id, the
        /// highest priority, first; false serves queue 0 first.
        priority_order_asc: bool = "priorityOrderAsc" => true,
        /// Lite topics: (client, lite topic) subscriptions the broker keeps at most; beyond,
        /// a subscription is refused LITE_SUBSCRIPTION_QUOTA_EXCEEDED.
        max_lite_subscription_count: usize = "maxLiteSubscriptionCount" => 100_000,
        /// POP batches (checkpoints) in flight at once, unacked and not yet revived; beyond
        /// it a POP is refused with SYSTEM_BUSY until acks or revives make room. (StellMQ key.)
        pop_max_inflight_checkpoints: usize = "popMaxInflightCheckpoints" => 200_000,
        /// Tell a group's consumers when a member joins or leaves, so they rebalance at once.
        notify_consumer_ids_changed_enable: bool = "notifyConsumerIdsChangedEnable" => true,
        /// Refuse transactional (half) messages.
        reject_transaction_message: bool = "rejectTransactionMessage" => false,
        /// Request/reply: also store replies in `<cluster>_REPLY_TOPIC`.
        store_reply_message_enable: bool = "storeReplyMessageEnable" => true,
        /// Timer messages (`TIMER_DELIVER_MS` / `TIMER_DELAY_SEC` / `TIMER_DELAY_MS`);
        /// off, such messages are delivered at once as RocketMQ 4.x does.
        timer_wheel_enable: bool = "timerWheelEnable" => true,
        /// The furthest a timer may be set, in seconds (3 days).
        timer_max_delay_sec: i64 = "timerMaxDelaySec" => 259_200,
        /// RECALL_MESSAGE (RocketMQ 5.3.2+): producers may take back timer messages not
        /// yet due, with the recall handle their send answered. Off by default, as in RocketMQ.
        recall_message_enable: bool = "recallMessageEnable" => false,
        /// Recalls are served while brokerPermission forbids writes.
        allow_recall_when_broker_not_writeable: bool = "allowRecallWhenBrokerNotWriteable" => true,
        /// Halves younger than this (ms) are not checked yet.
        transaction_time_out: i64 = "transactionTimeOut" => 6_000,
        /// Checks of one half before it is given up (moved to TRANS_CHECK_MAX_TIME_TOPIC).
        transaction_check_max: i32 = "transactionCheckMax" => 15,
        /// Pause (ms) between two walks of the half queue.
        transaction_check_interval: u64 = "transactionCheckInterval" => 60_000,
        /// Point consumers at a slave (suggestWhichBrokerId) for data no longer in memory.
        slave_read_enable: bool = "slaveReadEnable" => false,
        /// Refuse sends until this time (ms since the epoch).
        start_accept_send_request_time_stamp: i64 = "startAcceptSendRequestTimeStamp" => 0,
        /// Connections idle this many seconds are closed.
        server_channel_max_idle_time_seconds: u64 = "serverChannelMaxIdleTimeSeconds" => 120,
        /// Requests of one connection processed at once; beyond it the broker stops reading
        /// that connection until one finishes. (StellMQ key.)
        server_max_in_flight_requests_per_connection: usize = "serverMaxInFlightRequestsPerConnection" => 1024,
        /// Bytes of responses queued for one connection before it counts as not reading and
        /// is closed. (StellMQ key.)
        server_max_write_buffer_bytes: usize = "serverMaxWriteBufferBytes" => 64 * 1024 * 1024,
        /// A write to a connection that makes no progress for this long (ms) closes it.
        /// (StellMQ key.)
        server_write_stall_timeout_millis: u64 = "serverWriteStallTimeoutMillis" => 30_000,
        /// Clients silent this long (ms) are dropped.
        channel_expired_timeout: u64 = "channelExpiredTimeout" => 120_000,
        /// Serve SQL92 subscriptions (MessageSelector.bySql), evaluated on properties.
        enable_property_filter: bool = "enablePropertyFilter" => false,
        /// Messages a query by key returns when the request asks for none.
        default_query_max_num: i32 = "defaultQueryMaxNum" => 32,
        /// Compress registration bodies (accepted for compatibility; bodies are sent plain).
        compressed_register: bool = "compressedRegister" => false,
        /// Register the whole table every `registerNameServerPeriod`; off, a master asks
        /// each name server for the version it holds (QUERY_DATA_VERSION) and registers only
        /// where it differs (see `registration.rs`).
        force_register: bool = "forceRegister" => true,
        /// Serve GET_ALL_TOPIC_CONFIG and GET_ALL_SUBSCRIPTIONGROUP_CONFIG a page at a time
        /// when the request asks for pages (RocketMQ 5's paging headers).
        enable_split_metadata: bool = "enableSplitMetadata" => true,
        /// The most topics or groups one page holds.
        split_metadata_size: i32 = "splitMetadataSize" => 2000,
        /// A slave corrects a consumer's offset past its queues (PULL_OFFSET_MOVED) as a
        /// master does; off (RocketMQ's default), it answers PULL_RETRY_IMMEDIATELY at the
        /// same offset and points the consumer at the master, since a slave that is behind
        /// would otherwise move the consumer back (to the queue's start while nothing of it
        /// was deleted).
        offset_check_in_slave: bool = "offsetCheckInSlave" => false,
        /// Auto-creation (sends, heartbeats, pulls, send-backs) stops once the broker has
        /// this many topics; mqadmin can still create more. (StellMQ key.)
        auto_create_topic_limit: usize = "autoCreateTopicLimit" => 10_000,
        /// Auto-creation of subscription groups stops at this many groups. (StellMQ key.)
        auto_create_subscription_group_limit: usize = "autoCreateSubscriptionGroupLimit" => 10_000,
        /// Messages one SEND_BATCH_MESSAGE may hold (its body is also bounded by
        /// maxMessageSize). (StellMQ key.)
        max_batch_message_count: usize = "maxBatchMessageCount" => 10_000,
        /// Topics and groups auto-created per second at most, together. (StellMQ key.)
        auto_create_rate_per_second: u32 = "autoCreateRatePerSecond" => 100,
    }
}

/// A broker's place in its group (`brokerRole`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerRole {
    /// A master that acknowledges before its slaves have a write.
    AsyncMaster,
    /// A master that acknowledges once a slave has the write.
    SyncMaster,
    Slave,
}

impl ConfigValue for BrokerRole {
    const EXPECTED: &'static str = "ASYNC_MASTER, SYNC_MASTER or SLAVE";
    fn parse_value(text: &str) -> Option<Self> {
        match text.trim().to_ascii_uppercase().as_str() {
            "ASYNC_MASTER" => Some(Self::AsyncMaster),
            "SYNC_MASTER" => Some(Self::SyncMaster),
            "SLAVE" => Some(Self::Slave),
            _ => None,
        }
    }
    fn render(&self) -> String {
        match self {
            Self::AsyncMaster => "ASYNC_MASTER",
            Self::SyncMaster => "SYNC_MASTER",
            Self::Slave => "SLAVE",
        }
        .to_owned()
    }
}

/// Keys `mqbroker -m` prints (RocketMQ's `@ImportantField`s).
pub const IMPORTANT_KEYS: &[&str] = &[
    "brokerClusterName",
    "brokerName",
    "brokerId",
    "namesrvAddr",
    "brokerIP1",
    "brokerRole",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
    "rejectTransactionMessage",
    "traceTopicEnable",
    "msgTraceTopicName",
    "storePathRootDir",
    "storePathCommitLog",
    "flushDiskType",
    "deleteWhen",
    "fileReservedTime",
    "flushIntervalCommitLog",
    "maxTransferBytesOnMessageInMemory",
    "maxTransferCountOnMessageInMemory",
    "maxTransferBytesOnMessageInDisk",
    "maxTransferCountOnMessageInDisk",
    "accessMessageInMemoryMaxRatio",
    "messageIndexEnable",
    "listenPort",
];

/// Keys UPDATE_BROKER_CONFIG may not change at runtime.
pub const CONFIG_BLACK_LIST: &[&str] = &[
    "brokerConfigPath",
    "configBlackList",
    "storePathRootDir",
    "storePathCommitLog",
    "listenPort",
    "bindAddress",
    "brokerName",
    "brokerClusterName",
    "brokerId",
    "brokerRole",
    "mappedFileSizeCommitLog",
    "mapedFileSizeCommitLog",
    "mappedFileSizeConsumeQueue",
    "mapedFileSizeConsumeQueue",
    "haListenPort",
    "haAuthSecret",
    "aclEnable",
    "rocketmqHome",
    "innerClientAuthenticationCredentials",
    "authenticationEnabled",
    "authorizationEnabled",
    "initAuthenticationUser",
    "migrateAuthFromV1Enabled",
    // The metrics endpoint is opened at start-up only.
    "metricsExporterType",
    "metricsPromExporterHost",
    "metricsPromExporterPort",
];

/// Keys whose values GET_BROKER_CONFIG masks.
pub const SECRET_KEYS: &[&str] = &[
    "haAuthSecret",
    "innerClientAuthenticationCredentials",
    "initAuthenticationUser",
];

/// Everything a broker is configured with.
#[derive(Debug, Clone, Default)]
pub struct BrokerStartConfig {
    pub broker: BrokerConfig,
    pub store: MessageStoreConfig,
    /// TLS on the remoting port and on the broker's outbound connections.
    pub tls: TlsConfig,
}

impl BrokerStartConfig {
    /// A small broker for tests and embedding: `127.0.0.1`, port 0 (chosen by the system),
    /// storing under `store_root` with 8 MiB CommitLog segments and 1000-entry ConsumeQueue
    /// files, no disk-space limits (tests share disks) and delay levels `1s 1s 1s 2s`.
    pub fn small(store_root: &std::path::Path) -> Self {
        let mut c = Self::default();
        c.broker.listen_port = 0;
        c.broker.bind_address = "127.0.0.1".into();
        c.broker.broker_ip1 = "127.0.0.1".into();
        c.store.store_path_root_dir = store_root.to_owned();
        c.store.mapped_file_size_commit_log = 8 * 1024 * 1024;
        c.store.mapped_file_size_consume_queue = 20 * 1000;
        c.store.max_message_size = 1024 * 1024;
        c.store.max_hash_slot_num = 1000;
        c.store.max_index_num = 4000;
        c.store.disk_space_warning_level_ratio = 100;
        c.store.disk_max_used_space_ratio = 100;
        c.store.disk_space_clean_forcibly_ratio = 100;
        c.store.message_delay_level = "1s 1s 1s 2s".into();
        c
    }

    /// Applies a properties map to every part. Keys no part knows are skipped, as Java does
    /// (a RocketMQ broker.conf may carry keys StellMQ does not implement), and returned so
    /// that the caller can warn about them.
    pub fn apply(&mut self, props: &BTreeMap<String, String>) -> Result<Vec<String>, ConfigError> {
        let mut unknown = Vec::new();
        for (key, value) in props {
            if !self.set(key, value)? {
                unknown.push(key.clone());
            }
        }
        Ok(unknown)
    }

    /// Sets one key; `Ok(false)` if no part knows it.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, ConfigError> {
        let broker = self.broker.set(key, value)?;
        let store = self.store.set_compat(key, value)?;
        let tls = self.tls.set_key(key, value)?;
        Ok(broker || store || tls)
    }

    /// Every key with its value (key passwords masked).
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        let mut all = self.broker.entries();
        all.extend(self.store.entries());
        all.extend(self.tls.printable_entries());
        all
    }

    /// Every key with its value, each after its documentation as `#` comments (`-p`).
    pub fn to_properties(&self) -> String {
        let docs: Vec<(&str, &[&str])> = BrokerConfig::DOCS
            .iter()
            .chain(MessageStoreConfig::DOCS)
            .chain(TlsConfig::DOCS)
            .copied()
            .collect();
        format_documented(self.entries(), &docs)
    }

    pub fn important_properties(&self) -> String {
        format_properties(
            self.entries()
                .into_iter()
                .filter(|(k, _)| IMPORTANT_KEYS.contains(k)),
        )
    }

    /// RocketMQ's startup rules: masters are broker 0, slaves need an id above 0, the HA
    /// port defaults to listenPort + 1; `tls.config.file` is read.
    pub fn normalize(&mut self) -> Result<(), ConfigError> {
        self.tls.merge_config_file()?;
        // `~/` in storePathRootDir is the user's home, as in the shipped conf/ files.
        if let Ok(rest) = self.store.store_path_root_dir.strip_prefix("~") {
            if let Some(home) = std::env::var_os("HOME") {
                self.store.store_path_root_dir = std::path::PathBuf::from(home).join(rest);
            }
        }
        match self.broker.broker_role {
            // The controller decides roles and ids; brokerId is only a starting value.
            _ if self.broker.enable_controller_mode => {}
            BrokerRole::AsyncMaster | BrokerRole::SyncMaster => self.broker.broker_id = 0,
            BrokerRole::Slave if self.broker.broker_id <= 0 => {
                return Err(ConfigError::Rejected {
                    key: "brokerId".into(),
                    reason: "a SLAVE needs brokerId > 0".into(),
                });
            }
            BrokerRole::Slave => {}
        }
        if self.broker.ha_listen_port == 0 {
            self.broker.ha_listen_port = self.broker.listen_port.wrapping_add(1);
        }
        if self.broker.broker_ip2.trim().is_empty() {
            self.broker.broker_ip2 = self.broker.broker_ip1.clone();
        }
        self.broker.inner_credentials()?;
        self.store.validate()
    }
}

impl BrokerConfig {
    pub fn is_master(&self) -> bool {
        self.broker_id == 0
    }

    /// `innerClientAuthenticationCredentials`, parsed; `None` when not set.
    pub fn inner_credentials(&self) -> Result<Option<SessionCredentials>, ConfigError> {
        parse_inner_credentials(&self.inner_client_authentication_credentials).map_err(|reason| {
            ConfigError::Rejected {
                key: "innerClientAuthenticationCredentials".into(),
                reason,
            }
        })
    }

    /// The secret slaves prove on the HA port: haAuthSecret, else (with aclEnable) the
    /// inner credentials' secret key; empty = no proof asked.
    pub fn replication_secret(&self) -> String {
        if !self.ha_auth_secret.is_empty() || !(self.acl_enable || self.authentication_enabled) {
            return self.ha_auth_secret.clone();
        }
        match self.inner_credentials() {
            Ok(Some(credentials)) => credentials.secret_key,
            _ => String::new(),
        }
    }

    /// Name servers listed in `namesrvAddr`.
    pub fn namesrv_list(&self) -> Vec<String> {
        self.namesrv_addr
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}
