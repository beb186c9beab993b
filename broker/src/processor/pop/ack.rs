//! ACK_MESSAGE and BATCH_ACK_MESSAGE (RocketMQ 5.1's `AckMessageProcessor`).
//!
//! An ack marks the message in its checkpoint and writes an ack record (`AckMsg`, tag `ack`;
//! `BatchAckMsg`, tag `bAck`) to the checkpoint's revive queue before it is answered, so an
//! answered ack survives a restart. Unlike RocketMQ 5.1 (which writes the ack and answers
//! SUCCESS whatever the handle), an ack whose invisible time passed, or that no batch in
//! flight holds, is refused with NO_MESSAGE and a remark saying why: the message is (or
//! will be) delivered again. Acking twice is SUCCESS. Orderly handles move the group's
//! offset instead (`order.rs`).

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::pop::{AckMsg, BatchAckMessageRequestBody};
use stellmq_remoting::protocol::headers::AckMessageRequestHeader;
use stellmq_remoting::protocol::names::RETRY_PREFIX;
use stellmq_remoting::protocol::pop::{TopicType, POP_ORDER_REVIVE_QUEUE};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::checkpoint::{AckOutcome, CkKey};
use super::handle::{resolve_handle, HandleRequest};
use super::hold::PopHoldService;
use super::order::{OrderAck, OrderKey};
use super::{expired, unknown_handle, PopCore, QueueLocks, ACK_TAG, BATCH_ACK_TAG};
use crate::processor::{guard, header};
use stellmq_remoting::protocol::names::NameKind;

/// Acks one BATCH_ACK_MESSAGE may carry.
const MAX_BATCH_ACKS: usize = 1024;
/// Acked messages one BATCH_ACK_MESSAGE may name, in all its bit sets.
const MAX_BATCH_ACKED: usize = 32 * 1024;

pub struct AckProcessor {
    pub core: Arc<PopCore>,
    pub hold: Arc<PopHoldService>,
}

/// One message to ack, however it was named.
struct AckTarget<'a> {
    group: &'a str,
    /// The topic read (the POP retry topic for retries).
    topic: String,
    queue_id: i32,
    offset: i64,
    ck_start: i64,
    pop_time: i64,
    order: bool,
    /// For remarks.
    handle: String,
}

impl AckProcessor {
    /// ACK_MESSAGE.
    pub(crate) async fn ack(
        self: Arc<Self>,
        ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: AckMessageRequestHeader = header(&request)?;
        let core = &self.core;
        if let Some(e) = core.broker_forbidden("ack message") {
            return Err(e);
        }
        let request_of = HandleRequest {
            topic: &h.topic,
            group: &h.consumer_group,
            queue_id: h.queue_id,
            offset: h.offset,
            extra_info: &h.extra_info,
            lite_topic: h.lite_topic.as_deref(),
        };
        let (extra, real_topic) = resolve_handle(core, &request_of, ctx.channel.peer())?;
        let target = AckTarget {
            group: &h.consumer_group,
            topic: real_topic,
            queue_id: h.queue_id,
            offset: h.offset,
            ck_start: extra.ck_queue_offset,
            pop_time: extra.pop_time,
            order: extra.is_order(),
            handle: h.extra_info.clone(),
        };
        if target.order {
            self.ack_orderly(&target).await?;
            return Ok(Some(request.success_to()));
        }
        let revive_qid = mark(core, &target, extra.deadline())?;
        let Some(revive_qid) = revive_qid else {
            return Ok(Some(request.success_to()));
        };
        let key = ck_key(&target);
        let record = AckMsg {
            ack_offset: h.offset,
            start_offset: extra.ck_queue_offset,
            consumer_group: h.consumer_group.clone(),
            topic: target.topic.clone(),
            queue_id: h.queue_id,
            pop_time: extra.pop_time,
            broker_name: Some(extra.broker_name.clone()),
            ack_offset_list: Vec::new(),
        };
        let uniq = format!(
            "{}@{}@{}@{}@{}@{}@{ACK_TAG}",
            target.topic, h.queue_id, h.offset, h.consumer_group, extra.pop_time, extra.broker_name
        );
        match core
            .append_revive(
                Some(&ctx),
                revive_qid,
                ACK_TAG,
                uniq,
                fastjson::encode(&record),
            )
            .await
        {
            Ok(_) => {
                core.checkpoints.settle(&key);
                Ok(Some(request.success_to()))
            }
            Err(e) => {
                core.checkpoints.unmark(&key, h.offset);
                Err(e)
            }
        }
    }

