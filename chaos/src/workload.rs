//! The workload a run puts on the cluster while faults come and go: sync sends and orderly
//! sends (one sender per sharding key) through the client, a clustering and a broadcasting
//! push consumer, and a watcher that samples who the controllers name master. Every
//! acknowledgement is recorded with the queue, offset and broker (from its offsetMsgId) that
//! stored it, and with when the send began and ended.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;
use stellmq_client::{
    ConsumeFromWhere, ConsumeResult, ConsumerConfig, Message, MessageModel, Producer,
    ProducerConfig, PushConsumer, ReceivedMessage, SendStatus,
};
use stellmq_remoting::protocol::message::id::decode_offset_msg_id;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;
use crate::ChaosError;

pub const TOPIC: &str = "ChaosTopic";
/// The real SDK's topic (its consumer reads its own messages only).
pub const SDK_TOPIC: &str = "ChaosSdkTopic";
/// Sharding keys of the orderly senders (one sender each).
pub const ORDER_KEYS: usize = 4;
const SYNC_SENDERS: usize = 2;

/// What a message is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Kind {
    Sync,
    /// The `seq`-th send of sharding key `key`.
    Orderly {
        key: usize,
        seq: u64,
    },
}

/// One acknowledged send (SEND_OK).
#[derive(Debug, Clone, Serialize)]
pub struct Ack {
    pub body: String,
    pub kind: Kind,
    pub queue_id: i32,
    pub queue_offset: i64,
    /// The address of the broker that stored it and where in its CommitLog (from its
    /// offsetMsgId; the brokers of a set share one history of the log).
    pub broker: String,
    pub physical_offset: i64,
    /// Milliseconds since the run began.
    pub sent_at: u64,
    pub acked_at: u64,
}

/// Who the controllers named master at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct MasterSample {
    pub at: u64,
    pub addr: String,
    pub epoch: i32,
}

/// Which broker the name server routed as master (brokerId 0) at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct RouteSample {
    pub at: u64,
    pub master: Option<String>,
}

/// Everything the workload saw.
#[derive(Default)]
pub struct Journal {
    pub acks: Vec<Ack>,
    /// Sends that failed or were answered with a status other than SEND_OK.
    pub unacknowledged: u64,
    pub masters: Vec<MasterSample>,
    /// What the name server routed, sampled every 200 ms (controller shapes).
    pub routes: Vec<RouteSample>,
    /// Bodies each consumer received, with how many times.
    pub clustering: HashMap<String, u32>,
    pub broadcasting: HashMap<String, u32>,
    /// What the clustering consumer received at each (queue, offset), as the broker that
    /// served it stored it then (to explain a skipped message).
    pub clustering_at: HashMap<(i32, i64), String>,
}

/// The running workload.
pub struct Workload {
    pub journal: Arc<Mutex<Journal>>,
    epoch: Instant,
    stop: CancellationToken,
    tasks: JoinSet<()>,
    producer: Producer,
    consumers: Vec<PushConsumer>,
}

impl Workload {
    /// Starts the consumers, the senders and (controller mode) the master watcher.
    pub async fn start(
        cluster: &Cluster,
        epoch: Instant,
        offsets_dir: &Path,
    ) -> Result<Workload, ChaosError> {
        let journal = Arc::new(Mutex::new(Journal::default()));
        let namesrv = cluster.namesrv_addr().to_owned();
        let producer = Producer::start(ProducerConfig {
            namesrv_addr: namesrv.clone(),
            group: "chaos_producer".into(),
            send_msg_timeout: Duration::from_secs(3),
            ..Default::default()
        })
        .await
        .map_err(|e| ChaosError::Workload(format!("producer: {e}")))?;
        let mut consumers = Vec::new();
        for (model, group) in [
            (MessageModel::Clustering, "chaos_clustering"),
            (MessageModel::Broadcasting, "chaos_broadcasting"),
        ] {
            let consumer =
                start_consumer(&namesrv, model, group, offsets_dir, journal.clone()).await?;
            consumers.push(consumer);
        }
        let stop = CancellationToken::new();
        let mut tasks = JoinSet::new();
        for _ in 0..SYNC_SENDERS {
            tasks.spawn(sync_sender(
                producer.clone(),
                journal.clone(),
                epoch,
                stop.clone(),
            ));
        }
        for key in 0..ORDER_KEYS {
            tasks.spawn(orderly_sender(
                producer.clone(),
                key,
                journal.clone(),
                epoch,
                stop.clone(),
            ));
        }
        Ok(Workload {
            journal,
            epoch,
            stop,
            tasks,
            producer,
            consumers,
        })
    }

