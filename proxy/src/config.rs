//! The proxy's settings, named as RocketMQ's `ProxyConfig` names them, read from the JSON file
//! RocketMQ's proxy reads (`rmq-proxy.json`, `-pc`): a flat object whose values may be strings,
//! numbers or booleans. The `tls.*` keys of the broker apply to the gRPC port as well.

use std::collections::BTreeMap;
use std::path::Path;

use stellmq_config::{properties_config, ConfigError};
use stellmq_remoting::net::tls::TlsConfig;
use stellmq_remoting::protocol::signature::{parse_inner_credentials, SessionCredentials};

/// The largest config file read (a hostile or mistaken path must not fill memory).
const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

properties_config! {
    /// What `mqproxy` runs with.
    pub struct ProxyConfig {
        /// The cluster whose brokers the proxy serves (RocketMQ's key).
        rocketmq_cluster_name: String = "rocketMQClusterName" => "DefaultCluster".to_owned(),
        /// Name servers, `ip:port;ip:port` (`-n` overrides it).
        namesrv_addr: String = "namesrvAddr" => "127.0.0.1:9876".to_owned(),
        /// `cluster`: brokers run apart and are reached over remoting. (`local`, a proxy inside
        /// the broker process, is not offered.)
        proxy_mode: String = "proxyMode" => "cluster".to_owned(),
        /// The gRPC port (0 = any free port, reported in the boot line).
        grpc_server_port: u16 = "grpcServerPort" => 8081,
        /// Address the gRPC port binds to. (StellMQ key.)
        bind_address: String = "bindAddress" => "0.0.0.0".to_owned(),
        /// The remoting port for RocketMQ 4.x clients (with enableRemotingProxy): clients
        /// set their name server address to it (0 = any free port, reported at start).
        remoting_listen_port: u16 = "remotingListenPort" => 8080,
        /// Serve 4.x clients on remotingListenPort: the proxy answers as their name server
        /// and relays each broker's connections through a port of its own. (StellMQ key;
        /// RocketMQ's proxy always serves it.)
        enable_remoting_proxy: bool = "enableRemotingProxy" => false,
        /// The host routes given to 4.x clients name for the proxy (RocketMQ's key); empty =
        /// the address each client connected to.
        remoting_access_addr: String = "remotingAccessAddr" => String::new(),
        /// Routes advertise the port the client dialled rather than grpcServerPort (behind
        /// a port-mapping load balancer).
        use_endpoint_port_from_request: bool = "useEndpointPortFromRequest" => false,
        /// Largest message body accepted (bytes).
        max_message_size: usize = "maxMessageSize" => 4 * 1024 * 1024,
        /// Most user properties a message may carry.
        user_property_max_num: usize = "userPropertyMaxNum" => 128,
        /// Largest total size (bytes) of a message's user properties, tag and keys.
        max_user_property_size: usize = "maxUserPropertySize" => 16 * 1024,
        /// Longest message group (bytes).
        max_message_group_size: usize = "maxMessageGroupSize" => 64,
        /// Furthest in the future a delivery time may be (ms).
        max_delay_time_mills: u64 = "maxDelayTimeMills" => 24 * 3600 * 1000,
        /// Longest orphaned-transaction recovery time a producer may ask for (s).
        max_transaction_recovery_second: u64 = "maxTransactionRecoverySecond" => 3600,
        /// Shortest invisible time a receive may ask for (ms).
        min_invisible_time_mills_for_recv: u64 = "minInvisibleTimeMillsForRecv" => 10_000,
        /// Longest invisible time (ms).
        max_invisible_time_mills: u64 = "maxInvisibleTimeMills" => 12 * 3600 * 1000,
        /// Invisible time of messages received with auto-renew (ms); the proxy renews it.
        default_invisible_time_mills: u64 = "defaultInvisibleTimeMills" => 60_000,
        /// Auto-renew what push consumers receive (they ask for it); off = they get their own
        /// invisible time only.
        enable_proxy_auto_renew: bool = "enableProxyAutoRenew" => true,
        /// Renew a held message's invisible time when it ends within this (ms).
        renew_ahead_time_millis: u64 = "renewAheadTimeMillis" => 10_000,
        /// How often held messages are looked at for renewal (ms).
        renew_schedule_period_millis: u64 = "renewSchedulePeriodMillis" => 5_000,
        /// Renewal stops this long (ms) after a message was received.
        renew_max_time_millis: u64 = "renewMaxTimeMillis" => 3 * 3600 * 1000,
        /// Most messages renewed at once; beyond it messages are not renewed. (StellMQ key.)
        renew_max_num: usize = "renewMaxNum" => 1_000_000,
        /// Shortest long-polling time of a receive (ms).
        grpc_client_consumer_min_long_polling_timeout_millis: u64 = "grpcClientConsumerMinLongPollingTimeoutMillis" => 5_000,
        /// Longest long-polling time of a receive (ms).
        grpc_client_consumer_max_long_polling_timeout_millis: u64 = "grpcClientConsumerMaxLongPollingTimeoutMillis" => 20_000,
        /// Long-polling time handed to push consumers in their settings (ms).
        grpc_client_consumer_long_polling_timeout_millis: u64 = "grpcClientConsumerLongPollingTimeoutMillis" => 20_000,
        /// Largest batch a receive pops from one broker.
        grpc_client_consumer_max_batch_size: i32 = "grpcClientConsumerMaxBatchSize" => 32,
        /// Sends check the message's kind against the topic's `message.type`.
        enable_topic_message_type_check: bool = "enableTopicMessageTypeCheck" => true,
        /// How long (ms) a transactional send's data is kept for its EndTransaction.
        transaction_data_expire_millis: u64 = "transactionDataExpireMillis" => 30_000,
        /// Most transactional sends remembered at once (oldest dropped first). (StellMQ key.)
        transaction_data_max_num: usize = "transactionDataMaxNum" => 200_000,
        /// A client silent for longer (ms: no heartbeat, no request) is forgotten.
        channel_expired_timeout: u64 = "channelExpiredTimeout" => 120_000,
        /// Most gRPC clients known at once; beyond it new clients are refused. (StellMQ key.)
        max_client_num: usize = "maxClientNum" => 100_000,
        /// Routes and topic settings cached this long (ms) before they are fetched again.
        route_cache_millis: u64 = "topicRouteCacheRefreshMillis" => 20_000,
        /// On stop, how long (s) running calls may take before they are cut.
        grpc_shutdown_time_seconds: u64 = "grpcShutdownTimeSeconds" => 30,
        /// Remoting timeout of calls to brokers and name servers (ms).
        remoting_call_timeout_millis: u64 = "remotingCallTimeoutMillis" => 3_000,
        /// ACL 2.0: every gRPC request must be signed by an enabled user of the cluster
        /// (users are read from the cluster's brokers and cached for 10 s).
        authentication_enabled: bool = "authenticationEnabled" => false,
        /// ACL 2.0: every gRPC request must be allowed by its user's policies.
        authorization_enabled: bool = "authorizationEnabled" => false,
        /// RPCs that skip authentication, by full message name, comma-separated
        /// (`apache.rocketmq.v2.QueryRouteRequest`).
        authentication_whitelist: String = "authenticationWhitelist" => String::new(),
        /// RPCs that skip authorization, comma-separated.
        authorization_whitelist: String = "authorizationWhitelist" => String::new(),
        /// What the proxy signs its requests to brokers and name servers with
        /// (`{"accessKey":"...","secretKey":"..."}`): a super user of the brokers when they
        /// check requests.
        inner_client_authentication_credentials: String = "innerClientAuthenticationCredentials" => String::new(),
        /// The `cluster` label of the proxy's metrics (RocketMQ's key).
        proxy_cluster_name: String = "proxyClusterName" => "DefaultCluster".to_owned(),
        /// The `node_id` label of the proxy's metrics (RocketMQ's key; its default is the
        /// host name).
        proxy_name: String = "proxyName" => "DEFAULT_PROXY".to_owned(),
        /// Metrics exporter (RocketMQ 5's key): `PROM` serves Prometheus' `GET /metrics` on
        /// metricsPromExporterHost:metricsPromExporterPort; `DISABLE` (default) serves none.
        metrics_exporter_type: stellmq_metrics::ExporterType = "metricsExporterType" => stellmq_metrics::ExporterType::Disable,
        /// Address the Prometheus endpoint binds; empty = every interface.
        metrics_prom_exporter_host: String = "metricsPromExporterHost" => String::new(),
        /// Port of the Prometheus endpoint (StellMQ's default 5559, beside a broker's 5557
        /// and a name server's 5558; 0 picks a free one).
        metrics_prom_exporter_port: u16 = "metricsPromExporterPort" => 5559,
    }
}

