//! One client instance per name-server list and instance name, shared by every producer and
//! consumer started with them (RocketMQ's MQClientInstance): one connection to each broker and
//! name server and one client id, however many groups a process runs. The calls every group
//! makes through it (topic routes, heartbeats, unregistration) are here; the broker's calls
//! to the instance are answered in [`crate::inbound`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::net::tls::{ClientTls, ClientTlsConfig};
use stellmq_remoting::net::{ClientConfig, RemotingClient, RemotingError};
use stellmq_remoting::protocol::body::{fastjson, HeartbeatData, TopicRouteData};
use stellmq_remoting::protocol::headers::UnregisterClientRequestHeader;
use stellmq_remoting::protocol::signature::SessionCredentials;
use stellmq_remoting::protocol::RequestCode;
use tokio::sync::Notify;

use crate::error::ClientError;
use crate::inbound::{
    Checkers, ClientCalls, Consumers, OffsetReset, OffsetResets, PendingReplies, TransactionCheck,
};
use crate::namesrv;
use crate::probe::{ConsumerProbe, Probes};
use crate::request::{bare, request};

/// Name servers, instance name, TLS settings and who signs: what makes two groups share an
/// instance. Groups with other credentials get their own instance (and connections), so each
/// request carries its own group's signature.
type Key = (String, String, ClientTlsConfig, Option<CredentialsKey>);
type CredentialsKey = (String, String, Option<String>);

static INSTANCES: Mutex<Option<HashMap<Key, Weak<ClientInstance>>>> = Mutex::new(None);

/// How long a heartbeat or an unregistration waits for a broker.
const BROKER_CALL_TIMEOUT: Duration = Duration::from_secs(3);

pub(crate) struct ClientInstance {
    pub remoting: RemotingClient,
    pub client_id: String,
    pub local_ip: IpAddr,
    namesrv: Vec<String>,
    consumers: Consumers,
    resets: OffsetResets,
    probes: Probes,
    checkers: Checkers,
    replies: PendingReplies,
    correlation: AtomicUsize,
    users: AtomicUsize,
    key: Key,
}

impl ClientInstance {
    /// The running instance for the name servers `namesrv_addr` (`ip:port;ip:port`),
    /// `instance_name`, `tls` and `credentials`, or a new one connected to the first name
    /// server (the local address it connects from names the client). With credentials, every
    /// request of the instance is signed (by its remoting client).
    pub async fn obtain(
        namesrv_addr: &str,
        instance_name: &str,
        tls: &ClientTlsConfig,
        credentials: Option<&SessionCredentials>,
    ) -> Result<Arc<Self>, ClientError> {
        let namesrv = namesrv::parse_list(namesrv_addr);
        let first = namesrv.first().ok_or(ClientError::NoNameServer)?;
        let signer = credentials.map(|c| {
            (
                c.access_key.clone(),
                c.secret_key.clone(),
                c.security_token.clone(),
            )
        });
        let key = (
            namesrv.join(";"),
            instance_name.to_owned(),
            tls.clone(),
            signer,
        );
        if let Some(existing) = Self::registered(&key) {
            existing.users.fetch_add(1, Ordering::SeqCst);
            return Ok(existing);
        }
        let consumers: Consumers = Arc::default();
        let resets: OffsetResets = Arc::default();
        let probes: Probes = Arc::default();
        let checkers: Checkers = Arc::default();
        let replies: PendingReplies = Arc::default();
        let remoting = RemotingClient::with_handler(
            ClientConfig {
                tls: ClientTls::from_config(tls)?,
                credentials: credentials.cloned(),
                ..ClientConfig::default()
            },
            Arc::new(ClientCalls {
                consumers: consumers.clone(),
                resets: resets.clone(),
                probes: probes.clone(),
                checkers: checkers.clone(),
                replies: replies.clone(),
            }),
        );
        let local_ip = remoting
            .channel(first)
            .await
            .map_err(ClientError::NameServerUnreachable)?
            .local()
            .ip();
        let instance = Arc::new(Self {
            remoting,
            client_id: format!("{local_ip}@{instance_name}"),
            local_ip,
            namesrv,
            consumers,
            resets,
            probes,
            checkers,
            replies,
            correlation: AtomicUsize::new(0),
            users: AtomicUsize::new(1),
            key: key.clone(),
        });
        let mut table = INSTANCES.lock();
        let table = table.get_or_insert_with(HashMap::new);
        // Two producers starting at once may both connect; the later one is simply not shared.
        table
            .entry(key)
            .or_insert_with(|| Arc::downgrade(&instance));
        Ok(instance)
    }

