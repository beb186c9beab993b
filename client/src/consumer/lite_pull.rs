//! The lite pull consumer: the application polls (RocketMQ's DefaultLitePullConsumer).
//! `subscribe` lets the group rebalance queues; offsets are committed automatically after
//! each poll, or by hand with `commit`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_remoting::protocol::body::MessageQueue;
use tokio::sync::{mpsc, Mutex};

use super::config::ConsumerConfig;
use super::core::{ConsumerCore, MessageSink};
use super::queue_state::QueueState;
use crate::error::ClientError;
use crate::message::ReceivedMessage;

struct Buffered {
    state: Arc<QueueState>,
    message: ReceivedMessage,
}

struct ChannelSink {
    tx: mpsc::Sender<Buffered>,
}

impl MessageSink for ChannelSink {
    fn deliver(
        &self,
        _core: Arc<ConsumerCore>,
        state: Arc<QueueState>,
        messages: Vec<ReceivedMessage>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let tx = self.tx.clone();
        Box::pin(async move {
            for message in messages {
                // A full buffer pauses this queue's pulling: flow control.
                if tx
                    .send(Buffered {
                        state: state.clone(),
                        message,
                    })
                    .await
                    .is_err()
                {
                    return;
                }
            }
        })
    }
}

/// A started lite pull consumer.
pub struct LitePullConsumer {
    core: Arc<ConsumerCore>,
    rx: Mutex<mpsc::Receiver<Buffered>>,
    auto_commit: bool,
    /// Messages handed out by the last poll, finished at the next poll or commit.
    outstanding: parking_lot::Mutex<Vec<(Arc<QueueState>, i64)>>,
}

impl LitePullConsumer {
    /// Subscribes to topics; the group's members share the queues.
    pub async fn subscribe(
        config: ConsumerConfig,
        subscriptions: &[(&str, &str)],
        auto_commit: bool,
    ) -> Result<Self, ClientError> {
        let (tx, rx) = mpsc::channel(config.pull_threshold_for_queue.max(64));
        let core = ConsumerCore::new(config, Arc::new(ChannelSink { tx })).await?;
        core.subscribe_all(subscriptions).await?;
        tokio::spawn(core.clone().run_background());
        Ok(Self {
            core,
            rx: Mutex::new(rx),
            auto_commit,
            outstanding: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// Takes explicit queues instead of subscribing (no group rebalance).
    pub async fn assign(
        config: ConsumerConfig,
        queues: &[MessageQueue],
        auto_commit: bool,
    ) -> Result<Self, ClientError> {
        let (tx, rx) = mpsc::channel(config.pull_threshold_for_queue.max(64));
        let core = ConsumerCore::new(config, Arc::new(ChannelSink { tx })).await?;
        for mq in queues {
            core.subscribe_without_retry(&mq.topic, "*");
        }
        if let Err(e) = core.assign(queues).await {
            core.shutdown().await;
            return Err(e);
        }
        let persist = core.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = persist.stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(5)) => persist.persist_offsets().await,
                }
            }
        });
        Ok(Self {
            core,
            rx: Mutex::new(rx),
            auto_commit,
            outstanding: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// Up to `max` messages, waiting at most `timeout` for the first.
    pub async fn poll(&self, max: usize, timeout: Duration) -> Vec<ReceivedMessage> {
        if self.auto_commit {
            self.commit().await;
        }
        let deadline = Instant::now() + timeout;
        let mut rx = self.rx.lock().await;
        let mut out = Vec::new();
        while out.len() < max.max(1) {
            let wait = if out.is_empty() {
                deadline.saturating_duration_since(Instant::now())
            } else {
                Duration::ZERO
            };
            let next = if wait.is_zero() {
                rx.try_recv().ok()
            } else {
                tokio::time::timeout(wait, rx.recv()).await.ok().flatten()
            };
            let Some(b) = next else { break };
            if b.state.dropped.is_cancelled() {
                continue;
            }
            self.outstanding
                .lock()
                .push((b.state.clone(), b.message.queue_offset()));
            out.push(b.message);
        }
        out
    }

    /// Marks everything polled so far as consumed and stores the offsets.
    pub async fn commit(&self) {
        let done: Vec<(Arc<QueueState>, i64)> = std::mem::take(&mut *self.outstanding.lock());
        for (state, offset) in &done {
            state.finish(*offset);
            self.core
                .offsets
                .record(&state.mq, state.consumed_offset(), &state.dropped);
        }
        if !done.is_empty() {
            self.core.persist_offsets().await;
        }
    }

    /// Moves a queue's next pull position (messages already buffered are still returned).
    pub fn seek(&self, mq: &MessageQueue, offset: i64) -> Result<(), ClientError> {
        let state = self
            .core
            .queue_state(mq)
            .ok_or_else(|| ClientError::Invalid(format!("queue {mq:?} is not assigned")))?;
        state
            .next_pull
            .store(offset, std::sync::atomic::Ordering::Release);
        state.repositioned.notify_one();
        self.core.offsets.update(mq, offset, true);
        Ok(())
    }

    pub fn assigned_queues(&self) -> Vec<MessageQueue> {
        self.core.assigned()
    }

    /// The id the brokers know this consumer by (`ip@instanceName`).
    pub fn client_id(&self) -> &str {
        &self.core.client_id
    }

    pub async fn shutdown(self) {
        if self.auto_commit {
            self.commit().await;
        }
        self.core.shutdown().await;
    }
}
