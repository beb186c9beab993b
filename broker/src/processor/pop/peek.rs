//! PEEK_MESSAGE (read from the group's POP offsets without popping), NOTIFICATION (is there
//! something to pop? held like a POP until there is) and POLLING_INFO (how many POPs wait).

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::headers::{
    CommandHeader, NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader,
    PollingInfoRequestHeader, PollingInfoResponseHeader, PopMessageResponseHeader,
};
use stellmq_remoting::protocol::pop::{pop_retry_topic, MAX_POP_MESSAGES};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::{AcceptAll, GetMessageStatus};

use super::hold::{Parking, PopHoldService};
use super::message::{with_born_time, Popped};
use super::order::OrderKey;
use super::PopCore;
use crate::processor::header;

pub struct PeekProcessor {
    pub core: Arc<PopCore>,
    pub hold: Arc<PopHoldService>,
}

/// The group's POP offset of a queue, without committing a new group's start.
fn offset_of(core: &PopCore, group: &str, topic: &str, queue_id: i32) -> i64 {
    core.offsets
        .query(group, topic, queue_id)
        .filter(|o| *o >= 0)
        .unwrap_or_else(|| core.store.min_offset_in_queue(topic, queue_id).max(0))
}

/// Whether a POP of `group` on `topic` (queue `queue_id`, -1 any) or its retry topic would
/// find a message past the group's offsets; an orderly POP's blocked queues do not count.
pub(super) fn has_new(
    core: &PopCore,
    group: &str,
    topic: &str,
    queue_id: i32,
    order: Option<Option<&str>>,
) -> bool {
    let now = core.clock.now_ms();
    let queue_has = |t: &str, q: i32| {
        let blocked = order.is_some_and(|attempt| {
            core.orders.blocked(
                &OrderKey {
                    topic: t.to_owned(),
                    group: group.to_owned(),
                    queue_id: q,
                },
                attempt,
                now,
            )
        });
        !blocked && core.store.max_offset_in_queue(t, q) > offset_of(core, group, t, q)
    };
    let queues = |t: &str| core.topics.get(t).map_or(0, |c| c.read_queue_nums.max(0));
    let in_topic = if queue_id >= 0 {
        queue_has(topic, queue_id)
    } else {
        (0..queues(topic)).any(|q| queue_has(topic, q))
    };
    if in_topic || order.is_some() {
        return in_topic;
    }
    match pop_retry_topic(topic, group) {
        Ok(retry) => (0..queues(&retry)).any(|q| queue_has(&retry, q)),
        Err(_) => false,
    }
}

/// Runs a NOTIFICATION once.
pub(super) fn run_notification(
    core: &PopCore,
    request: &RemotingCommand,
) -> Result<Popped, ProcessorError> {
    let h: NotificationRequestHeader = header(request)?;
    if let Some(e) = core.broker_forbidden("peeking message") {
        return Err(e);
    }
    core.readable_topic(&h.topic, h.queue_id, true)?;
    core.consumable_group(&h.consumer_group)?;
    let order = h.order.unwrap_or(false).then_some(h.attempt_id.as_deref());
    let has_msg = has_new(core, &h.consumer_group, &h.topic, h.queue_id, order);
    let now = core.clock.now_ms();
    let born = h.born_time.unwrap_or(now);
    let deadline = born
        .saturating_add(h.poll_time)
        .min(now.saturating_add(core.settings.get().long_polling_max_suspend_millis as i64));
    if !has_msg && h.poll_time > 0 && now < deadline {
        let retry_topic =
            pop_retry_topic(&h.topic, &h.consumer_group).map_err(super::guard::refusal)?;
        return Ok(Popped::Park(Parking {
            topic: h.topic,
            retry_topic,
            group: h.consumer_group,
            queue_id: h.queue_id,
            deadline_ms: deadline,
            notification: true,
            order: h.order.unwrap_or(false),
            attempt_id: h.attempt_id,
        }));
    }
    Ok(Popped::Answer(
        request
            .response_to(ResponseCode::SUCCESS, None)
            .with_ext_fields(NotificationResponseHeader { has_msg }.to_ext_fields()),
    ))
}

