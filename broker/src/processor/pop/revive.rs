//! The revive service (RocketMQ's `PopReviveService`, simplified): POP checkpoints and acks
//! are records of the revive log `rmq_sys_REVIVE_LOG_<cluster>` (in the CommitLog, so
//! flushed as the broker's flush mode says and replicated to slaves), and the checkpoint
//! table in memory is rebuilt from it at start.
//!
//! - **Rebuild** ([`replay`]): each revive queue is read from the progress of the group
//!   `CID_RMQ_SYS_REVIVE_GROUP` (a consumer offset, in `consumerOffset.json`) to its end;
//!   checkpoint records add batches, ack records mark their messages. A replayed checkpoint
//!   also moves its group's offset past its messages, in case the offsets file is older
//!   than the log (kill -9).
//! - **Revive** ([`ReviveService::revive_once`]): every `reviveInterval`, each batch whose
//!   invisible time passed has its unacked messages written to the group's POP retry topic
//!   `%RETRY%<group>_<topic>` with RECONSUME_TIME + 1 (or to `%DLQ%<group>` once they were
//!   consumed `retryMaxTimes` times), then a batch-ack record marks them revived, and the
//!   batch is dropped.
//! - **Progress**: a revive queue's progress is the revive-log offset of its oldest batch
//!   still in flight (or its end), so a restart replays exactly what is still needed.

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::perm;
use stellmq_remoting::protocol::body::pop::{AckMsg, PopCheckPoint};
use stellmq_remoting::protocol::message::{property, sys_flag, MessageRecord};
use stellmq_remoting::protocol::names::{self, RETRY_PREFIX};
use stellmq_remoting::protocol::pop::{parse_normal_topic, pop_retry_topic};
use stellmq_store::{AcceptAll, PutMessage};
use tokio_util::sync::CancellationToken;

use super::checkpoint::{Checkpoint, CkKey};
use super::{PopCore, ACK_TAG, BATCH_ACK_TAG, CK_TAG, REVIVE_GROUP};

/// Batches revived per pass at most (the rest wait for the next pass).
const REVIVE_BATCH: usize = 1024;

/// What a rebuild found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    pub records: usize,
    pub in_flight: usize,
}

/// Rebuilds the checkpoint table from the revive log (blocking: reads the store).
pub fn replay(core: &PopCore) -> Replayed {
    let mut stats = Replayed::default();
    for qid in 0..core.revive_queue_num {
        let topic = &core.revive_topic;
        let mut offset = core
            .offsets
            .query(REVIVE_GROUP, topic, qid)
            .unwrap_or(0)
            .max(core.store.min_offset_in_queue(topic, qid));
        loop {
            let result = core.store.get_messages(topic, qid, offset, 64, &AcceptAll);
            for (raw, at) in result.messages.iter().zip(&result.queue_offsets) {
                stats.records += 1;
                match MessageRecord::decode(raw, false) {
                    Ok((record, _)) => replay_record(core, &record, qid, *at),
                    Err(e) => {
                        tracing::warn!(qid, offset = at, error = %e, "unreadable revive log record skipped")
                    }
                }
            }
            if result.next_begin_offset <= offset {
                break;
            }
            offset = result.next_begin_offset;
        }
    }
    stats.in_flight = core.checkpoints.len();
    stats
}

fn replay_record(core: &PopCore, record: &MessageRecord, qid: i32, at: i64) {
    match record.properties.tags() {
        Some(CK_TAG) => {
            let Ok(ck) = fastjson::decode::<PopCheckPoint>(&record.body) else {
                tracing::warn!(
                    qid,
                    at,
                    "revive log checkpoint record does not decode; skipped"
                );
                return;
            };
            core.checkpoints.replay_checkpoint(&ck, qid, at);
            if let Some(last) = ck.offsets().into_iter().max() {
                let current = core.offsets.query(&ck.cid, &ck.topic, ck.queue_id);
                if current.is_none_or(|c| c <= last) {
                    core.offsets
                        .commit(&ck.cid, &ck.topic, ck.queue_id, last + 1);
                }
            }
        }
        Some(ACK_TAG) | Some(BATCH_ACK_TAG) => {
            let Ok(ack) = fastjson::decode::<AckMsg>(&record.body) else {
                tracing::warn!(qid, at, "revive log ack record does not decode; skipped");
                return;
            };
            let key = CkKey {
                group: ack.consumer_group.clone(),
                topic: ack.topic.clone(),
                queue_id: ack.queue_id,
                start_offset: ack.start_offset,
                pop_time: ack.pop_time,
            };
            core.checkpoints.replay_ack(&key, &ack.acked_offsets());
        }
        _ => {}
    }
}

