//! The push consumer: subscribe, give it a listener, and it pulls, rebalances, retries and
//! stores offsets (RocketMQ's DefaultMQPushConsumer).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::protocol::body::{ConsumeFromWhere, MessageModel};
use tokio::sync::Semaphore;

use super::allocate::AllocateStrategy;
use super::core::{ConsumerCore, MessageSink, QueueState};
use super::ReceivedMessage;
use crate::error::ClientError;

/// What a listener says about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeResult {
    Success,
    /// Retry later: concurrently consumed messages go back to the broker (retry topic, then
    /// the DLQ); orderly ones are retried in place after a second.
    ReconsumeLater,
}

/// Consumer options, with RocketMQ's names and defaults.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    pub namesrv_addr: String,
    pub group: String,
    pub instance_name: String,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    /// For CONSUME_FROM_TIMESTAMP (ms).
    pub consume_timestamp: i64,
    pub allocate: AllocateStrategy,
    /// Concurrent listener calls at once (`consumeThreadMax`).
    pub consume_thread_count: usize,
    /// Messages per listener call (`consumeMessageBatchMaxSize`).
    pub consume_message_batch_max_size: usize,
    /// Messages per pull (`pullBatchSize`).
    pub pull_batch_size: i32,
    /// Pause pulling a queue with this many unfinished messages (`pullThresholdForQueue`).
    pub pull_threshold_for_queue: usize,
    /// ... or this many MiB of unfinished bodies (`pullThresholdSizeForQueue`).
    pub pull_threshold_size_for_queue: usize,
    /// Retries before the DLQ (`maxReconsumeTimes`).
    pub max_reconsume_times: i32,
    pub rebalance_interval: Duration,
    /// Broadcasting offsets live under `<dir>/<clientId>/<group>/offsets.json`.
    pub offset_store_dir: PathBuf,
    /// Optional namespace: topics and the group become `<namespace>%<name>` on the broker.
    pub namespace: Option<String>,
    /// How subscription expressions are read: tags (`TagA || TagB`) or SQL92 selectors on
    /// message properties (`a > 5 AND TAGS = 'TagA'`, needs `enablePropertyFilter`).
    pub expression_type: ExpressionType,
}

/// RocketMQ's `ExpressionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExpressionType {
    #[default]
    Tag,
    Sql92,
}

impl ExpressionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ExpressionType::Tag => "TAG",
            ExpressionType::Sql92 => "SQL92",
        }
    }
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            namesrv_addr: std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| "127.0.0.1:9876".into()),
            group: "DEFAULT_CONSUMER".into(),
            instance_name: std::process::id().to_string(),
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            consume_timestamp: 0,
            allocate: AllocateStrategy::Averagely,
            consume_thread_count: 20,
            consume_message_batch_max_size: 1,
            pull_batch_size: 32,
            pull_threshold_for_queue: 1000,
            pull_threshold_size_for_queue: 100,
            max_reconsume_times: 16,
            rebalance_interval: Duration::from_secs(20),
            namespace: None,
            expression_type: ExpressionType::Tag,
            offset_store_dir: std::env::var_os("HOME")
                .map_or_else(|| PathBuf::from("."), PathBuf::from)
                .join(".rocketmq_offsets"),
        }
    }
}

type Listener = Arc<dyn Fn(&[ReceivedMessage]) -> ConsumeResult + Send + Sync>;

/// Concurrent consumption: each message in its own task, at most `consume_thread_count` at once.
struct Concurrent {
    listener: Listener,
    permits: Arc<Semaphore>,
}