    /// Milliseconds since the run began.
    pub fn now(&self) -> u64 {
        millis_since(self.epoch)
    }

    /// When the run began (the journal's times count from it).
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Stops the senders (the consumers keep consuming).
    pub async fn stop_sending(&mut self) {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
    }

    pub async fn shutdown(self) {
        for c in self.consumers {
            c.shutdown().await;
        }
        self.producer.shutdown().await;
    }
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

async fn start_consumer(
    namesrv: &str,
    model: MessageModel,
    group: &str,
    offsets_dir: &Path,
    journal: Arc<Mutex<Journal>>,
) -> Result<PushConsumer, ChaosError> {
    let broadcasting = model == MessageModel::Broadcasting;
    let config = ConsumerConfig {
        namesrv_addr: namesrv.to_owned(),
        group: group.to_owned(),
        message_model: model,
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        offset_store_dir: offsets_dir.join(group),
        ..Default::default()
    };
    PushConsumer::start_concurrently(config, &[(TOPIC, "*")], move |messages| {
        record_received(&journal, messages, broadcasting);
        ConsumeResult::Success
    })
    .await
    .map_err(|e| ChaosError::Workload(format!("consumer {group}: {e}")))
}

fn record_received(journal: &Mutex<Journal>, messages: &[ReceivedMessage], broadcasting: bool) {
    let mut j = journal.lock();
    for m in messages {
        let body = String::from_utf8_lossy(&m.body).into_owned();
        if broadcasting {
            *j.broadcasting.entry(body).or_default() += 1;
        } else {
            let at = (m.record.head.queue_id, m.record.head.queue_offset);
            j.clustering_at.insert(at, body.clone());
            *j.clustering.entry(body).or_default() += 1;
        }
    }
}

async fn sync_sender(
    producer: Producer,
    journal: Arc<Mutex<Journal>>,
    epoch: Instant,
    stop: CancellationToken,
) {
    let mut n = 0u64;
    let tag = rand::random::<u32>();
    while !stop.is_cancelled() {
        let body = format!("s-{tag:08x}-{n}");
        n += 1;
        let sent_at = millis_since(epoch);
        let result = producer.send(Message::new(TOPIC, body.clone())).await;
        let acked = record_send(&journal, result, body, Kind::Sync, sent_at, epoch);
        if !acked {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn orderly_sender(
    producer: Producer,
    key: usize,
    journal: Arc<Mutex<Journal>>,
    epoch: Instant,
    stop: CancellationToken,
) {
    let mut seq = 0u64;
    while !stop.is_cancelled() {
        let body = format!("o-{key}-{seq}");
        let sent_at = millis_since(epoch);
        let msg = Message::new(TOPIC, body.clone()).with_keys([format!("key-{key}")]);
        let result = producer.send_with_selector(msg, |_| key).await;
        let kind = Kind::Orderly { key, seq };
        seq += 1;
        if !record_send(&journal, result, body, kind, sent_at, epoch) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Records a send's outcome; whether it was acknowledged.
fn record_send(
    journal: &Mutex<Journal>,
    result: Result<stellmq_client::SendResult, stellmq_client::ClientError>,
    body: String,
    kind: Kind,
    sent_at: u64,
    epoch: Instant,
) -> bool {
    let acked_at = millis_since(epoch);
    let ack =
        match result {
            Ok(r) if r.status == SendStatus::SendOk => decode_offset_msg_id(&r.offset_msg_id)
                .inspect_err(|e| {
                    // Not checkable: counted as unacknowledged, and said.
                    tracing::error!(id = %r.offset_msg_id, error = %e, "SEND_OK with an undecodable offsetMsgId");
                })
                .ok()
                .map(|(addr, physical_offset)| Ack {
                    body,
                    physical_offset,
                    kind,
                    queue_id: r.queue.queue_id,
                    queue_offset: r.queue_offset,
                    broker: addr.to_string(),
                    sent_at,
                    acked_at,
                }),
            _ => None,
        };
    let mut j = journal.lock();
    match ack {
        Some(ack) => {
            j.acks.push(ack);
            true
        }
        None => {
            j.unacknowledged += 1;
            false
        }
    }
}
