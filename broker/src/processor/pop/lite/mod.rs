//! RocketMQ 5.5's lite topics on the consuming side (docs/lite.md): LITE_SUBSCRIPTION_CTL
//! keeps who subscribed to which lite topics ([`registry`]), POP_LITE_MESSAGE serves a
//! client the lite topics with news, each lite topic in order (one batch in flight per
//! group and lite topic, as an orderly POP of its light message queue), and acks and
//! invisible-time changes name the lite topic (`liteTopic` header).
//!
//! A lite topic's news reaches one client of each subscribed group (an event); a POP reads
//! its events first and, finding none, every lite topic the client subscribed to, so a
//! message whose invisible time ran out is served again at the client's next POP.

pub mod admin;
pub mod ctl;
pub mod lifecycle;
pub mod registry;

use std::sync::Arc;

use bytes::Bytes;
use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::{SubscriptionGroupConfig, MESSAGE_TYPE_ATTRIBUTE};
use stellmq_remoting::protocol::headers::{
    CommandHeader, PopLiteMessageRequestHeader, PopLiteMessageResponseHeader,
};
use stellmq_remoting::protocol::lite::{split_lmq_name, LMQ_QUEUE_ID};
use stellmq_remoting::protocol::message::MessageKind;
use stellmq_remoting::protocol::pop::{MAX_POP_MESSAGES, POP_ORDER_REVIVE_QUEUE};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::{AcceptAll, GetMessageStatus};

use super::hold::{Parking, PopHoldService};
use super::message::{pop_offset, with_born_time, Popped, INIT_MODE_MAX};
use super::order::OrderKey;
use super::{PopCore, QueueLocks};
use crate::processor::header;

pub use registry::LiteRegistry;

/// The group attribute naming the parent topic a lite group consumes (`lite.bind.topic`).
pub const LITE_BIND_TOPIC_ATTRIBUTE: &str = "lite.bind.topic";

/// `PopLiteMessageRequestHeader.isTimeoutTooMuch`.
const TIMEOUT_TOO_MUCH_MS: i64 = 500;

/// Where a lite client's POPs wait in the POP hold (its own key: no topic has it).
pub fn parking_key(client_id: &str) -> String {
    format!("%LITE_CLIENT%{client_id}")
}

pub struct LitePopProcessor {
    pub core: Arc<PopCore>,
    pub hold: Arc<PopHoldService>,
}

impl LitePopProcessor {
    /// POP_LITE_MESSAGE: answered now, or held until one of its lite topics has news.
    pub(crate) async fn pop(
        self: Arc<Self>,
        ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let request = with_born_time(&self.core, request);
        match run(&self.core, &request)? {
            Popped::Answer(response) => Ok(Some(response)),
            Popped::Park(parking) => {
                let client = parking.topic.clone();
                let answer = self.hold.park(&self.core, ctx, request, parking);
                // News that came between the look and the parking.
                if answer.is_none() && self.core.lite.has_events(lite_client(&client)) {
                    self.hold.wake(&client, -1);
                }
                Ok(answer)
            }
        }
    }
}

/// The client id of a [`parking_key`].
fn lite_client(key: &str) -> &str {
    key.strip_prefix("%LITE_CLIENT%").unwrap_or(key)
}

/// The checks of RocketMQ's `PopLiteMessageProcessor`, in its order; the group.
fn check(
    core: &PopCore,
    h: &PopLiteMessageRequestHeader,
    now: i64,
) -> Result<SubscriptionGroupConfig, ProcessorError> {
    if now.saturating_sub(h.born_time).saturating_sub(h.poll_time) > TIMEOUT_TOO_MUCH_MS {
        return Err(ProcessorError::new(
            ResponseCode::POLLING_TIMEOUT,
            format!(
                "the broker[{}] pop message is timeout too much",
                core.identity.broker_addr
            ),
        ));
    }
    if let Some(e) = core.broker_forbidden("pop lite message") {
        return Err(e);
    }
    if h.max_msg_num <= 0 || h.max_msg_num > MAX_POP_MESSAGES {
        return Err(ProcessorError::new(
            ResponseCode::INVALID_PARAMETER,
            format!(
                "the broker[{}] pop message's num must be 1 to 32, not {}",
                core.identity.broker_addr, h.max_msg_num
            ),
        ));
    }
    if h.invisible_time < 0 || h.poll_time < 0 {
        return Err(ProcessorError::new(
            ResponseCode::INVALID_PARAMETER,
            "invisibleTime and pollTime must not be negative",
        ));
    }
    let topic = core.readable_topic(&h.topic, -1, true)?;
    if topic
        .attributes
        .get(MESSAGE_TYPE_ATTRIBUTE)
        .map(String::as_str)
        != Some(MessageKind::Lite.name())
    {
        return Err(ProcessorError::new(
            ResponseCode::INVALID_PARAMETER,
            format!("the topic [{}] message type not match", h.topic),
        ));
    }
    let group = core.existing_group(&h.consumer_group)?;
    if group.attributes.get(LITE_BIND_TOPIC_ATTRIBUTE) != Some(&h.topic) {
        return Err(ProcessorError::new(
            ResponseCode::INVALID_PARAMETER,
            format!("subscription bind topic not match, {}", h.consumer_group),
        ));
    }
    Ok(group)
}

