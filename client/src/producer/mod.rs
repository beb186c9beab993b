//! The producer: sync, async and oneway sends, batches, queue selection, delay levels,
//! compression, retries on other brokers and a short quarantine for brokers that failed.
//!
//! [`Producer`] is the application's handle; the work is done below it:
//! `prepare` (checks and flags before a send), `send` (the send paths and their retries),
//! `queue_selection` (round robin and broker quarantine), `publish_routes` (each topic's
//! writable queues, cached from the name servers).

mod config;
mod prepare;
mod publish_routes;
mod queue_selection;
mod recall;
mod send;

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use stellmq_remoting::protocol::body::{HeartbeatData, MessageQueue, ProducerData};
use stellmq_remoting::protocol::RemotingCommand;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::instance::ClientInstance;
use crate::message::{Message, SendResult};
use send::{QueueChoice, Sender};

pub use config::ProducerConfig;

struct Inner {
    sender: Sender,
    stop: CancellationToken,
}

/// A started producer; clones share it.
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Inner>,
}

impl Producer {
    /// Connects to the name servers and starts heartbeats and route refreshes.
    pub async fn start(config: ProducerConfig) -> Result<Self, ClientError> {
        let instance = ClientInstance::obtain(
            &config.namesrv_addr,
            &config.instance_name,
            &config.tls,
            config.credentials.as_ref(),
        )
        .await?;
        let mut config = config;
        config.group = crate::namespace::wrap(config.namespace.as_deref(), &config.group);
        let inner = Arc::new(Inner {
            sender: Sender::new(config, instance),
            stop: CancellationToken::new(),
        });
        tokio::spawn(background(Arc::downgrade(&inner), inner.stop.clone()));
        Ok(Self { inner })
    }

    pub fn client_id(&self) -> &str {
        &self.instance().client_id
    }

    /// The producer group (with its namespace).
    pub fn group(&self) -> &str {
        &self.inner.sender.config.group
    }

    /// The master address of a broker name from the cached routes.
    pub(crate) fn master_addr(&self, broker_name: &str) -> Option<String> {
        self.inner.sender.routes.master_addr(broker_name)
    }

    /// Loads the publish route of `topic` (namespace applied) if not cached yet.
    pub(crate) async fn ensure_route(&self, topic: &str) -> Result<(), ClientError> {
        let topic = self.wrap(topic);
        self.inner.sender.routes.get(&topic).await.map(|_| ())
    }

    pub(crate) async fn heartbeat_now(&self) {
        self.inner.heartbeat().await;
    }

    pub(crate) async fn invoke_oneway(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<(), ClientError> {
        self.instance()
            .remoting
            .invoke_oneway(addr, request)
            .await
            .map_err(Into::into)
    }

    /// The trace buffer, with `enable_msg_trace`.
    pub(crate) fn tracer(&self) -> Option<&Arc<crate::trace::Tracer>> {
        self.inner.sender.tracer.as_ref()
    }

    /// The producer's namespace, if any.
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.inner.sender.config.namespace.as_deref()
    }

    pub(crate) fn instance(&self) -> &Arc<ClientInstance> {
        &self.inner.sender.instance
    }

    /// Sends and waits for the broker, retrying other brokers on failure.
    pub async fn send(&self, msg: Message) -> Result<SendResult, ClientError> {
        self.inner
            .sender
            .send(msg, QueueChoice::Any, false)
            .await?
            .ok_or_else(|| ClientError::Invalid("a two-way send produced no result".into()))
    }

    /// Sends to one queue (no retry elsewhere: ordering depends on the queue).
    pub async fn send_to_queue(
        &self,
        msg: Message,
        queue: &MessageQueue,
    ) -> Result<SendResult, ClientError> {
        self.inner
            .sender
            .send(msg, QueueChoice::Fixed(queue), false)
            .await?
            .ok_or_else(|| ClientError::Invalid("a two-way send produced no result".into()))
    }

    /// Sends to the queue `selector` picks from the topic's queues (ordered messages: pick by
    /// a key's hash so one key always lands on one queue).
    pub async fn send_with_selector(
        &self,
        msg: Message,
        selector: impl FnOnce(&[MessageQueue]) -> usize,
    ) -> Result<SendResult, ClientError> {
        let topic = self.wrap(&msg.topic);
        let info = self.inner.sender.routes.get(&topic).await?;
        if info.queues.is_empty() {
            return Err(ClientError::Invalid(format!(
                "topic {} has no writable queue",
                msg.topic
            )));
        }
        let index = selector(&info.queues) % info.queues.len();
        let Some(queue) = info.queues.get(index) else {
            return Err(ClientError::TopicNotExist(msg.topic));
        };
        self.send_to_queue(msg, queue).await
    }

    /// Sends without waiting for the broker's answer.
    pub async fn send_oneway(&self, msg: Message) -> Result<(), ClientError> {
        self.inner
            .sender
            .send(msg, QueueChoice::Any, true)
            .await
            .map(|_| ())
    }

    /// Sends in the background; the returned future resolves to the result.
    pub fn send_async(
        &self,
        msg: Message,
    ) -> impl Future<Output = Result<SendResult, ClientError>> {
        let producer = self.clone();
        // A send's future is kilobytes: the task holds it boxed, so what is spawned (and
        // moved on the way into the runtime) is only the producer and the message.
        let task: JoinHandle<Result<SendResult, ClientError>> =
            tokio::spawn(async move { Box::pin(producer.send(msg)).await });
        async move { task.await? }
    }

    /// Sends messages of one topic as one batch (one queue, consecutive offsets).
    pub async fn send_batch(&self, msgs: Vec<Message>) -> Result<SendResult, ClientError> {
        self.inner.sender.send_batch(msgs).await
    }

    /// Unregisters from the brokers and closes connections.
    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        if let Some(tracer) = &self.inner.sender.tracer {
            tracer.shutdown().await;
        }
        let masters = self.inner.sender.routes.masters();
        let group = Some(self.group().to_owned());
        self.instance().unregister(masters, group, None).await;
        self.instance().release().await;
    }

    /// `name` inside this producer's namespace.
    fn wrap(&self, name: &str) -> String {
        crate::namespace::wrap(self.inner.sender.config.namespace.as_deref(), name)
    }
}

impl Inner {
    /// Heartbeats to every master this producer knows.
    async fn heartbeat(&self) {
        let data = HeartbeatData {
            client_id: self.sender.instance.client_id.clone(),
            producer_data_set: vec![
                ProducerData {
                    group_name: self.sender.config.group.clone(),
                },
                ProducerData {
                    group_name: "CLIENT_INNER_PRODUCER".into(),
                },
            ],
            consumer_data_set: Vec::new(),
        };
        let masters = self.sender.routes.masters();
        self.sender
            .instance
            .heartbeat(masters, &data, |addr, e| {
                tracing::debug!(broker = %addr, error = %e, "heartbeat failed");
            })
            .await;
    }
}

/// Heartbeats and route refreshes every 30 s (the first heartbeat soon after the first send).
async fn background(inner: Weak<Inner>, stop: CancellationToken) {
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        ticks += 1;
        if ticks == 2 || ticks.is_multiple_of(30) {
            inner.sender.routes.refresh().await;
            inner.heartbeat().await;
        }
    }
}
