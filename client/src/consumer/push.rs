//! The push consumer: subscribe, give it a listener, and it pulls, rebalances, retries and
//! stores offsets (RocketMQ's DefaultMQPushConsumer).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_remoting::protocol::body::{CmResult, ConsumeMessageDirectlyResult, ConsumeType};
use stellmq_remoting::protocol::message::now_ms;
use tokio::sync::Semaphore;

use super::core::{ConsumerCore, MessageSink};
use super::listener::Listener;
use super::queue_state::QueueState;
use crate::error::ClientError;
use crate::message::ReceivedMessage;
use crate::probe::DirectConsume;
use crate::trace::{self, ConsumeReturnType};

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
                    let result = consume(&core, &state, &listener, chunk.clone()).await;
                    for msg in &chunk {
                        // A failed batch goes back message by message; one the broker will not
                        // take is retried here shortly.
                        while result == ConsumeResult::ReconsumeLater && !core.send_back(msg).await
                        {
                            if state.dropped.is_cancelled() {
                                return;
                            }
                            tokio::time::sleep(Duration::from_secs(5)).await;
                            let again = consume(&core, &state, &listener, vec![msg.clone()]).await;
                            if again == ConsumeResult::Success {
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

    fn consume_type(&self) -> ConsumeType {
        ConsumeType::ConsumePassively
    }

    fn consume_directly(&self, message: ReceivedMessage) -> Option<DirectConsume> {
        Some(consume_directly(self.listener.clone(), message, false))
    }
}

/// Runs `listener` on `messages`; a panic is `Err` with its message.
async fn run_listener(
    listener: &Listener,
    messages: Vec<ReceivedMessage>,
) -> Result<ConsumeResult, String> {
    listener.try_consume(messages).await
}

/// One listener call of the pull flow: its time and outcome go to the consumer's stats and
/// the queue's last-consume time; a listener that panics asks for the messages again.
async fn consume(
    core: &ConsumerCore,
    state: &QueueState,
    listener: &Listener,
    messages: Vec<ReceivedMessage>,
) -> ConsumeResult {
    let count = messages.len();
    let started = Instant::now();
    let traced = core.tracer.as_ref().map(|tracer| {
        let request_id = tracer.request_id();
        let ns = core.config.namespace.as_deref();
        let before = trace::delivered(ns, &core.config.group, &request_id, &messages);
        for record in &before {
            tracer.append(record.clone());
        }
        (tracer, before)
    });
    let outcome = run_listener(listener, messages).await;
    let rt_ms = started.elapsed().as_millis() as u64;
    if let Some((tracer, before)) = traced {
        let code = match outcome {
            Ok(ConsumeResult::Success) => ConsumeReturnType::Success,
            Ok(ConsumeResult::ReconsumeLater) => ConsumeReturnType::Failed,
            Err(_) => ConsumeReturnType::Exception,
        };
        for record in trace::consumed(&before, rt_ms as i64, code) {
            tracer.append(record);
        }
    }
    let result = outcome.unwrap_or(ConsumeResult::ReconsumeLater);
    let (ok, failed) = match result {
        ConsumeResult::Success => (count, 0),
        ConsumeResult::ReconsumeLater => (0, count),
    };
    core.stats.consumed(&state.mq.topic, rt_ms, ok, failed);
    state.last_consume_ms.store(now_ms(), Ordering::Release);
    result
}

/// CONSUME_MESSAGE_DIRECTLY: `listener` on `message` alone, reported as Java's consume
/// services report it (nothing is acknowledged or sent back).
fn consume_directly(listener: Listener, message: ReceivedMessage, order: bool) -> DirectConsume {
    Box::pin(async move {
        let started = Instant::now();
        let (consume_result, remark) = match run_listener(&listener, vec![message]).await {
            Ok(ConsumeResult::Success) => (CmResult::Success, None),
            Ok(ConsumeResult::ReconsumeLater) => (CmResult::Later, None),
            Err(panic) => (CmResult::ThrowException, Some(panic)),
        };
        ConsumeMessageDirectlyResult {
            order,
            auto_commit: true,
            consume_result,
            remark,
            spent_time_mills: started.elapsed().as_millis() as i64,
        }
    })
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
                    let result = consume(&core, &state, &listener, chunk.to_vec()).await;
                    if result == ConsumeResult::Success {
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

    fn consume_type(&self) -> ConsumeType {
        ConsumeType::ConsumePassively
    }

    fn consume_directly(&self, message: ReceivedMessage) -> Option<DirectConsume> {
        Some(consume_directly(self.listener.clone(), message, true))
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