impl MessageSink for Concurrent {
    fn deliver(
        &self,
        core: Arc<ConsumerCore>,
        state: Arc<QueueState>,
        messages: Vec<ReceivedMessage>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let (listener, permits) = (self.listener.clone(), self.permits.clone());
        Box::pin(async move {
            state.begin(messages.iter().map(|m| (m.queue_offset(), m.body.len())));
            let batch = core.config.consume_message_batch_max_size.max(1);
            for chunk in messages.chunks(batch) {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let (listener, core, state, chunk) = (
                    listener.clone(),
                    core.clone(),
                    state.clone(),
                    chunk.to_vec(),
                );
                tokio::spawn(async move {
                    let _permit = permit;
                    let (c, l) = (chunk.clone(), listener.clone());
                    let result = tokio::task::spawn_blocking(move || l(&c))
                        .await
                        .unwrap_or(ConsumeResult::ReconsumeLater);
                    for msg in &chunk {
                        // A failed batch goes back message by message; one the broker will not
                        // take is retried here shortly.
                        while result == ConsumeResult::ReconsumeLater && !core.send_back(msg).await
                        {
                            if state.dropped.is_cancelled() {
                                return;
                            }
                            tokio::time::sleep(Duration::from_secs(5)).await;
                            let (m, l) = (vec![msg.clone()], listener.clone());
                            if tokio::task::spawn_blocking(move || l(&m))
                                .await
                                .unwrap_or(ConsumeResult::ReconsumeLater)
                                == ConsumeResult::Success
                            {
                                break;
                            }
                        }
                        state.finish(msg.queue_offset());
                    }
                    core.offsets
                        .update(&state.mq, state.consumed_offset(), false);
                });
            }
        })
    }
}

/// Orderly consumption: one message at a time per queue, in queue order, on a locked queue.
struct Orderly {
    listener: Listener,
}

impl MessageSink for Orderly {
    fn deliver(
        &self,
        core: Arc<ConsumerCore>,
        state: Arc<QueueState>,
        messages: Vec<ReceivedMessage>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let listener = self.listener.clone();
        Box::pin(async move {
            state.begin(messages.iter().map(|m| (m.queue_offset(), m.body.len())));
            for chunk in messages.chunks(core.config.consume_message_batch_max_size.max(1)) {
                loop {
                    if state.dropped.is_cancelled() {
                        return;
                    }
                    let (c, l) = (chunk.to_vec(), listener.clone());
                    let result = tokio::task::spawn_blocking(move || l(&c))
                        .await
                        .unwrap_or(ConsumeResult::ReconsumeLater);
                    if result == ConsumeResult::Success {
                        break;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                for msg in chunk {
                    state.finish(msg.queue_offset());
                }
                core.offsets
                    .update(&state.mq, state.consumed_offset(), false);
            }
        })
    }

    fn orderly(&self) -> bool {
        true
    }
}

/// A started push consumer.
pub struct PushConsumer {
    core: Arc<ConsumerCore>,
}

impl PushConsumer {
    /// Starts consuming `subscriptions` (topic, tag expression) with a concurrent listener.
    pub async fn start_concurrently(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        listener: impl Fn(&[ReceivedMessage]) -> ConsumeResult + Send + Sync + 'static,
    ) -> Result<Self, ClientError> {
        let permits = Arc::new(Semaphore::new(config.consume_thread_count.max(1)));
        Self::start(
            config,
            subscriptions,
            Arc::new(Concurrent {
                listener: Arc::new(listener),
                permits,
            }),
        )
        .await
    }

    /// Starts consuming with an orderly listener (queues locked on the broker).
    pub async fn start_orderly(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        listener: impl Fn(&[ReceivedMessage]) -> ConsumeResult + Send + Sync + 'static,
    ) -> Result<Self, ClientError> {
        Self::start(
            config,
            subscriptions,
            Arc::new(Orderly {
                listener: Arc::new(listener),
            }),
        )
        .await
    }

    async fn start(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        sink: Arc<dyn MessageSink>,
    ) -> Result<Self, ClientError> {
        if subscriptions.is_empty() {
            return Err(ClientError::Invalid(
                "subscribe to at least one topic".into(),
            ));
        }
        let core = ConsumerCore::new(config, sink).await?;
        core.subscribe_all(subscriptions).await?;
        tokio::spawn(core.clone().run_background());
        Ok(Self { core })
    }

    pub fn client_id(&self) -> &str {
        &self.core.client_id
    }

    /// Queues this consumer currently owns.
    pub fn assigned_queues(&self) -> Vec<stellmq_remoting::protocol::body::MessageQueue> {
        self.core.assigned()
    }

    /// Stops pulling, commits offsets and leaves the group.
    pub async fn shutdown(self) {
        self.core.shutdown().await;
    }
}