impl PeekProcessor {
    /// NOTIFICATION: answered now, or held until a message arrives or its poll time ends.
    pub(crate) async fn notification(
        self: Arc<Self>,
        ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let request = with_born_time(&self.core, request);
        match run_notification(&self.core, &request)? {
            Popped::Answer(response) => Ok(Some(response)),
            Popped::Park(parking) => Ok(self.hold.park(&self.core, ctx, request, parking)),
        }
    }

    /// POLLING_INFO: POPs of the group waiting on the queue.
    pub(crate) fn polling_info(
        &self,
        _ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: PollingInfoRequestHeader = header(&request)?;
        if let Some(e) = self.core.broker_forbidden("peeking message") {
            return Err(e);
        }
        self.core.readable_topic(&h.topic, h.queue_id, false)?;
        self.core.consumable_group(&h.consumer_group)?;
        let n = self
            .hold
            .polling_num(&h.topic, &h.consumer_group, h.queue_id);
        Ok(Some(
            request.success_to().with_ext_fields(
                PollingInfoResponseHeader {
                    polling_num: i32::try_from(n).unwrap_or(i32::MAX),
                }
                .to_ext_fields(),
            ),
        ))
    }

    /// PEEK_MESSAGE: up to `maxMsgNums` messages from the group's POP offsets (the topic's
    /// queues, then its retry topic), nothing popped or committed.
    pub(crate) fn peek(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessResult {
        let h: PeekMessageRequestHeader = header(&request)?;
        let core = &self.core;
        if let Some(e) = core.broker_forbidden("peek message") {
            return Err(e);
        }
        if h.max_msg_nums > MAX_POP_MESSAGES || h.max_msg_nums <= 0 {
            return Err(ProcessorError::system(format!(
                "the broker[{}] peek message's num must be 1 to 32, not {}",
                core.identity.broker_addr, h.max_msg_nums
            )));
        }
        let topic = core.readable_topic(&h.topic, h.queue_id, true)?;
        core.consumable_group(&h.consumer_group)?;
        let retry = pop_retry_topic(&h.topic, &h.consumer_group).map_err(super::guard::refusal)?;
        let mut queues: Vec<(String, i32)> = if h.queue_id >= 0 {
            vec![(h.topic.clone(), h.queue_id)]
        } else {
            (0..topic.read_queue_nums)
                .map(|q| (h.topic.clone(), q))
                .collect()
        };
        let retry_queues = core.topics.get(&retry).map_or(0, |c| c.read_queue_nums);
        queues.extend((0..retry_queues).map(|q| (retry.clone(), q)));
        let max = h.max_msg_nums as usize;
        let (mut body, mut count, mut rest) = (Vec::new(), 0usize, 0i64);
        for (t, q) in queues {
            let offset = offset_of(core, &h.consumer_group, &t, q);
            if count >= max {
                rest += (core.store.max_offset_in_queue(&t, q) - offset).max(0);
                continue;
            }
            let result = core
                .store
                .get_messages(&t, q, offset, max - count, &AcceptAll);
            rest += (result.max_offset - result.next_begin_offset).max(0);
            for m in &result.messages {
                body.extend_from_slice(m);
            }
            count += result.messages.len();
        }
        let fields = PopMessageResponseHeader {
            rest_num: rest,
            ..Default::default()
        }
        .to_ext_fields();
        let (code, status) = if count > 0 {
            (ResponseCode::SUCCESS, GetMessageStatus::Found)
        } else {
            (
                ResponseCode::PULL_NOT_FOUND,
                GetMessageStatus::NoMessageInQueue,
            )
        };
        let response = request
            .response_to(code, Some(status.name().to_owned()))
            .with_ext_fields(fields);
        Ok(Some(if count > 0 {
            response.with_body(body)
        } else {
            response
        }))
    }
}