    /// BATCH_ACK_MESSAGE: every ack of the body; refused ones are counted in the remark.
    pub(crate) async fn batch_ack(
        self: Arc<Self>,
        ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let core = &self.core;
        if let Some(e) = core.broker_forbidden("ack message") {
            return Err(e);
        }
        let body: BatchAckMessageRequestBody = if request.body.is_empty() {
            BatchAckMessageRequestBody::default()
        } else {
            fastjson::decode(&request.body)?
        };
        if body.acks.is_empty() {
            return Err(ProcessorError::new(
                ResponseCode::NO_MESSAGE,
                "the batch ack carries no acks",
            ));
        }
        if body.acks.len() > MAX_BATCH_ACKS {
            return Err(ProcessorError::system(format!(
                "a batch ack carries at most {MAX_BATCH_ACKS} acks, not {}",
                body.acks.len()
            )));
        }
        let mut named = 0usize;
        for ack in &body.acks {
            guard::check_name(NameKind::Group, &ack.consumer_group)?;
            guard::check_name(NameKind::Topic, &ack.topic)?;
            named += ack.bit_set.indexes().count();
        }
        if named > MAX_BATCH_ACKED {
            return Err(ProcessorError::system(format!(
                "a batch ack names at most {MAX_BATCH_ACKED} messages, not {named}"
            )));
        }
        let (mut refused, mut first_refusal) = (0usize, None);
        let mut total = 0usize;
        for ack in &body.acks {
            let retry = TopicType::parse(&ack.retry).unwrap_or(TopicType::Normal);
            let topic = if ack.topic.starts_with(RETRY_PREFIX) {
                ack.topic.clone()
            } else {
                retry.real_topic(&ack.topic, &ack.consumer_group)
            };
            let offsets: Vec<i64> = ack
                .bit_set
                .indexes()
                .map(|i| ack.start_offset.saturating_add(i as i64))
                .collect();
            total += offsets.len();
            let handle = format!(
                "{} {} {} {} {} batch",
                ack.start_offset,
                ack.pop_time,
                ack.invisible_time,
                ack.revive_queue_id,
                retry.as_str()
            );
            let result = self
                .ack_batch_entry(&ctx, ack, topic, offsets, handle)
                .await;
            if let Err((n, e)) = result {
                refused += n;
                first_refusal.get_or_insert(e);
            }
        }
        match first_refusal {
            None => Ok(Some(request.success_to())),
            Some(e) => Err(ProcessorError::new(
                e.code,
                format!("{refused} of {total} acks refused; the first: {}", e.remark),
            )),
        }
    }

