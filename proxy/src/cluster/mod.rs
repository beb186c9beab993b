//! The proxy's side of the cluster: one remoting client to name servers and brokers, the
//! routes it caches, and the requests the gRPC services make of brokers (send, end a
//! transaction, POP, ack, heartbeats). It knows nothing of gRPC.

mod auth;
mod consume;
mod error;
mod inbound;
mod lite;
mod recall;
mod routes;
mod send;
mod topic;
mod transaction;

use std::sync::Arc;
use std::time::Duration;

use stellmq_client::ClientTlsConfig;
use stellmq_remoting::net::tls::{ClientTls, TlsError};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::{SubscriptionGroupConfig, TopicRouteData};

pub use consume::{PopOutcome, PopRequest, Popped};
pub use error::ClusterError;
pub use inbound::{TransactionCheck, TransactionChecks};
pub use lite::LiteSubscription;
pub(crate) use routes::TtlCache;
pub use send::{Outgoing, SendOutcome, SendStatus};
pub use topic::TopicMessageType;
pub use transaction::{HalfMessage, Resolution, PROXY_PRODUCER_CLIENT_ID};

use crate::config::ProxyConfig;

/// The cluster as the proxy sees it.
pub struct Cluster {
    pub(crate) remoting: RemotingClient,
    namesrv: Vec<String>,
    pub(crate) timeout: Duration,
    routes: TtlCache<Arc<TopicRouteData>>,
    topic_types: TtlCache<TopicMessageType>,
    group_configs: TtlCache<Option<SubscriptionGroupConfig>>,
    /// ACL 2.0 users with their policies, as the cluster's masters hold them.
    auth_subjects: stellmq_acl::auth::RemoteSubjects,
    cluster_name: String,
    rotation: std::sync::atomic::AtomicUsize,
}

impl Cluster {
    /// Connects lazily: nothing is dialled until the first request. Transaction checks the
    /// brokers send go to `checks`.
    pub fn new(
        config: &ProxyConfig,
        tls: &ClientTlsConfig,
        checks: TransactionChecks,
    ) -> Result<Self, TlsError> {
        let namesrv: Vec<String> = config
            .namesrv_addr
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect();
        let remoting = RemotingClient::with_handler(
            ClientConfig {
                tls: ClientTls::from_config(tls)?,
                // Validated when the config was loaded.
                credentials: config.inner_credentials().ok().flatten(),
                ..ClientConfig::default()
            },
            Arc::new(inbound::BrokerCalls::new(checks)),
        );
        let cache_ttl = Duration::from_millis(config.route_cache_millis);
        Ok(Self {
            remoting,
            namesrv,
            timeout: Duration::from_millis(config.remoting_call_timeout_millis),
            routes: TtlCache::new(cache_ttl),
            topic_types: TtlCache::new(cache_ttl),
            group_configs: TtlCache::new(cache_ttl),
            auth_subjects: auth::subjects(),
            cluster_name: config.rocketmq_cluster_name.clone(),
            rotation: Default::default(),
        })
    }

    pub fn name_servers(&self) -> &[String] {
        &self.namesrv
    }

    /// A number that grows by one per call, for round robin.
    pub(crate) fn next_turn(&self) -> usize {
        self.rotation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    pub async fn shutdown(&self) {
        self.remoting.shutdown().await;
    }
}
