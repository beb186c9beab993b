//! The transaction check service (protocol.md 7.4 step 4): every `transactionCheckInterval` it
//! walks the half queue from its progress offset. A half with an op record is done; one
//! younger than `transactionTimeOut` (or its `CHECK_IMMUNITY_TIME_IN_SECONDS`) ends the
//! walk; one checked `transactionCheckMax` times is moved to TRANS_CHECK_MAX_TIME_TOPIC;
//! any other is put back at the end of the half queue with TRANSACTION_CHECK_TIMES + 1
//! and its producer group is asked about the copy (CHECK_TRANSACTION_STATE, oneway).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::perm;
use stellmq_remoting::protocol::headers::{CheckTransactionStateRequestHeader, CommandHeader};
use stellmq_remoting::protocol::message::{id, property, MessageRecord, MessageVersion};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use stellmq_store::{AcceptAll, GetMessageStatus, MessageStore};
use tokio_util::sync::CancellationToken;

use super::{op_offsets, reput, Resolved, SYS_TRANS_GROUP};
use crate::clients::ProducerManager;
use crate::context::{now_ms, BrokerIdentity};
use crate::offset::ConsumerOffsetManager;
use crate::topic::{
    TopicConfigManager, TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
};

/// RocketMQ's `transactionTimeOut`, `transactionCheckMax` and `transactionCheckInterval`.
#[derive(Debug, Clone, Copy)]
pub struct CheckConfig {
    pub timeout_ms: i64,
    pub check_max: i32,
    pub interval: Duration,
}

pub struct TransactionCheckService {
    pub identity: Arc<BrokerIdentity>,
    pub store: Arc<MessageStore>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub producers: Arc<ProducerManager>,
    pub topics: Arc<TopicConfigManager>,
    pub resolved: Arc<Resolved>,
    pub config: CheckConfig,
    /// How far this process has read op records into `resolved`.
    ops_read: Mutex<Option<i64>>,
}

/// What one pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CheckPass {
    pub checked: usize,
    pub discarded: usize,
}