pub struct ReviveService {
    pub core: Arc<PopCore>,
    pub interval: Duration,
}

/// One revive pass now, outside the service's schedule (asked for by an operator's handle
/// or a test); the messages it put back. Passes never overlap (`revive_pass`).
pub async fn revive_now(core: &Arc<PopCore>) -> usize {
    let service = ReviveService {
        core: core.clone(),
        interval: Duration::ZERO,
    };
    service.revive_once().await
}

impl ReviveService {
    pub async fn run(self, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => {
                    self.save_progress();
                    return;
                }
                _ = tokio::time::sleep(self.interval) => {}
            }
            let revived = self.revive_once().await;
            if revived > 0 {
                tracing::info!(
                    event = "POP_REVIVED",
                    messages = revived,
                    "popped messages whose invisible time passed were put back"
                );
            }
            self.save_progress();
        }
    }

    /// Revives every batch due now; returns the messages put back.
    pub async fn revive_once(&self) -> usize {
        let _pass = self.core.revive_pass.lock().await;
        let due = self
            .core
            .checkpoints
            .due(self.core.clock.now_ms(), REVIVE_BATCH);
        let mut revived = 0;
        for key in due {
            // Read afresh: an ack whose record was in flight when the list was taken may
            // have been undone since (its write failed), and that message is due too.
            let Some(ck) = self.core.checkpoints.get(&key) else {
                continue;
            };
            match self.revive(&key, &ck).await {
                Ok(n) => revived += n,
                Err(e) => {
                    // The store refused a write: the batch stays, and is retried next pass.
                    tracing::warn!(group = %key.group, topic = %key.topic, error = %e, "revive failed; retried next pass");
                }
            }
        }
        revived
    }

    /// Puts a batch's unacked messages back, marks them in the log, drops the batch.
    async fn revive(&self, key: &CkKey, ck: &Checkpoint) -> Result<usize, String> {
        let core = &self.core;
        let unacked = ck.unacked();
        let max_times = core
            .groups
            .get(&key.group)
            .map_or(16, |g| g.retry_max_times);
        let mut revived = Vec::new();
        for offset in &unacked {
            let result = core
                .store
                .get_messages(&key.topic, key.queue_id, *offset, 1, &AcceptAll);
            let raw = match (result.messages.first(), result.queue_offsets.first()) {
                (Some(raw), Some(at)) if at == offset => raw,
                _ => {
                    tracing::warn!(topic = %key.topic, queue = key.queue_id, offset, "popped message no longer in the store; not revived");
                    revived.push(*offset);
                    continue;
                }
            };
            // A message that cannot be put back (unreadable, or its group's retry or DLQ
            // topic cannot exist) never could be: it is dropped with an error, not retried.
            let msg = match MessageRecord::decode(raw, false)
                .map_err(|e| e.to_string())
                .and_then(|(record, _)| self.put_back(key, &record, max_times))
            {
                Ok(msg) => msg,
                Err(e) => {
                    tracing::error!(group = %key.group, topic = %key.topic, offset, error = %e, "popped message cannot be revived; dropped");
                    revived.push(*offset);
                    continue;
                }
            };
            let result = core.writer.put(vec![msg]).await;
            if !result.status.is_stored() {
                // What was put back already is not put back again next pass.
                core.checkpoints.replay_ack(key, &revived);
                return Err(format!("retry message not stored: {:?}", result.status));
            }
            revived.push(*offset);
        }
        let marker = AckMsg {
            ack_offset: -1,
            start_offset: key.start_offset,
            consumer_group: key.group.clone(),
            topic: key.topic.clone(),
            queue_id: key.queue_id,
            pop_time: key.pop_time,
            broker_name: Some(core.identity.broker_name.clone()),
            ack_offset_list: revived.clone(),
        };
        let uniq = format!(
            "{}@{}@{revived:?}@{}@{}@revive",
            key.topic, key.queue_id, key.group, key.pop_time
        );
        // The batch is done in memory whatever happens to the marker: only a crash before
        // it lands can make a replay revive these messages once more.
        core.checkpoints.remove(key);
        if let Err(e) = core
            .append_revive(
                None,
                ck.revive_qid,
                BATCH_ACK_TAG,
                uniq,
                fastjson::encode(&marker),
            )
            .await
        {
            tracing::warn!(remark = %e.remark, "revive marker not written");
        }
        Ok(revived.len())
    }

    /// The retry (or dead-letter) copy of a popped message, as RocketMQ's `reviveRetry`
    /// builds it, plus RETRY_TOPIC and ORIGIN_MESSAGE_ID as a send-back sets them.
    fn put_back(
        &self,
        key: &CkKey,
        record: &MessageRecord,
        max_times: i32,
    ) -> Result<PutMessage, String> {
        let core = &self.core;
        let normal = parse_normal_topic(&key.topic, &key.group).to_owned();
        let reconsume = record.head.reconsume_times;
        let to_dlq = reconsume >= max_times;
        let topic = if to_dlq {
            let dlq = names::dlq_topic(&key.group).map_err(|e| e.to_string())?;
            core.topics
                .auto_create(&dlq, 1, perm::READ | perm::WRITE)
                .map_err(|e| e.to_string())?;
            tracing::info!(event = "MESSAGE_TO_DLQ", group = %key.group, topic = %normal, reconsume, "popped message past its retries goes to the DLQ");
            dlq
        } else {
            let retry = if key.topic.starts_with(RETRY_PREFIX) {
                key.topic.clone()
            } else {
                pop_retry_topic(&key.topic, &key.group).map_err(|e| e.to_string())?
            };
            core.topics
                .auto_create(&retry, 1, perm::READ | perm::WRITE)
                .map_err(|e| e.to_string())?;
            if core.offsets.query(&key.group, &retry, 0).is_none() {
                core.offsets.commit(&key.group, &retry, 0, 0);
            }
            retry
        };
        let mut props = record.properties.clone();
        if reconsume == 0 || !props.contains(property::FIRST_POP_TIME) {
            props.insert(property::FIRST_POP_TIME, key.pop_time.to_string());
        }
        if !props.contains(property::RETRY_TOPIC) {
            props.insert(property::RETRY_TOPIC, normal);
        }
        if !props.contains(property::ORIGIN_MESSAGE_ID) {
            let id = props
                .get(property::UNIQ_KEY)
                .map(str::to_owned)
                .unwrap_or_else(|| record.msg_id());
            props.insert(property::ORIGIN_MESSAGE_ID, id);
        }
        props.remove(property::POP_CK);
        Ok(PutMessage {
            topic,
            queue_id: 0,
            flag: record.head.flag,
            body: record.body.clone(),
            properties: props.encode(),
            sys_flag: record.head.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6),
            born_timestamp: record.head.born_timestamp,
            born_host: core.identity.store_host,
            store_host: core.identity.store_host,
            reconsume_times: reconsume + 1,
            prepared_transaction_offset: 0,
            wait_store_ok: false,
        })
    }

    /// Saves each revive queue's progress: its oldest batch in flight, or its end.
    pub fn save_progress(&self) {
        let core = &self.core;
        for qid in 0..core.revive_queue_num {
            let offset = core
                .checkpoints
                .min_revive_offset(qid)
                .unwrap_or_else(|| core.store.max_offset_in_queue(&core.revive_topic, qid));
            core.offsets
                .commit(REVIVE_GROUP, &core.revive_topic, qid, offset);
        }
    }
}