/// What one POP_LITE_MESSAGE gathered.
#[derive(Default)]
struct Gathered {
    records: Vec<Bytes>,
    /// Each message's earlier deliveries, in body order.
    counts: Vec<i32>,
    bytes: usize,
}

/// Runs a POP_LITE_MESSAGE once.
pub(super) fn run(core: &PopCore, request: &RemotingCommand) -> Result<Popped, ProcessorError> {
    let h: PopLiteMessageRequestHeader = header(request)?;
    let now = core.clock.now_ms();
    check(core, &h, now)?;
    let Some(sub) = core
        .lite
        .subscription(&h.client_id)
        .filter(|s| s.group == h.consumer_group && s.parent == h.topic)
    else {
        tracing::debug!(client = %h.client_id, group = %h.consumer_group, "POP_LITE_MESSAGE of a client with no lite subscription here");
        return Ok(nothing_found(core, request, &h, now));
    };
    core.lite.touch(&h.client_id, now);
    let mut got = Gathered::default();
    let wanted = h.max_msg_num as usize;
    let mut seen = std::collections::HashSet::new();
    while got.records.len() < wanted {
        let Some(lmq) = core.lite.next_event(&h.client_id) else {
            break;
        };
        if sub.lmqs.contains(&lmq) && seen.insert(lmq.clone()) {
            pop_lmq(core, &h, &lmq, now, &mut got);
        }
    }
    if got.records.is_empty() {
        // No news: every lite topic of the client (what ran out of its invisible time,
        // what an event queue full or a restart lost).
        for lmq in &sub.lmqs {
            if got.records.len() >= wanted {
                break;
            }
            if seen.insert(lmq.clone()) {
                pop_lmq(core, &h, lmq, now, &mut got);
            }
        }
    }
    tracing::debug!(client = %h.client_id, group = %h.consumer_group, subscribed = sub.lmqs.len(), found = got.records.len(), "POP_LITE_MESSAGE");
    if got.records.is_empty() {
        return Ok(nothing_found(core, request, &h, now));
    }
    let fields = PopLiteMessageResponseHeader {
        pop_time: now,
        invisible_time: h.invisible_time,
        revive_qid: POP_ORDER_REVIVE_QUEUE,
        start_offset_info: None,
        msg_offset_info: None,
        order_count_info: Some(
            got.counts
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(";"),
        ),
    };
    core.traffic.metrics.record_out(
        &h.topic,
        &h.consumer_group,
        got.records.len() as u64,
        got.bytes as u64,
    );
    let mut body = Vec::with_capacity(got.bytes);
    for r in &got.records {
        body.extend_from_slice(r);
    }
    Ok(Popped::Answer(
        request
            .response_to(ResponseCode::SUCCESS, Some("FOUND".to_owned()))
            .with_ext_fields(fields.to_ext_fields())
            .with_body(body),
    ))
}

/// Nothing found: held until news or the poll time, or answered POLLING_TIMEOUT.
fn nothing_found(
    core: &PopCore,
    request: &RemotingCommand,
    h: &PopLiteMessageRequestHeader,
    now: i64,
) -> Popped {
    let deadline = h
        .born_time
        .saturating_add(h.poll_time)
        .min(now.saturating_add(core.settings.get().long_polling_max_suspend_millis as i64));
    if h.poll_time > 0 && now < deadline {
        let key = parking_key(&h.client_id);
        return Popped::Park(Parking {
            topic: key.clone(),
            retry_topic: key,
            group: h.consumer_group.clone(),
            queue_id: -1,
            deadline_ms: deadline,
            notification: false,
            order: false,
            attempt_id: h.attempt_id.clone(),
        });
    }
    Popped::Answer(request.response_to(
        ResponseCode::POLLING_TIMEOUT,
        Some("NO_MESSAGE_IN_QUEUE".to_owned()),
    ))
}