impl TransactionCheckService {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        identity: Arc<BrokerIdentity>,
        store: Arc<MessageStore>,
        offsets: Arc<ConsumerOffsetManager>,
        producers: Arc<ProducerManager>,
        topics: Arc<TopicConfigManager>,
        resolved: Arc<Resolved>,
        config: CheckConfig,
    ) -> Self {
        Self {
            identity,
            store,
            offsets,
            producers,
            topics,
            resolved,
            config,
            ops_read: Mutex::new(None),
        }
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(self.config.interval) => {}
            }
            let pass = self.check_once().await;
            if pass != CheckPass::default() {
                tracing::info!(
                    checked = pass.checked,
                    discarded = pass.discarded,
                    "transaction check pass"
                );
            }
        }
    }

    /// One walk over the half queue.
    pub async fn check_once(&self) -> CheckPass {
        let mut pass = CheckPass::default();
        // Copies put back during this walk are for the next one.
        let end = self.store.max_offset_in_queue(TRANS_HALF_TOPIC, 0);
        let mut progress = self
            .offsets
            .query(SYS_TRANS_GROUP, TRANS_HALF_TOPIC, 0)
            .unwrap_or(0)
            .max(self.store.min_offset_in_queue(TRANS_HALF_TOPIC, 0));
        if progress >= end {
            return pass;
        }
        self.read_ops(progress);
        let now = now_ms();
        while progress < end {
            if self.resolved.contains(progress) {
                progress += 1;
                continue;
            }
            let Some(half) = self.half_at(progress) else {
                progress += 1; // cleaned away or unreadable: nothing to ask about
                continue;
            };
            if now - half.head.born_timestamp < self.immunity_ms(&half) {
                break; // what follows is younger
            }
            let times = check_times(&half);
            if times >= self.config.check_max {
                self.discard(&half).await;
                pass.discarded += 1;
            } else if !self.put_back_and_ask(&half, times + 1).await {
                break; // could not put it back: keep it for the next pass
            } else {
                pass.checked += 1;
            }
            progress += 1;
        }
        self.offsets
            .commit(SYS_TRANS_GROUP, TRANS_HALF_TOPIC, 0, progress);
        self.resolved.forget_below(progress);
        self.advance_op_progress(progress);
        pass
    }

    fn immunity_ms(&self, half: &MessageRecord) -> i64 {
        half.properties
            .get(property::CHECK_IMMUNITY_TIME_IN_SECONDS)
            .and_then(|s| s.parse::<i64>().ok())
            .map_or(self.config.timeout_ms, |secs| secs.saturating_mul(1000))
    }

    fn half_at(&self, offset: i64) -> Option<MessageRecord> {
        let got = self
            .store
            .get_messages(TRANS_HALF_TOPIC, 0, offset, 1, &AcceptAll);
        if got.status != GetMessageStatus::Found {
            return None;
        }
        MessageRecord::decode(got.messages.first()?, false)
            .ok()
            .map(|(r, _)| r)
    }

    /// Marks the halves that op records resolve, from where this process stopped reading
    /// (or the persisted op progress after a restart).
    fn read_ops(&self, half_progress: i64) {
        let mut read = self.ops_read.lock();
        let mut offset = read.unwrap_or_else(|| {
            self.offsets
                .query(SYS_TRANS_GROUP, TRANS_OP_HALF_TOPIC, 0)
                .unwrap_or(0)
                .max(self.store.min_offset_in_queue(TRANS_OP_HALF_TOPIC, 0))
        });
        loop {
            let got = self
                .store
                .get_messages(TRANS_OP_HALF_TOPIC, 0, offset, 32, &AcceptAll);
            if got.status != GetMessageStatus::Found {
                break;
            }
            for raw in &got.messages {
                if let Ok((op, _)) = MessageRecord::decode(raw, false) {
                    for half in op_offsets(&op.body).filter(|h| *h >= half_progress) {
                        self.resolved.insert(half);
                    }
                }
            }
            offset = got.next_begin_offset;
        }
        *read = Some(offset);
    }

    /// Op records whose halves the progress has passed are never needed again.
    fn advance_op_progress(&self, half_progress: i64) {
        let start = self
            .offsets
            .query(SYS_TRANS_GROUP, TRANS_OP_HALF_TOPIC, 0)
            .unwrap_or(0);
        let mut offset = start;
        loop {
            let got = self
                .store
                .get_messages(TRANS_OP_HALF_TOPIC, 0, offset, 1, &AcceptAll);
            let passed = got.status == GetMessageStatus::Found
                && got.messages.first().is_some_and(|raw| {
                    MessageRecord::decode(raw, false)
                        .is_ok_and(|(op, _)| op_offsets(&op.body).all(|h| h < half_progress))
                });
            if !passed {
                break;
            }
            offset = got.next_begin_offset;
        }
        if offset != start {
            self.offsets
                .commit(SYS_TRANS_GROUP, TRANS_OP_HALF_TOPIC, 0, offset);
        }
    }

    async fn discard(&self, half: &MessageRecord) {
        tracing::warn!(
            msg_id = half.properties.get(property::UNIQ_KEY).unwrap_or(""),
            group = half.properties.get(property::PGROUP).unwrap_or(""),
            "transaction checked transactionCheckMax times without an answer; moved to TRANS_CHECK_MAX_TIME_TOPIC"
        );
        self.topics
            .ensure_internal_topic(TRANS_CHECK_MAX_TIME_TOPIC, 1, perm::READ | perm::WRITE);
        let mut msg = reput(half, &half.properties, self.identity.store_host);
        msg.topic = TRANS_CHECK_MAX_TIME_TOPIC.to_owned();
        msg.queue_id = 0;
        let result = self.store.put_message(msg).await;
        if !result.status.is_stored() {
            tracing::error!(status = ?result.status, "cannot move a half message to TRANS_CHECK_MAX_TIME_TOPIC");
        }
    }

    /// Appends a copy of `half` counting `times` checks and asks a producer of its group
    /// about the copy. False when the copy could not be stored.
    async fn put_back_and_ask(&self, half: &MessageRecord, times: i32) -> bool {
        let mut props = half.properties.clone();
        props.insert(property::TRANSACTION_CHECK_TIMES, times.to_string());
        let result = self
            .store
            .put_message(reput(half, &props, self.identity.store_host))
            .await;
        let Some(append) = result.append.filter(|_| result.status.is_stored()) else {
            tracing::warn!(status = ?result.status, "cannot put a half message back for its check");
            return false;
        };
        let Some(&phys) = append.phys_offsets.first() else {
            return false;
        };
        let mut copy = half.clone();
        copy.properties = props;
        copy.head.queue_offset = append.queue_offset;
        copy.head.physical_offset = phys;
        self.ask(copy);
        true
    }

    /// CHECK_TRANSACTION_STATE to one live producer of the half's group; the body is the
    /// half re-encoded (V1) with its real topic and queue.
    fn ask(&self, mut half: MessageRecord) {
        let group = half
            .properties
            .get(property::PGROUP)
            .unwrap_or("")
            .to_owned();
        let Some(producer) = self.producers.any_channel(&group) else {
            tracing::debug!(%group, "no producer of the group is connected to check a transaction");
            return;
        };
        let uniq = half.properties.get(property::UNIQ_KEY).map(str::to_owned);
        let header = CheckTransactionStateRequestHeader {
            tran_state_table_offset: half.head.queue_offset,
            commit_log_offset: half.head.physical_offset,
            msg_id: uniq.clone(),
            transaction_id: uniq,
            offset_msg_id: Some(id::offset_msg_id(
                &self.identity.store_host,
                half.head.physical_offset,
            )),
            topic: None,
        };
        if let Some((topic, queue_id)) = crate::deferred::real_target(&half.properties) {
            half.topic = topic;
            half.head.queue_id = queue_id;
        }
        half.version = MessageVersion::V1;
        let Ok(body) = half.encode_to_vec() else {
            tracing::error!(%group, "cannot encode a half message for its check");
            return;
        };
        let mut request =
            RemotingCommand::request(RequestCode::CHECK_TRANSACTION_STATE, header.to_ext_fields())
                .with_body(body);
        request.mark_oneway();
        if !producer.channel.try_send(request) {
            tracing::debug!(%group, client = %producer.client_id, "could not send a transaction check");
        }
    }
}

fn check_times(half: &MessageRecord) -> i32 {
    half.properties
        .get(property::TRANSACTION_CHECK_TIMES)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}
