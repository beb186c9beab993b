//! Message trace, as RocketMQ's clients write it (`enableMsgTrace`): producers record each
//! send (Pub) and transaction end (EndTransaction), push consumers each delivery (SubBefore)
//! and its outcome (SubAfter). Records queue in a bounded buffer (full: dropped and counted,
//! never a wait on the send path) and a background task sends them in batches (20 records,
//! or whatever is queued once 5 s have passed since the last batch) to the trace topic
//! (`RMQ_SYS_TRACE_TOPIC` unless configured), keyed by message id and keys so
//! `mqadmin queryMsgTraceById` finds them through the index. Its producer is a group of its
//! own (`_INNER_TRACE_PRODUCER-<group>-<role>-<n>`), started on the first batch.

mod hooks;
mod record;

use std::collections::BTreeSet;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_remoting::net::tls::ClientTlsConfig;
use stellmq_remoting::protocol::message::id::UniqIdGenerator;
use stellmq_remoting::protocol::signature::SessionCredentials;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub(crate) use hooks::{consumed, delivered, published, transaction_ended};
pub use record::{
    decode, ConsumeReturnType, TraceMessageType, TraceRecord, TraceType, CONTENT_SEPARATOR,
    FIELD_SEPARATOR,
};

use crate::error::ClientError;
use crate::message::Message;
use crate::producer::{Producer, ProducerConfig};

/// The trace topic when none is configured (RocketMQ's `RMQ_SYS_TRACE_TOPIC`).
pub const DEFAULT_TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Records waiting to be sent; more are dropped (Java's 2048).
const QUEUE_CAPACITY: usize = 2048;
/// Records per batch (Java's maximum).
const BATCH: usize = 20;
/// A batch goes out at least this often while records wait.
const FLUSH_INTERVAL: Duration = Duration::from_secs(5);
/// Trace message bodies are cut at this size (Java's trace producer `maxMessageSize`).
const MAX_BODY: usize = 128_000;
/// How long a shutdown waits for the last records to be sent.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Who writes the records: the trace producer's group name says it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TraceRole {
    Produce,
    Consume,
}

impl TraceRole {
    fn name(self) -> &'static str {
        match self {
            TraceRole::Produce => "PRODUCE",
            TraceRole::Consume => "CONSUME",
        }
    }
}

/// Where and as whom traces are sent.
#[derive(Debug, Clone)]
pub(crate) struct TraceSettings {
    pub namesrv_addr: String,
    pub tls: ClientTlsConfig,
    pub credentials: Option<SessionCredentials>,
    /// The traced producer's or consumer's group (without namespace).
    pub group: String,
    pub role: TraceRole,
    pub topic: String,
    /// The client's address, for request ids.
    pub local_ip: IpAddr,
}

/// What a traced producer's or consumer's config says about tracing.
pub(crate) struct TracedClient<'a> {
    pub enabled: bool,
    pub namesrv_addr: &'a str,
    pub tls: &'a ClientTlsConfig,
    pub credentials: Option<&'a SessionCredentials>,
    pub namespace: Option<&'a str>,
    /// The group as the broker names it (with namespace).
    pub group: &'a str,
    pub customized_topic: Option<&'a str>,
    pub local_ip: IpAddr,
    pub role: TraceRole,
}

impl TracedClient<'_> {
    /// The client's tracer, started; `None` with tracing off.
    pub fn start(self) -> Option<Arc<Tracer>> {
        self.enabled.then(|| {
            Tracer::start(TraceSettings {
                namesrv_addr: self.namesrv_addr.to_owned(),
                tls: self.tls.clone(),
                credentials: self.credentials.cloned(),
                group: crate::namespace::unwrap(self.namespace, self.group).to_owned(),
                role: self.role,
                topic: self
                    .customized_topic
                    .unwrap_or(DEFAULT_TRACE_TOPIC)
                    .to_owned(),
                local_ip: self.local_ip,
            })
        })
    }
}

/// A client's trace buffer and the task that sends it.
pub(crate) struct Tracer {
    queue: mpsc::Sender<TraceRecord>,
    topic: String,
    discarded: AtomicU64,
    stop: CancellationToken,
    worker: Mutex<Option<JoinHandle<()>>>,
    ids: UniqIdGenerator,
}

impl Tracer {
    pub fn start(settings: TraceSettings) -> Arc<Self> {
        let (queue, records) = mpsc::channel(QUEUE_CAPACITY);
        let stop = CancellationToken::new();
        let topic = settings.topic.clone();
        let ids = UniqIdGenerator::new(settings.local_ip);
        let worker = tokio::spawn(run(settings, records, stop.clone()));
        Arc::new(Self {
            queue,
            topic,
            discarded: AtomicU64::new(0),
            stop,
            worker: Mutex::new(Some(worker)),
            ids,
        })
    }

    /// A new id pairing a listener call's SubBefore and SubAfter records.
    pub fn request_id(&self) -> String {
        self.ids.next_id()
    }

    /// Whether `topic` is the trace topic itself (never traced).
    pub fn is_trace_topic(&self, topic: &str) -> bool {
        topic.starts_with(&self.topic)
    }

