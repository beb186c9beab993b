//! CHANGE_MESSAGE_INVISIBLETIME (RocketMQ 5.1's `ChangeInvisibleTimeProcessor`): the message
//! gets a checkpoint of its own, popped now with the new invisible time, and the old one is
//! acked; the answer's pop time, invisible time and revive queue make the new handle.
//! Both records are in the revive log before the answer. A handle whose invisible time
//! passed (or that no batch in flight holds) is refused with NO_MESSAGE, as acks are.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::pop::{AckMsg, PopCheckPoint};
use stellmq_remoting::protocol::headers::{
    ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader, CommandHeader,
};
use stellmq_remoting::protocol::pop::ExtraInfo;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::checkpoint::{AckOutcome, Checkpoint, CkKey};
use super::handle::{resolve_handle, HandleRequest};
use super::order::{OrderAck, OrderKey};
use super::{expired, unknown_handle, PopCore, ACK_TAG, CK_TAG};
use crate::processor::header;

pub struct ChangeInvisibleProcessor {
    pub core: Arc<PopCore>,
}

impl ChangeInvisibleProcessor {
    pub(crate) async fn change(
        self: Arc<Self>,
        ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: ChangeInvisibleTimeRequestHeader = header(&request)?;
        let core = &self.core;
        if let Some(e) = core.broker_forbidden("change invisible time") {
            return Err(e);
        }
        if h.invisible_time < 0 {
            return Err(ProcessorError::system(format!(
                "invisibleTime must not be negative, not {}",
                h.invisible_time
            )));
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
        let now = core.clock.now_ms();
        let (pop_time, invisible_time) = if extra.is_order() {
            self.change_orderly(&h, &extra, &real_topic, now)?
        } else {
            // The new checkpoint's pop time, which may be past `now` when another
            // checkpoint of the message already holds that millisecond: the new handle
            // must name it.
            let pop_time = self
                .change_normal(&ctx, &h, &extra, real_topic, now)
                .await?;
            (pop_time, h.invisible_time)
        };
        Ok(Some(
            request.success_to().with_ext_fields(
                ChangeInvisibleTimeResponseHeader {
                    pop_time,
                    invisible_time,
                    revive_qid: extra.revive_qid,
                }
                .to_ext_fields(),
            ),
        ))
    }

    fn change_orderly(
        &self,
        h: &ChangeInvisibleTimeRequestHeader,
        extra: &ExtraInfo,
        topic: &str,
        now: i64,
    ) -> Result<(i64, i64), ProcessorError> {
        let key = OrderKey {
            topic: topic.to_owned(),
            group: h.consumer_group.clone(),
            queue_id: h.queue_id,
        };
        let visible_at = now.saturating_add(h.invisible_time);
        match self
            .core
            .orders
            .change_invisible(&key, h.offset, extra.pop_time, now, visible_at)
        {
            OrderAck::Next(_) => Ok((extra.pop_time, visible_at.saturating_sub(extra.pop_time))),
            OrderAck::Expired => Err(expired(&h.extra_info)),
            OrderAck::Stale => Err(unknown_handle(&h.extra_info)),
        }
    }

    async fn change_normal(
        &self,
        ctx: &RequestContext,
        h: &ChangeInvisibleTimeRequestHeader,
        extra: &ExtraInfo,
        topic: String,
        now: i64,
    ) -> Result<i64, ProcessorError> {
        let core = &self.core;
        let old = CkKey {
            group: h.consumer_group.clone(),
            topic: topic.clone(),
            queue_id: h.queue_id,
            start_offset: extra.ck_queue_offset,
            pop_time: extra.pop_time,
        };
        let revive_qid = match core.checkpoints.mark(&old, h.offset, now) {
            AckOutcome::Marked { revive_qid } => revive_qid,
            AckOutcome::AlreadyAcked => {
                return Err(ProcessorError::new(
                    ResponseCode::NO_MESSAGE,
                    format!(
                        "the message of receipt handle [{}] is acked already",
                        h.extra_info
                    ),
                ))
            }
            AckOutcome::Expired => return Err(expired(&h.extra_info)),
            AckOutcome::Unknown if extra.deadline() <= now => return Err(expired(&h.extra_info)),
            AckOutcome::Unknown => return Err(unknown_handle(&h.extra_info)),
        };
        let mut new = CkKey {
            group: h.consumer_group.clone(),
            topic: topic.clone(),
            queue_id: h.queue_id,
            start_offset: h.offset,
            pop_time: now,
        };
        // A change in the millisecond of the POP (or of another change) would name the
        // same checkpoint: the new one takes the next free millisecond.
        while core.checkpoints.get(&new).is_some() {
            new.pop_time += 1;
        }
        let now = new.pop_time;
        let lower_bound = core
            .store
            .max_offset_in_queue(&core.revive_topic, revive_qid);
        let inserted = core.checkpoints.insert(
            new.clone(),
            Checkpoint {
                offsets: vec![h.offset],
                acked: 0,
                invisible_time: h.invisible_time,
                revive_qid,
                revive_offset: lower_bound,
            },
        );
        if inserted.is_err() {
            core.checkpoints.unmark(&old, h.offset);
            return Err(ProcessorError::new(
                ResponseCode::SYSTEM_BUSY,
                "[POP_INFLIGHT_FULL] too many POP batches in flight on this broker (popMaxInflightCheckpoints)",
            ));
        }
        let ck = PopCheckPoint {
            start_offset: h.offset,
            pop_time: now,
            invisible_time: h.invisible_time,
            bit_map: 0,
            num: 1,
            queue_id: h.queue_id,
            topic: topic.clone(),
            cid: h.consumer_group.clone(),
            revive_offset: 0,
            queue_offset_diff: vec![0],
            broker_name: Some(extra.broker_name.clone()),
        };
        let uniq = format!(
            "{topic}@{}@{}@{}@{now}@{}@{CK_TAG}",
            h.queue_id, h.offset, h.consumer_group, extra.broker_name
        );
        match core
            .append_revive(Some(ctx), revive_qid, CK_TAG, uniq, fastjson::encode(&ck))
            .await
        {
            Ok(at) => core.checkpoints.set_revive_offset(&new, at),
            Err(e) => {
                core.checkpoints.remove(&new);
                core.checkpoints.unmark(&old, h.offset);
                return Err(e);
            }
        }
        let ack = AckMsg {
            ack_offset: h.offset,
            start_offset: extra.ck_queue_offset,
            consumer_group: h.consumer_group.clone(),
            topic: topic.clone(),
            queue_id: h.queue_id,
            pop_time: extra.pop_time,
            broker_name: Some(extra.broker_name.clone()),
            ack_offset_list: Vec::new(),
        };
        let uniq = format!(
            "{topic}@{}@{}@{}@{}@{}@{ACK_TAG}",
            h.queue_id, h.offset, h.consumer_group, extra.pop_time, extra.broker_name
        );
        if let Err(e) = core
            .append_revive(Some(ctx), revive_qid, ACK_TAG, uniq, fastjson::encode(&ack))
            .await
        {
            // As RocketMQ: the new checkpoint stands; after a crash the old one may revive
            // the message once more.
            tracing::warn!(remark = %e.remark, "change invisible time: the ack of the old handle was not written");
        }
        core.checkpoints.settle(&old);
        Ok(now)
    }
}
