//! Name server configuration: RocketMQ's `NamesrvConfig` and `NettyServerConfig` keys.

use std::path::PathBuf;

use stellmq_config::properties_config;

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

properties_config! {
    /// Keys and defaults as RocketMQ's (protocol.md 8.6); unknown keys in a file are ignored.
    pub struct NamesrvConfig {
        /// Port of the remoting server (`NettyServerConfig.listenPort`).
        listen_port: u16 = "listenPort" => 9876,
        /// Address to bind (`NettyServerConfig.bindAddress`).
        bind_address: String = "bindAddress" => "0.0.0.0".to_owned(),
        /// Home directory: `conf/plain_acl.yml` and `conf/acl/` are read from here when
        /// aclEnable is on (env ROCKETMQ_HOME, else STELLMQ_HOME, else the working directory).
        rocketmq_home: String = "rocketmqHome" => stellmq_acl::default_home(),
        /// Check the name server's admin requests (topic and permission edits, KV config,
        /// configuration updates) against RocketMQ's plain ACL: a signed admin account.
        acl_enable: bool = "aclEnable" => false,
        /// ACL 2.0: the name server's changes must be signed by an enabled super user
        /// (users are read from the registered masters; route queries and registration
        /// stay open).
        authentication_enabled: bool = "authenticationEnabled" => false,
        /// ACL 2.0, as authenticationEnabled (either turns the check on).
        authorization_enabled: bool = "authorizationEnabled" => false,
        /// A super user known to the name server itself: `{"username":"...","password":"..."}`.
        init_authentication_user: String = "initAuthenticationUser" => String::new(),
        /// A super user known to the name server itself, who also signs its lookups of
        /// users on the brokers: `{"accessKey":"...","secretKey":"..."}`.
        inner_client_authentication_credentials: String = "innerClientAuthenticationCredentials" => String::new(),
        /// Where PUT_KV_CONFIG entries persist.
        kv_config_path: PathBuf = "kvConfigPath" => home().join("namesrv").join("kvConfig.json"),
        /// Where UPDATE_NAMESRV_CONFIG persists the configuration.
        config_store_path: PathBuf = "configStorePath" => home().join("namesrv").join("namesrv.properties"),
        /// Environment name (RocketMQ's `productEnvName`); kept for compatibility, unused.
        product_env_name: String = "productEnvName" => "center".to_owned(),
        /// RocketMQ's cluster-test mode; kept for compatibility, unused.
        cluster_test: bool = "clusterTest" => false,
        /// Include `orderTopicConf` from the ORDER_TOPIC_CONFIG namespace in routes.
        order_message_enable: bool = "orderMessageEnable" => false,
        /// How often (ms) to look for brokers that stopped registering.
        scan_not_active_broker_interval: u64 = "scanNotActiveBrokerInterval" => 10_000,
        /// A broker silent this long (ms) is dropped, unless it registered its own
        /// `heartbeatTimeoutMillis`.
        broker_channel_expired_time: u64 = "brokerChannelExpiredTime" => 120_000,
        /// Idle connections are closed after this many seconds.
        server_channel_max_idle_time_seconds: u64 = "serverChannelMaxIdleTimeSeconds" => 120,
        /// Metrics exporter (RocketMQ 5's key): `PROM` serves Prometheus' `GET /metrics` on
        /// metricsPromExporterHost:metricsPromExporterPort; `DISABLE` (default) serves none.
        metrics_exporter_type: stellmq_metrics::ExporterType = "metricsExporterType" => stellmq_metrics::ExporterType::Disable,
        /// Address the Prometheus endpoint binds; empty = every interface.
        metrics_prom_exporter_host: String = "metricsPromExporterHost" => String::new(),
        /// Port of the Prometheus endpoint (StellMQ's default 5558: the broker has 5557;
        /// 0 picks a free one).
        metrics_prom_exporter_port: u16 = "metricsPromExporterPort" => 5558,
        /// Most bytes one compressed REGISTER_BROKER body may inflate to (StellMQ's key; a
        /// broker's topic table takes well under 100 bytes a topic).
        registration_max_inflated_bytes: u64 = "registrationMaxInflatedBytes" => 64 * 1024 * 1024,
        /// Most bytes all compressed registration bodies being inflated at once may hold
        /// (StellMQ's key; read at start). A body that finds it used up is answered
        /// SYSTEM_BUSY, and its broker registers again on its next round.
        registration_inflate_budget_bytes: u64 = "registrationInflateBudgetBytes" => 128 * 1024 * 1024,
        /// Keys UPDATE_NAMESRV_CONFIG may not change, `;`-separated.
        config_black_list: String = "configBlackList" => "configBlackList;configStorePath;kvConfigPath;listenPort;bindAddress;aclEnable;rocketmqHome;authenticationEnabled;authorizationEnabled;initAuthenticationUser;innerClientAuthenticationCredentials;metricsExporterType;metricsPromExporterHost;metricsPromExporterPort;registrationInflateBudgetBytes".to_owned(),
    }
}

/// Keys whose values GET_NAMESRV_CONFIG masks.
pub const SECRET_KEYS: &[&str] = &[
    "initAuthenticationUser",
    "innerClientAuthenticationCredentials",
];

impl NamesrvConfig {
    /// `innerClientAuthenticationCredentials`, parsed; `None` when not set.
    pub fn inner_credentials(
        &self,
    ) -> Result<
        Option<stellmq_remoting::protocol::signature::SessionCredentials>,
        stellmq_config::ConfigError,
    > {
        stellmq_remoting::protocol::signature::parse_inner_credentials(
            &self.inner_client_authentication_credentials,
        )
        .map_err(|reason| stellmq_config::ConfigError::Rejected {
            key: "innerClientAuthenticationCredentials".into(),
            reason,
        })
    }

    /// Whether a runtime config update may change `key`.
    pub fn is_blacklisted(&self, key: &str) -> bool {
        self.config_black_list.split(';').any(|k| k.trim() == key)
    }
}