/// Pops what the group may have of one lite topic: nothing while a batch of it is in
/// flight, else from the group's offset on, as an orderly POP does.
fn pop_lmq(
    core: &PopCore,
    h: &PopLiteMessageRequestHeader,
    lmq: &str,
    pop_time: i64,
    got: &mut Gathered,
) {
    let group = &h.consumer_group;
    let Some(_lock) = core
        .locks
        .try_lock(QueueLocks::key(lmq, group, LMQ_QUEUE_ID))
    else {
        return;
    };
    let key = OrderKey {
        topic: lmq.to_owned(),
        group: group.clone(),
        queue_id: LMQ_QUEUE_ID,
    };
    if core.orders.blocked(&key, h.attempt_id.as_deref(), pop_time) || !core.orders.has_room(&key) {
        return;
    }
    let mut offset = pop_offset(core, group, lmq, LMQ_QUEUE_ID, Some(INIT_MODE_MAX));
    // Nothing new: answered from the queue's bounds, without opening an idle queue's file
    // (a POP looking at thousands of lite topics must not map them all).
    if offset >= core.store.max_offset_in_queue(lmq, LMQ_QUEUE_ID) {
        return;
    }
    let wanted = (h.max_msg_num as usize).saturating_sub(got.records.len());
    let mut result = core
        .store
        .get_messages(lmq, LMQ_QUEUE_ID, offset, wanted, &AcceptAll);
    if matches!(
        result.status,
        GetMessageStatus::OffsetTooSmall
            | GetMessageStatus::OffsetOverflowBadly
            | GetMessageStatus::OffsetFoundNull
    ) && result.next_begin_offset != offset
    {
        offset = result.next_begin_offset;
        core.offsets.commit(group, lmq, LMQ_QUEUE_ID, offset);
        result = core
            .store
            .get_messages(lmq, LMQ_QUEUE_ID, offset, wanted, &AcceptAll);
    }
    if result.messages.is_empty() {
        return;
    }
    let counts = core.orders.update(
        key,
        h.attempt_id.as_deref(),
        pop_time,
        h.invisible_time,
        &result.queue_offsets,
    );
    core.offsets.commit(group, lmq, LMQ_QUEUE_ID, offset);
    for (raw, queue_offset) in result.messages.iter().zip(&result.queue_offsets) {
        let count = counts
            .per_offset
            .iter()
            .find(|(o, _)| o == queue_offset)
            .map_or(0, |(_, c)| *c);
        got.counts.push(count);
        got.bytes += raw.len();
        got.records.push(raw.clone());
    }
}

/// A message arrived in `topic`: when it is a lite topic's queue, the subscribed clients
/// chosen for it (one a group) to wake.
pub fn arrivals(core: &PopCore, topic: &str) -> Vec<String> {
    if split_lmq_name(topic).is_none() {
        return Vec::new();
    }
    core.lite
        .arrived(topic, None)
        .iter()
        .map(|c| parking_key(c))
        .collect()
}

/// What of `lmqs` has messages `group` did not consume yet is news for `client` (it just
/// subscribed); its parking key when there is any.
pub fn arrivals_for_client(
    core: &PopCore,
    client: &str,
    group: &str,
    lmqs: &[String],
) -> Option<String> {
    let mut any = false;
    for lmq in lmqs {
        let max = core.store.max_offset_in_queue(lmq, LMQ_QUEUE_ID);
        let consumed = core.offsets.query(group, lmq, LMQ_QUEUE_ID).unwrap_or(0);
        if max > consumed {
            core.lite.notify(client, lmq);
            any = true;
        }
    }
    any.then(|| parking_key(client))
}

/// After an ack of a lite topic's batch: the group's next client to serve what is left.
pub fn after_ack(core: &PopCore, group: &str, lmq: &str) -> Vec<String> {
    let next = core.offsets.query(group, lmq, LMQ_QUEUE_ID).unwrap_or(0);
    if next >= core.store.max_offset_in_queue(lmq, LMQ_QUEUE_ID) {
        return Vec::new();
    }
    core.lite
        .arrived(lmq, Some(group))
        .iter()
        .map(|c| parking_key(c))
        .collect()
}

#[cfg(test)]
mod tests;