    /// One `BatchAck`; on refusals, how many and the first reason.
    async fn ack_batch_entry(
        &self,
        ctx: &RequestContext,
        ack: &stellmq_remoting::protocol::body::pop::BatchAck,
        topic: String,
        offsets: Vec<i64>,
        handle: String,
    ) -> Result<(), (usize, ProcessorError)> {
        let core = &self.core;
        let all = offsets.len();
        if let Err(e) = core.readable_topic(&topic, ack.queue_id, false) {
            return Err((all, e));
        }
        let deadline = ack.pop_time.saturating_add(ack.invisible_time);
        let mut marked = Vec::new();
        let mut revive_qid = None;
        let (mut refused, mut first) = (0usize, None);
        for offset in offsets {
            let target = AckTarget {
                group: &ack.consumer_group,
                topic: topic.clone(),
                queue_id: ack.queue_id,
                offset,
                ck_start: ack.start_offset,
                pop_time: ack.pop_time,
                order: ack.revive_queue_id == POP_ORDER_REVIVE_QUEUE,
                handle: handle.clone(),
            };
            let outcome = if target.order {
                self.ack_orderly(&target).await.map(|()| None)
            } else {
                mark(core, &target, deadline)
            };
            match outcome {
                Ok(Some(qid)) => {
                    revive_qid = Some(qid);
                    marked.push(offset);
                }
                Ok(None) => {}
                Err(e) => {
                    refused += 1;
                    first.get_or_insert(e);
                }
            }
        }
        if let Some(qid) = revive_qid {
            let key = CkKey {
                group: ack.consumer_group.clone(),
                topic: topic.clone(),
                queue_id: ack.queue_id,
                start_offset: ack.start_offset,
                pop_time: ack.pop_time,
            };
            let record = AckMsg {
                ack_offset: -1,
                start_offset: ack.start_offset,
                consumer_group: ack.consumer_group.clone(),
                topic: topic.clone(),
                queue_id: ack.queue_id,
                pop_time: ack.pop_time,
                broker_name: Some(core.identity.broker_name.clone()),
                ack_offset_list: marked.clone(),
            };
            let uniq = format!(
                "{topic}@{}@{marked:?}@{}@{}@{BATCH_ACK_TAG}",
                ack.queue_id, ack.consumer_group, ack.pop_time
            );
            match core
                .append_revive(
                    Some(ctx),
                    qid,
                    BATCH_ACK_TAG,
                    uniq,
                    fastjson::encode(&record),
                )
                .await
            {
                Ok(_) => core.checkpoints.settle(&key),
                Err(e) => {
                    for offset in &marked {
                        core.checkpoints.unmark(&key, *offset);
                    }
                    return Err((refused + marked.len(), e));
                }
            }
        }
        match first {
            None => Ok(()),
            Some(e) => Err((refused, e)),
        }
    }

    /// An orderly ack: the group's offset moves past the acked prefix of the batch.
    async fn ack_orderly(&self, t: &AckTarget<'_>) -> Result<(), ProcessorError> {
        let core = &self.core;
        let key = OrderKey {
            topic: t.topic.clone(),
            group: t.group.to_owned(),
            queue_id: t.queue_id,
        };
        let _lock = core
            .locks
            .lock(QueueLocks::key(&t.topic, t.group, t.queue_id))
            .await;
        let current = core
            .offsets
            .query(t.group, &t.topic, t.queue_id)
            .unwrap_or(0);
        if t.offset < current {
            return Ok(()); // consumed already, as RocketMQ answers
        }
        match core
            .orders
            .ack(&key, t.offset, t.pop_time, core.clock.now_ms())
        {
            OrderAck::Next(next) => {
                if next > current {
                    core.offsets.commit(t.group, &t.topic, t.queue_id, next);
                }
                let normal = stellmq_remoting::protocol::pop::parse_normal_topic(&t.topic, t.group);
                self.hold.wake(normal, t.queue_id);
                if t.topic
                    .starts_with(stellmq_remoting::protocol::lite::LITE_TOPIC_PREFIX)
                {
                    for key in super::lite::after_ack(core, t.group, &t.topic) {
                        self.hold.wake(&key, -1);
                    }
                }
                Ok(())
            }
            OrderAck::Expired => Err(expired(&t.handle)),
            OrderAck::Stale => Err(unknown_handle(&t.handle)),
        }
    }
}

/// The checkpoint key an ack names.
fn ck_key(t: &AckTarget<'_>) -> CkKey {
    CkKey {
        group: t.group.to_owned(),
        topic: t.topic.clone(),
        queue_id: t.queue_id,
        start_offset: t.ck_start,
        pop_time: t.pop_time,
    }
}

/// Marks one message acked: `Some(revive queue)` when an ack record must be written,
/// `None` when it was acked before.
fn mark(core: &PopCore, t: &AckTarget<'_>, deadline: i64) -> Result<Option<i32>, ProcessorError> {
    let now = core.clock.now_ms();
    match core.checkpoints.mark(&ck_key(t), t.offset, now) {
        AckOutcome::Marked { revive_qid } => Ok(Some(revive_qid)),
        AckOutcome::AlreadyAcked => Ok(None),
        AckOutcome::Expired => Err(expired(&t.handle)),
        AckOutcome::Unknown if deadline <= now => Err(expired(&t.handle)),
        AckOutcome::Unknown => Err(unknown_handle(&t.handle)),
    }
}