    /// Queues a record; a full buffer drops it.
    pub fn append(&self, record: TraceRecord) {
        if self.queue.try_send(record).is_err() {
            let dropped = self.discarded.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "message trace buffer full: trace records dropped");
            }
        }
    }

    /// Sends what is queued (waiting at most 5 s) and stops the trace producer.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        let worker = self.worker.lock().take();
        if let Some(worker) = worker {
            if tokio::time::timeout(SHUTDOWN_WAIT, worker).await.is_err() {
                tracing::warn!("message trace: records still unsent at shutdown were dropped");
            }
        }
    }
}

/// Collects records into batches and sends each; on stop, sends what is left.
async fn run(
    settings: TraceSettings,
    mut records: mpsc::Receiver<TraceRecord>,
    stop: CancellationToken,
) {
    let mut sender = TraceSender::new(settings);
    let mut pending = Vec::with_capacity(BATCH);
    let mut last_batch = Instant::now();
    loop {
        let due = tokio::time::Instant::from_std(last_batch + FLUSH_INTERVAL);
        tokio::select! {
            got = records.recv() => match got {
                Some(record) => pending.push(record),
                None => break,
            },
            _ = tokio::time::sleep_until(due), if !pending.is_empty() => {}
            _ = stop.cancelled() => break,
        }
        if pending.len() >= BATCH || (!pending.is_empty() && last_batch.elapsed() >= FLUSH_INTERVAL)
        {
            sender.send(std::mem::take(&mut pending)).await;
            last_batch = Instant::now();
        }
    }
    while let Ok(record) = records.try_recv() {
        pending.push(record);
    }
    for batch in pending.chunks(BATCH) {
        sender.send(batch.to_vec()).await;
    }
    sender.shutdown().await;
}

/// The trace producer, started when the first batch is sent.
struct TraceSender {
    settings: TraceSettings,
    producer: Option<Producer>,
}

static TRACE_PRODUCERS: AtomicU64 = AtomicU64::new(0);

impl TraceSender {
    fn new(settings: TraceSettings) -> Self {
        Self {
            settings,
            producer: None,
        }
    }

    /// Sends `records` as trace messages of at most [`MAX_BODY`] bytes each.
    async fn send(&mut self, records: Vec<TraceRecord>) {
        let Some(producer) = self.producer().await else {
            return;
        };
        for (body, keys) in trace_messages(&records) {
            let msg = Message::new(self.settings.topic.clone(), body).with_keys(keys);
            if let Err(e) = producer.send(msg).await {
                tracing::warn!(topic = %self.settings.topic, error = %e, "sending message trace failed");
            }
        }
    }

    async fn producer(&mut self) -> Option<Producer> {
        if self.producer.is_none() {
            let n = TRACE_PRODUCERS.fetch_add(1, Ordering::Relaxed) + 1;
            let s = &self.settings;
            let config = ProducerConfig {
                namesrv_addr: s.namesrv_addr.clone(),
                group: format!("_INNER_TRACE_PRODUCER-{}-{}-{n}", s.group, s.role.name()).replace(
                    |c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '%'),
                    "_",
                ),
                instance_name: format!("PID_CLIENT_INNER_TRACE_PRODUCER_{n}"),
                send_msg_timeout: Duration::from_secs(5),
                max_message_size: MAX_BODY,
                tls: s.tls.clone(),
                credentials: s.credentials.clone(),
                ..ProducerConfig::default()
            };
            match start_producer(config).await {
                Ok(p) => self.producer = Some(p),
                Err(e) => tracing::warn!(error = %e, "message trace: starting its producer failed"),
            }
        }
        self.producer.clone()
    }

    async fn shutdown(self) {
        if let Some(p) = self.producer {
            p.shutdown().await;
        }
    }
}

/// The trace producer's start, boxed: a traced producer starts its tracer, whose task starts
/// a producer (untraced), and the boxed future keeps that loop out of the future's type.
fn start_producer(
    config: ProducerConfig,
) -> Pin<Box<dyn Future<Output = Result<Producer, ClientError>> + Send>> {
    Box::pin(Producer::start(config))
}

/// Trace message bodies for `records` (a body is cut once it reaches [`MAX_BODY`]), each with
/// the index keys of its records.
fn trace_messages(records: &[TraceRecord]) -> Vec<(String, BTreeSet<String>)> {
    let mut out = Vec::new();
    let mut body = String::new();
    let mut keys = BTreeSet::new();
    for r in records {
        r.encode_into(&mut body);
        keys.extend(r.index_keys().map(str::to_owned));
        if body.len() >= MAX_BODY {
            out.push((std::mem::take(&mut body), std::mem::take(&mut keys)));
        }
    }
    if !body.is_empty() {
        out.push((body, keys));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_cut_at_the_body_limit_and_keyed_by_their_records() {
        let record = |id: &str, keys: &str| TraceRecord {
            msg_id: id.into(),
            keys: keys.into(),
            tags: "x".repeat(70_000),
            ..Default::default()
        };
        let records = [record("A", "k1"), record("B", ""), record("C", "k3 k4")];
        let messages = trace_messages(&records);
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].1.iter().collect::<Vec<_>>(), ["A", "B", "k1"]);
        assert_eq!(messages[1].1.iter().collect::<Vec<_>>(), ["C", "k3", "k4"]);
        assert_eq!(decode(&messages[0].0).len(), 2);
    }
}