/// The proxy settings and the TLS settings of a config file's flat JSON object.
pub fn load_json_file(path: &Path) -> Result<(ProxyConfig, TlsConfig), ConfigError> {
    let unreadable = |reason: String| ConfigError::Read {
        path: path.display().to_string(),
        reason,
    };
    let size = std::fs::metadata(path)
        .map_err(|e| unreadable(e.to_string()))?
        .len();
    if size > MAX_CONFIG_FILE_BYTES {
        return Err(unreadable(format!(
            "{size} bytes, over the {MAX_CONFIG_FILE_BYTES} byte limit"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    let props = json_properties(&text).map_err(unreadable)?;
    load(&props)
}

/// The proxy and TLS settings of `props`.
pub fn load(props: &BTreeMap<String, String>) -> Result<(ProxyConfig, TlsConfig), ConfigError> {
    let mut config = ProxyConfig::default();
    config.apply(props)?;
    if config.proxy_mode != "cluster" {
        return Err(ConfigError::Rejected {
            key: "proxyMode".into(),
            reason: format!(
                "'{}' is not offered: StellMQ's proxy runs in cluster mode (brokers apart)",
                config.proxy_mode
            ),
        });
    }
    config.inner_credentials()?;
    let tls = TlsConfig::load(&with_proxy_tls_keys(props))?;
    Ok((config, tls))
}

impl ProxyConfig {
    /// `innerClientAuthenticationCredentials`, parsed; `None` when not set.
    pub fn inner_credentials(&self) -> Result<Option<SessionCredentials>, ConfigError> {
        parse_inner_credentials(&self.inner_client_authentication_credentials).map_err(|reason| {
            ConfigError::Rejected {
                key: "innerClientAuthenticationCredentials".into(),
                reason,
            }
        })
    }
}

/// RocketMQ's proxy names its certificate and key `tlsCertPath` and `tlsKeyPath`; given
/// without a TLS mode they mean TLS and plaintext on the gRPC port (RocketMQ's permissive).
fn with_proxy_tls_keys(props: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut props = props.clone();
    let mut named = false;
    for (proxy_key, key) in [
        ("tlsCertPath", "tls.server.certPath"),
        ("tlsKeyPath", "tls.server.keyPath"),
    ] {
        if let Some(value) = props.get(proxy_key).cloned() {
            props.entry(key.to_owned()).or_insert(value);
            named = true;
        }
    }
    if named && !props.contains_key("tls.server.mode") && !props.contains_key("tlsMode") {
        props.insert("tls.server.mode".into(), "permissive".into());
    }
    props
}

/// A flat JSON object as `key -> value text`: strings as they are, numbers and booleans as
/// written; nested objects, arrays and nulls are refused by name.
fn json_properties(text: &str) -> Result<BTreeMap<String, String>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let serde_json::Value::Object(map) = value else {
        return Err("expected a JSON object of settings".into());
    };
    map.into_iter()
        .map(|(key, value)| {
            let text = match value {
                serde_json::Value::String(s) => s,
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                other => {
                    return Err(format!(
                        "key '{key}': expected a string, number or boolean, found {other}"
                    ))
                }
            };
            Ok((key, text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rocketmq_proxy_json() {
        let props = json_properties(
            r#"{"rocketMQClusterName": "C1", "grpcServerPort": 18081, "enableProxyAutoRenew": false,
                "namesrvAddr": "10.0.0.1:9876;10.0.0.2:9876"}"#,
        )
        .unwrap();
        let (config, _) = load(&props).unwrap();
        assert_eq!(config.rocketmq_cluster_name, "C1");
        assert_eq!(config.grpc_server_port, 18081);
        assert!(!config.enable_proxy_auto_renew);
        assert_eq!(config.namesrv_addr, "10.0.0.1:9876;10.0.0.2:9876");
        assert_eq!(config.remoting_listen_port, 8080);
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        assert!(json_properties("[1]").is_err());
        assert!(json_properties(r#"{"a": {"b": 1}}"#).is_err());
        let bad_port = json_properties(r#"{"grpcServerPort": "eighty"}"#).unwrap();
        assert!(load(&bad_port).is_err());
        let tls = json_properties(r#"{"tlsCertPath": "/c.pem", "tlsKeyPath": "/k.pem"}"#).unwrap();
        let (_, tls) = load(&tls).unwrap();
        assert_eq!(
            tls.server_mode,
            stellmq_remoting::net::tls::TlsMode::Permissive
        );
        assert_eq!(tls.server_cert_path.unwrap().to_str(), Some("/c.pem"));
        let local = json_properties(r#"{"proxyMode": "local"}"#).unwrap();
        let err = load(&local).unwrap_err().to_string();
        assert!(err.contains("cluster mode"), "{err}");
    }
}
