//! The push consumer: subscribe, give it a listener, and it pulls, rebalances, retries and
//! stores offsets (RocketMQ's DefaultMQPushConsumer).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::core::{ConsumerCore, MessageSink};
use super::listener::Listener;
use super::queue_state::QueueState;
use crate::error::ClientError;
use crate::message::ReceivedMessage;

pub use super::config::{ConsumerConfig, ExpressionType};

/// What a listener says about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeResult {
    Success,
    /// Retry later: concurrently consumed messages go back to the broker (retry topic, then
    /// the DLQ); orderly ones are retried in place after a second.
    ReconsumeLater,
}

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
                    let result = listener.consume(chunk.clone()).await;
                    for msg in &chunk {
                        // A failed batch goes back message by message; one the broker will not
                        // take is retried here shortly.
                        while result == ConsumeResult::ReconsumeLater && !core.send_back(msg).await
                        {
                            if state.dropped.is_cancelled() {
                                return;
                            }
                            tokio::time::sleep(Duration::from_secs(5)).await;
                            if listener.consume(vec![msg.clone()]).await == ConsumeResult::Success {
                                break;
                            }
                        }
                        state.finish(msg.queue_offset());
                    }
                    core.offsets
                        .record(&state.mq, state.consumed_offset(), &state.dropped);
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
            for chunk in messages.chunks(core.config.consume_message_batch_max_size.max(1)) {
                loop {
                    if state.dropped.is_cancelled() {
                        return;
                    }
                    if listener.consume(chunk.to_vec()).await == ConsumeResult::Success {
                        break;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                for msg in chunk {
                    state.finish(msg.queue_offset());
                }
                core.offsets
                    .record(&state.mq, state.consumed_offset(), &state.dropped);
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
    /// Starts consuming `subscriptions` (topic, tag expression) with a concurrent listener,
    /// a plain function run on tokio's blocking pool (so it may block).
    pub async fn start_concurrently(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        listener: impl Fn(&[ReceivedMessage]) -> ConsumeResult + Send + Sync + 'static,
    ) -> Result<Self, ClientError> {
        Self::start_concurrent(config, subscriptions, Listener::blocking(listener)).await
    }

    /// Starts consuming `subscriptions` with a concurrent async listener: each batch is a
    /// task of its own, at most `consume_thread_count` at once.
    pub async fn start_concurrently_async<F, Fut>(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        listener: F,
    ) -> Result<Self, ClientError>
    where
        F: Fn(Vec<ReceivedMessage>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ConsumeResult> + Send + 'static,
    {
        Self::start_concurrent(config, subscriptions, Listener::from_async(listener)).await
    }

    /// Starts consuming with an orderly listener (queues locked on the broker), a plain
    /// function run on tokio's blocking pool.
    pub async fn start_orderly(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        listener: impl Fn(&[ReceivedMessage]) -> ConsumeResult + Send + Sync + 'static,
    ) -> Result<Self, ClientError> {
        let sink = Orderly {
            listener: Listener::blocking(listener),
        };
        Self::start(config, subscriptions, Arc::new(sink)).await
    }

    /// Starts consuming with an orderly async listener: one batch of a queue at a time, the
    /// next once the listener's future has finished.
    pub async fn start_orderly_async<F, Fut>(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        listener: F,
    ) -> Result<Self, ClientError>
    where
        F: Fn(Vec<ReceivedMessage>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ConsumeResult> + Send + 'static,
    {
        let sink = Orderly {
            listener: Listener::from_async(listener),
        };
        Self::start(config, subscriptions, Arc::new(sink)).await
    }

    async fn start_concurrent(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        listener: Listener,
    ) -> Result<Self, ClientError> {
        let permits = Arc::new(Semaphore::new(config.consume_thread_count.max(1)));
        let sink = Concurrent { listener, permits };
        Self::start(config, subscriptions, Arc::new(sink)).await
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