    fn registered(key: &Key) -> Option<Arc<Self>> {
        INSTANCES.lock().as_ref()?.get(key)?.upgrade()
    }

    /// Routes NOTIFY_CONSUMER_IDS_CHANGED for `group` to `rebalance`.
    pub fn register_consumer(&self, group: &str, rebalance: &Arc<Notify>) {
        self.consumers
            .lock()
            .insert(group.to_owned(), Arc::downgrade(rebalance));
    }

    pub fn unregister_consumer(&self, group: &str) {
        self.consumers.lock().remove(group);
        self.resets.lock().remove(group);
        self.probes.lock().remove(group);
    }

    /// Routes the broker's questions about `group` (running info, offsets, consuming a
    /// message directly) to `probe`.
    pub fn register_probe(&self, group: &str, probe: Weak<dyn ConsumerProbe>) {
        self.probes.lock().insert(group.to_owned(), probe);
    }

    /// Routes RESET_CONSUMER_CLIENT_OFFSET for `group` to `reset`.
    pub fn register_offset_reset(&self, group: &str, reset: Arc<OffsetReset>) {
        self.resets.lock().insert(group.to_owned(), reset);
    }

    /// Requests waiting for replies (request/reply).
    pub fn replies(&self) -> &PendingReplies {
        &self.replies
    }

    /// A correlation id unique to this client instance.
    pub fn next_correlation_id(&self) -> String {
        let n = self.correlation.fetch_add(1, Ordering::Relaxed);
        format!("{}-{}-{n}", self.client_id, std::process::id())
    }

    /// Routes CHECK_TRANSACTION_STATE for halves of producer `group` to `check`.
    pub fn register_checker(&self, group: &str, check: Arc<TransactionCheck>) {
        self.checkers.lock().insert(group.to_owned(), check);
    }

    pub fn unregister_checker(&self, group: &str) {
        self.checkers.lock().remove(group);
    }

    /// The route of `topic` from the name servers (`None`: the topic has no route).
    pub async fn topic_route(
        &self,
        topic: &str,
        timeout: Duration,
    ) -> Result<Option<TopicRouteData>, ClientError> {
        namesrv::fetch_route(&self.remoting, &self.namesrv, topic, timeout).await
    }

    /// HEART_BEAT with `data` to each of `brokers`, one after another; `failed` hears of each
    /// broker that did not take it.
    pub async fn heartbeat(
        &self,
        brokers: impl IntoIterator<Item = String>,
        data: &HeartbeatData,
        failed: impl Fn(&str, RemotingError),
    ) {
        let body = fastjson::encode(data);
        for addr in brokers {
            let request = bare(RequestCode::HEART_BEAT).with_body(body.clone());
            if let Err(e) = self
                .remoting
                .invoke(&addr, request, BROKER_CALL_TIMEOUT)
                .await
            {
                failed(&addr, e);
            }
        }
    }

    /// UNREGISTER_CLIENT of this client's producer or consumer group on each of `brokers`
    /// (answers and failures are ignored: the broker also forgets silent clients).
    pub async fn unregister(
        &self,
        brokers: impl IntoIterator<Item = String>,
        producer_group: Option<String>,
        consumer_group: Option<String>,
    ) {
        let header = UnregisterClientRequestHeader {
            client_id: self.client_id.clone(),
            producer_group,
            consumer_group,
        };
        for addr in brokers {
            let request = request(RequestCode::UNREGISTER_CLIENT, &header);
            let _ = self
                .remoting
                .invoke(&addr, request, BROKER_CALL_TIMEOUT)
                .await;
        }
    }

    /// Called once by each producer or consumer at shutdown; the last one closes connections.
    pub async fn release(&self) {
        if self.users.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        if let Some(table) = INSTANCES.lock().as_mut() {
            let ours = table
                .get(&self.key)
                .is_some_and(|w| std::ptr::eq(w.as_ptr(), self));
            if ours {
                table.remove(&self.key);
            }
        }
        self.remoting.shutdown().await;
    }
}
