//! One client instance per name-server list and instance name, shared by every producer and
//! consumer started with them (RocketMQ's MQClientInstance): one connection to each broker and
//! name server and one client id, however many groups a process runs.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::Mutex;
use stellmq_remoting::net::{Channel, ClientConfig, InboundHandler, RemotingClient};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use tokio::sync::Notify;

use crate::error::ClientError;
use crate::reply::{deliver_reply, PendingReplies};
use crate::transaction::{answer_check, TransactionChecker};

type Key = (String, String);

static INSTANCES: Mutex<Option<HashMap<Key, Weak<ClientInstance>>>> = Mutex::new(None);

/// Rebalance triggers of the consumer groups running on one instance.
type Consumers = Arc<Mutex<HashMap<String, Weak<Notify>>>>;
/// Checkers of the transactional producer groups running on one instance.
type Checkers = Arc<Mutex<HashMap<String, Arc<TransactionChecker>>>>;

pub(crate) struct ClientInstance {
    pub remoting: RemotingClient,
    pub client_id: String,
    pub local_ip: IpAddr,
    consumers: Consumers,
    checkers: Checkers,
    replies: PendingReplies,
    correlation: AtomicUsize,
    users: AtomicUsize,
    key: Key,
}

/// RocketMQ's `ip:port;ip:port` name-server list, blanks dropped.
pub(crate) fn namesrv_list(addrs: &str) -> Vec<String> {
    addrs
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl ClientInstance {
    /// The running instance for `namesrv` and `instance_name`, or a new one connected to the
    /// first name server (the local address it connects from names the client).
    pub async fn obtain(namesrv: &[String], instance_name: &str) -> Result<Arc<Self>, ClientError> {
        let first = namesrv.first().ok_or(ClientError::NoNameServer)?;
        let key = (namesrv.join(";"), instance_name.to_owned());
        if let Some(existing) = Self::registered(&key) {
            existing.users.fetch_add(1, Ordering::SeqCst);
            return Ok(existing);
        }
        let consumers: Consumers = Arc::default();
        let checkers: Checkers = Arc::default();
        let replies: PendingReplies = Arc::default();
        let remoting = RemotingClient::with_handler(
            ClientConfig::default(),
            Arc::new(ClientCalls {
                consumers: consumers.clone(),
                checkers: checkers.clone(),
                replies: replies.clone(),
            }),
        );
        let local_ip = remoting
            .channel(first)
            .await
            .map_err(|e| ClientError::NameServerUnreachable(e.to_string()))?
            .local()
            .ip();
        let instance = Arc::new(Self {
            remoting,
            client_id: format!("{local_ip}@{instance_name}"),
            local_ip,
            consumers,
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

    /// Routes CHECK_TRANSACTION_STATE for halves of producer `group` to `checker`.
    pub fn register_checker(&self, group: &str, checker: Arc<TransactionChecker>) {
        self.checkers.lock().insert(group.to_owned(), checker);
    }

    pub fn unregister_checker(&self, group: &str) {
        self.checkers.lock().remove(group);
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

/// Answers the broker's calls to this client.
struct ClientCalls {
    consumers: Consumers,
    checkers: Checkers,
    replies: PendingReplies,
}

impl InboundHandler for ClientCalls {
    fn on_request(&self, channel: Channel, request: RemotingCommand, _received_at: Instant) {
        match request.request_code_typed() {
            Some(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED) => {
                let group = request.ext_fields.get("consumerGroup");
                for (name, notify) in self.consumers.lock().iter() {
                    if group.is_none_or(|g| g == name) {
                        if let Some(notify) = notify.upgrade() {
                            notify.notify_one();
                        }
                    }
                }
            }
            Some(RequestCode::CHECK_TRANSACTION_STATE) => {
                answer_check(channel, &request, |group| {
                    self.checkers.lock().get(group).cloned()
                });
            }
            Some(RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT) => {
                deliver_reply(&channel, &request, &self.replies);
            }
            Some(RequestCode::GET_CONSUMER_RUNNING_INFO) => {
                channel.try_send(request.success_to().with_body(&b"{\"properties\":{}}"[..]));
            }
            _ if !request.is_oneway() => {
                channel.try_send(request.not_supported_to());
            }
            _ => {}
        }
    }
}
