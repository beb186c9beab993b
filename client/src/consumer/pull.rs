//! The classic pull consumer (RocketMQ's `DefaultMQPullConsumer`): the application picks the
//! queues ([`PullConsumer::fetch_subscribe_message_queues`]), pulls each from an offset it
//! keeps ([`PullConsumer::pull`], [`PullConsumer::pull_block_if_not_found`]) and records its
//! progress ([`PullConsumer::update_consume_offset`], stored every 5 s and at shutdown). It
//! registers with the brokers (heartbeats as `CONSUME_ACTIVELY`) but does not rebalance.
//!
//! Queues and messages carry the application's topic names: the namespace, if any, is added
//! on the way to the broker and taken off on the way back.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::{ConsumeType, MessageQueue};
use stellmq_remoting::protocol::headers::PullMessageRequestHeader;
use stellmq_remoting::protocol::message::pull_sys_flag;
use stellmq_remoting::protocol::RequestCode;

use super::config::{ConsumerConfig, ExpressionType};
use super::core::{ConsumerCore, MessageSink};
use super::pull_result::{self, PullResult};
use super::queue_state::QueueState;
use super::routes::MASTER_ID;
use crate::error::ClientError;
use crate::message::ReceivedMessage;
use crate::request::request;

/// How long the broker holds a blocking pull without news (`brokerSuspendMaxTimeMillis`).
const BROKER_SUSPEND_MS: i64 = 20_000;
/// How long a pull waits for its answer (`consumerPullTimeoutMillis`).
const PULL_TIMEOUT: Duration = Duration::from_secs(10);
/// ... and a blocking one (`consumerTimeoutMillisWhenSuspend`).
const BLOCKING_PULL_TIMEOUT: Duration = Duration::from_secs(30);
const PERSIST_INTERVAL: Duration = Duration::from_secs(5);
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);

/// Nothing is pulled for a pull consumer in the background: its sink stays empty.
struct Active;

impl MessageSink for Active {
    fn deliver(
        &self,
        _: Arc<ConsumerCore>,
        _: Arc<QueueState>,
        _: Vec<ReceivedMessage>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async {})
    }

    fn consume_type(&self) -> ConsumeType {
        ConsumeType::ConsumeActively
    }
}

/// What the consumer and its background task share.
pub(super) struct PullShared {
    pub core: Arc<ConsumerCore>,
    pub namespace: Option<Arc<str>>,
    /// Queues (broker-side names) whose offsets changed since they were last stored.
    pub dirty: Mutex<BTreeSet<MessageQueue>>,
    /// Held while offsets are stored: shutdown waits for a background store under way.
    pub storing: tokio::sync::Mutex<()>,
    /// The broker id each queue's last pull suggested (broker-side names).
    suggested: Mutex<HashMap<MessageQueue, i64>>,
}

/// A started pull consumer.
pub struct PullConsumer {
    pub(super) shared: Arc<PullShared>,
}

impl PullConsumer {
    /// Starts a pull consumer of `config.group`. Of the config, the name servers, group,
    /// instance name, message model (where offsets are stored), namespace, expression type,
    /// TLS and credentials apply.
    pub async fn start(config: ConsumerConfig) -> Result<Self, ClientError> {
        let namespace = config
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .map(Arc::from);
        let core = ConsumerCore::new(config, Arc::new(Active)).await?;
        let shared = Arc::new(PullShared {
            core,
            namespace,
            dirty: Mutex::new(BTreeSet::new()),
            storing: tokio::sync::Mutex::new(()),
            suggested: Mutex::new(HashMap::new()),
        });
        tokio::spawn(shared.clone().run_background());
        Ok(Self { shared })
    }

    pub fn client_id(&self) -> &str {
        &self.shared.core.client_id
    }

    /// The readable queues of `topic`, sorted, from the name servers.
    pub async fn fetch_subscribe_message_queues(
        &self,
        topic: &str,
    ) -> Result<Vec<MessageQueue>, ClientError> {
        let topic = self.shared.broker_topic(topic);
        let route = self.shared.core.routes.fetch(&topic).await?;
        Ok(crate::route::subscribe_queues(&topic, &route)
            .into_iter()
            .map(|q| self.shared.app_queue(q))
            .collect())
    }

    /// Pulls up to `max_nums` messages of `mq` matching `expression` (tags, or an SQL92
    /// selector with [`ExpressionType::Sql92`] in the config) from `offset`; answers at once.
    pub async fn pull(
        &self,
        mq: &MessageQueue,
        expression: &str,
        offset: i64,
        max_nums: i32,
    ) -> Result<PullResult, ClientError> {
        self.shared
            .pull(mq, expression, offset, max_nums, false)
            .await
    }

    /// Like [`PullConsumer::pull`], but with nothing new at `offset` the broker holds the
    /// pull (up to 20 s) until a message arrives.
    pub async fn pull_block_if_not_found(
        &self,
        mq: &MessageQueue,
        expression: &str,
        offset: i64,
        max_nums: i32,
    ) -> Result<PullResult, ClientError> {
        self.shared
            .pull(mq, expression, offset, max_nums, true)
            .await
    }

    /// Stores the offsets not stored yet, then leaves the group and closes connections.
    pub async fn shutdown(self) {
        self.shared.persist_dirty().await;
        self.shared.core.shutdown().await;
    }
}

impl PullShared {
    /// `topic` as the broker names it.
    pub fn broker_topic(&self, topic: &str) -> String {
        crate::namespace::wrap(self.namespace.as_deref(), topic)
    }

    /// `mq` as the broker names it.
    pub fn broker_queue(&self, mq: &MessageQueue) -> MessageQueue {
        MessageQueue {
            topic: self.broker_topic(&mq.topic),
            ..mq.clone()
        }
    }

    /// A broker-side queue as the application names it.
    fn app_queue(&self, mq: MessageQueue) -> MessageQueue {
        let topic = crate::namespace::unwrap(self.namespace.as_deref(), &mq.topic).to_owned();
        MessageQueue { topic, ..mq }
    }

    async fn pull(
        &self,
        mq: &MessageQueue,
        expression: &str,
        offset: i64,
        max_nums: i32,
        block: bool,
    ) -> Result<PullResult, ClientError> {
        if offset < 0 {
            return Err(ClientError::Invalid(format!("pull offset {offset} < 0")));
        }
        if max_nums <= 0 {
            return Err(ClientError::Invalid(format!("maxNums {max_nums} <= 0")));
        }
        let target = self.broker_queue(mq);
        self.register_topic(&target.topic).await;
        let suggested = self.suggested.lock().get(&target).copied();
        let addr = self
            .pull_addr(&target, suggested.unwrap_or(MASTER_ID))
            .await?;
        let kind = self.core.config.expression_type;
        let sub = super::subscription::build(&target.topic, expression, kind);
        let header = PullMessageRequestHeader {
            consumer_group: self.core.config.group.clone(),
            topic: target.topic.clone(),
            queue_id: target.queue_id,
            queue_offset: offset,
            max_msg_nums: max_nums,
            sys_flag: pull_sys_flag::SUBSCRIPTION | if block { pull_sys_flag::SUSPEND } else { 0 },
            commit_offset: 0,
            suspend_timeout_millis: BROKER_SUSPEND_MS,
            subscription: Some(sub.sub_string.clone()),
            sub_version: if kind == ExpressionType::Tag {
                0
            } else {
                sub.sub_version
            },
            expression_type: sub.expression_type.clone(),
            max_msg_bytes: None,
        };
        let timeout = if block {
            BLOCKING_PULL_TIMEOUT
        } else {
            PULL_TIMEOUT
        };
        let response = self
            .core
            .instance
            .remoting
            .invoke(&addr, request(RequestCode::PULL_MESSAGE, &header), timeout)
            .await
            .inspect_err(|_| {
                // The broker may be gone: the next pull asks the master (or what the route
                // offers) again.
                self.suggested.lock().remove(&target);
            })?;
        let (result, suggest) =
            pull_result::read(&addr, response, mq, &sub, self.namespace.as_ref())?;
        self.suggested.lock().insert(target, suggest);
        Ok(result)
    }

    /// Where `mq` is pulled from: the suggested broker, else its master, else any broker of
    /// the name; the route is read once more if it does not know the broker.
    async fn pull_addr(&self, mq: &MessageQueue, suggested: i64) -> Result<String, ClientError> {
        let routes = &self.core.routes;
        if let Some((addr, _)) = routes.pull_addr(&mq.broker_name, suggested) {
            return Ok(addr);
        }
        routes.fetch(&mq.topic).await?;
        routes
            .pull_addr(&mq.broker_name, suggested)
            .map(|(addr, _)| addr)
            .ok_or_else(|| no_broker(mq))
    }

    /// A topic pulled for the first time joins the heartbeat's subscriptions (everything, as
    /// Java's pull consumer registers it) and the brokers hear of it at once.
    async fn register_topic(&self, topic: &str) {
        let subscriptions = &self.core.subscriptions;
        if subscriptions.get(topic).is_some() {
            return;
        }
        subscriptions.insert(topic, "*", ExpressionType::Tag);
        if self.core.routes.fetch(topic).await.is_ok() {
            self.core.heartbeat().await;
        }
    }

    /// Stores changed offsets every 5 s and heartbeats every 30 s until shutdown.
    async fn run_background(self: Arc<Self>) {
        let mut last_heartbeat = Instant::now();
        loop {
            tokio::select! {
                _ = self.core.stop.cancelled() => return,
                _ = tokio::time::sleep(PERSIST_INTERVAL) => {}
            }
            self.persist_dirty().await;
            if last_heartbeat.elapsed() >= HEARTBEAT_INTERVAL {
                self.core
                    .routes
                    .refresh(self.core.subscriptions.topics())
                    .await;
                self.core.heartbeat().await;
                last_heartbeat = Instant::now();
            }
        }
    }
}

pub(super) fn no_broker(mq: &MessageQueue) -> ClientError {
    ClientError::Invalid(format!(
        "no broker {} in the route of topic {}",
        mq.broker_name, mq.topic
    ))
}
