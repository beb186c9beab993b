//! POP_MESSAGE (RocketMQ 5.1's `PopMessageProcessor`).
//!
//! One POP reads up to `maxMsgNums` (at most 32) messages from one queue or from every
//! queue of the topic (`queueId` -1), and from the group's POP retry topic
//! `%RETRY%<group>_<topic>`: first one time in five (at random), otherwise after the topic
//! when the batch is not full (never for orderly POP). For every queue that gave messages,
//! a checkpoint is written to the revive log before the answer (so the batch survives a
//! restart), and the group's offset of that queue moves past what was read.
//!
//! The body is the stored records back to back, as a pull's; retried messages are re-encoded
//! with the original topic and their receipt handle in `POP_CK`, as RocketMQ does. Nothing
//! found: the POP is held for `pollTime` (long polling), or answered POLLING_TIMEOUT.

use std::sync::Arc;

use bytes::Bytes;
use rand::Rng;
use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::pop::PopCheckPoint;
use stellmq_remoting::protocol::body::{
    fastjson, SubscriptionData, SubscriptionGroupConfig, TopicConfig, MESSAGE_TYPE_ATTRIBUTE,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, PopMessageRequestHeader, PopMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{property, MessageKind, MessageRecord};
use stellmq_remoting::protocol::pop::{
    self as handle, pop_retry_topic, ExtraInfo, TopicType, MAX_POP_MESSAGES, POP_ORDER_REVIVE_QUEUE,
};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::{GetMessageResult, GetMessageStatus};

use super::checkpoint::{Checkpoint, CkKey, TableFull};
use super::hold::{Parking, PopHoldService};
use super::order::OrderKey;
use super::{PopCore, PopSettings, QueueLocks, CK_TAG};
use crate::filter::{self, FilterError, SubscriptionFilter, TagFilter};
use crate::processor::header;
use crate::stats::{GROUP_GET_NUMS, GROUP_GET_SIZE};

/// `PopMessageRequestHeader.isTimeoutTooMuch`: a POP older than its poll time by this much
/// is refused.
const TIMEOUT_TOO_MUCH_MS: i64 = 500;

/// `ConsumeInitMode.MIN`.
const INIT_MODE_MIN: i32 = 0;
/// `ConsumeInitMode.MAX`.
pub(super) const INIT_MODE_MAX: i32 = 1;

pub struct PopProcessor {
    pub core: Arc<PopCore>,
    pub hold: Arc<PopHoldService>,
}

/// The outcome of running a POP (or a notification) once.
pub(super) enum Popped {
    Answer(RemotingCommand),
    Park(Parking),
}

impl PopProcessor {
    /// POP_MESSAGE: answered now, or held until a message arrives or its poll time ends.
    pub(crate) async fn pop(
        self: Arc<Self>,
        ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let request = with_born_time(&self.core, request);
        match run(&self.core, Some(&ctx), &request).await? {
            Popped::Answer(response) => Ok(Some(response)),
            Popped::Park(parking) => Ok(self.hold.park(&self.core, ctx, request, parking)),
        }
    }
}

/// Fills in `bornTime` when the client left it out or sent 0, as RocketMQ does.
pub(super) fn with_born_time(core: &PopCore, mut request: RemotingCommand) -> RemotingCommand {
    let missing = request
        .ext_fields
        .get("bornTime")
        .is_none_or(|v| v.trim().is_empty() || v.trim() == "0");
    if missing {
        request
            .ext_fields
            .insert("bornTime", core.clock.now_ms().to_string());
    }
    request
}

/// What the queues read so far gave.
struct Gathered {
    records: Vec<Bytes>,
    start_info: String,
    msg_info: String,
    order_info: String,
    rest: i64,
    bytes: usize,
}

/// One POP's fixed parameters.
struct PopPlan<'a> {
    h: &'a PopMessageRequestHeader,
    pop_time: i64,
    revive_qid: i32,
    filter: SubscriptionFilter,
    retry_filter: SubscriptionFilter,
}

/// Runs a POP once; `ctx` is the request's when it holds a lane worker (not on a re-run
/// from the hold).
pub(super) async fn run(
    core: &PopCore,
    ctx: Option<&RequestContext>,
    request: &RemotingCommand,
) -> Result<Popped, ProcessorError> {
    let h: PopMessageRequestHeader = header(request)?;
    let now = core.clock.now_ms();
    let born = h.born_time.unwrap_or(now);
    if now.saturating_sub(born).saturating_sub(h.poll_time) > TIMEOUT_TOO_MUCH_MS {
        return Err(ProcessorError::new(
            ResponseCode::POLLING_TIMEOUT,
            format!(
                "the broker[{}] pop message is timeout too much",
                core.identity.broker_addr
            ),
        ));
    }
    if let Some(e) = core.broker_forbidden("pop message") {
        return Err(e);
    }
    if h.max_msg_nums > MAX_POP_MESSAGES || h.max_msg_nums <= 0 {
        return Err(ProcessorError::system(format!(
            "the broker[{}] pop message's num is greater than 32 (or not positive): maxMsgNums={}",
            core.identity.broker_addr, h.max_msg_nums
        )));
    }
    if h.invisible_time < 0 || h.poll_time < 0 {
        return Err(ProcessorError::system(format!(
            "invisibleTime ({}) and pollTime ({}) must not be negative",
            h.invisible_time, h.poll_time
        )));
    }
    let topic = core.readable_topic(&h.topic, h.queue_id, true)?;
    let group = core.consumable_group(&h.consumer_group)?;
    let retry_topic =
        pop_retry_topic(&h.topic, &h.consumer_group).map_err(super::guard::refusal)?;
    let plan = PopPlan {
        h: &h,
        pop_time: now,
        revive_qid: if h.is_order() {
            POP_ORDER_REVIVE_QUEUE
        } else {
            core.next_revive_qid()
        },
        filter: build_filter(core, &h)?,
        retry_filter: SubscriptionFilter::Tags(TagFilter::new(&filter::build_subscription(
            &retry_topic,
            filter::SUB_ALL,
            0,
        ))),
    };
    let mut got = Gathered {
        records: Vec::new(),
        start_info: String::new(),
        msg_info: String::new(),
        order_info: String::new(),
        rest: 0,
        bytes: 0,
    };
    let settings = core.settings.get();
    let random = rand::thread_rng().gen_range(0..100);
    let walk = QueueWalk::of(&topic, &group, h.is_order(), random, &settings);
    let retry_first = !h.is_order() && random < walk.retry_probability;
    let retry_queues = core
        .topics
        .get(&retry_topic)
        .map_or(0, |c| c.read_queue_nums.max(0));
    if retry_first {
        for i in 0..retry_queues {
            let q = (random + i) % retry_queues;
            pop_queue(core, ctx, &plan, &retry_topic, q, &mut got).await?;
        }
    }
    if h.queue_id < 0 {
        let n = topic.read_queue_nums.max(0);
        for i in 0..n {
            pop_queue(core, ctx, &plan, &h.topic, walk.queue(i, n), &mut got).await?;
        }
    } else {
        pop_queue(core, ctx, &plan, &h.topic, h.queue_id, &mut got).await?;
    }
    if !retry_first && !h.is_order() && got.records.len() < h.max_msg_nums as usize {
        for i in 0..retry_queues {
            let q = (random + i) % retry_queues;
            pop_queue(core, ctx, &plan, &retry_topic, q, &mut got).await?;
        }
    }
    if got.records.is_empty() {
        let deadline = born
            .saturating_add(h.poll_time)
            .min(now.saturating_add(core.settings.get().long_polling_max_suspend_millis as i64));
        if h.poll_time > 0 && now < deadline {
            return Ok(Popped::Park(Parking {
                topic: h.topic.clone(),
                retry_topic,
                group: h.consumer_group.clone(),
                queue_id: h.queue_id,
                deadline_ms: deadline,
                notification: false,
                order: h.is_order(),
                attempt_id: h.attempt_id.clone(),
            }));
        }
    }
    Ok(Popped::Answer(answer(core, request, &plan, got)))
}

/// The order a POP of every queue reads a topic's queues in. RocketMQ 5.4 walks them from
/// the highest queue id down (or up, `priorityOrderAsc` false) from a random start; a
/// PRIORITY topic is walked from its highest priority, `priority.factor` times in 100, and
/// reads its retry topic first `popFromRetryProbabilityForPriority` times in 100.
struct QueueWalk {
    start: i32,
    descending: bool,
    retry_probability: i32,
}

impl QueueWalk {
    fn of(
        topic: &TopicConfig,
        group: &SubscriptionGroupConfig,
        orderly: bool,
        random: i32,
        settings: &PopSettings,
    ) -> Self {
        let priority_topic = topic
            .attributes
            .get(MESSAGE_TYPE_ATTRIBUTE)
            .is_some_and(|t| t == MessageKind::Priority.name());
        let by_priority = priority_topic && !orderly && i64::from(random) < group.priority_factor();
        Self {
            start: if by_priority { 0 } else { random },
            descending: settings.priority_order_asc,
            retry_probability: if by_priority {
                settings.retry_probability_for_priority
            } else {
                settings.retry_probability
            },
        }
    }

    /// The `i`-th queue of `n` to read.
    fn queue(&self, i: i32, n: i32) -> i32 {
        let step = if self.descending { n - 1 - i } else { i };
        (step + self.start) % n
    }
}

fn answer(
    core: &PopCore,
    request: &RemotingCommand,
    plan: &PopPlan<'_>,
    got: Gathered,
) -> RemotingCommand {
    let h = plan.h;
    let found = !got.records.is_empty();
    let fields = PopMessageResponseHeader {
        pop_time: plan.pop_time,
        invisible_time: h.invisible_time,
        revive_qid: plan.revive_qid,
        rest_num: got.rest.max(0),
        start_offset_info: Some(got.start_info),
        msg_offset_info: Some(got.msg_info),
        order_count_info: h.is_order().then_some(got.order_info),
    }
    .to_ext_fields();
    if !found {
        return request
            .response_to(
                ResponseCode::POLLING_TIMEOUT,
                Some(GetMessageStatus::NoMessageInQueue.name().to_owned()),
            )
            .with_ext_fields(fields);
    }
    let key = format!("{}@{}", h.topic, h.consumer_group);
    core.traffic
        .add(GROUP_GET_NUMS, &key, got.records.len() as u64, 1);
    core.traffic.add(GROUP_GET_SIZE, &key, got.bytes as u64, 1);
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
    request
        .response_to(
            ResponseCode::SUCCESS,
            Some(GetMessageStatus::Found.name().to_owned()),
        )
        .with_ext_fields(fields)
        .with_body(body)
}

/// The filter of the POP's expression (`*` when none).
fn build_filter(
    core: &PopCore,
    h: &PopMessageRequestHeader,
) -> Result<SubscriptionFilter, ProcessorError> {
    let exp = h.exp.as_deref().map(str::trim).filter(|e| !e.is_empty());
    let Some(exp) = exp else {
        return Ok(SubscriptionFilter::Tags(TagFilter::new(
            &filter::build_subscription(&h.topic, filter::SUB_ALL, 0),
        )));
    };
    let parse_failed = |e: String| {
        ProcessorError::new(
            ResponseCode::SUBSCRIPTION_PARSE_FAILED,
            format!("parse the consumer's subscription failed: {e}"),
        )
    };
    if filter::is_tag_type(h.exp_type.as_deref()) {
        return Ok(SubscriptionFilter::Tags(TagFilter::new(
            &filter::build_subscription(&h.topic, exp, 0),
        )));
    }
    let sub = SubscriptionData {
        topic: h.topic.clone(),
        sub_string: exp.to_owned(),
        expression_type: h.exp_type.clone(),
        ..Default::default()
    };
    let sql_enabled = core.settings.get().enable_property_filter;
    SubscriptionFilter::new(&sub, sql_enabled, &core.selectors).map_err(|e| match e {
        FilterError::NotSupported(_) => parse_failed(e.to_string()),
        FilterError::Parse(_) => parse_failed(e.to_string()),
    })
}

/// The offset a POP of the group reads a queue from: the group's offset, else where a new
/// group starts (`initMode` MIN: the first message; MAX: the last one, or the first when
/// the queue was never cleaned), committed so the next POP agrees.
pub(super) fn pop_offset(
    core: &PopCore,
    group: &str,
    topic: &str,
    queue_id: i32,
    init_mode: Option<i32>,
) -> i64 {
    if let Some(offset) = core
        .offsets
        .query(group, topic, queue_id)
        .filter(|o| *o >= 0)
    {
        return offset;
    }
    let min = core.store.min_offset_in_queue(topic, queue_id);
    let offset = if topic.starts_with(stellmq_remoting::protocol::names::RETRY_PREFIX)
        || init_mode.unwrap_or(INIT_MODE_MIN) == INIT_MODE_MIN
        || min <= 0
    {
        min.max(0)
    } else {
        (core.store.max_offset_in_queue(topic, queue_id) - 1).max(0)
    };
    core.offsets.commit(group, topic, queue_id, offset);
    offset
}

/// Pops from one queue (of the topic or of its retry topic) into `got`.
async fn pop_queue(
    core: &PopCore,
    ctx: Option<&RequestContext>,
    plan: &PopPlan<'_>,
    topic: &str,
    queue_id: i32,
    got: &mut Gathered,
) -> Result<(), ProcessorError> {
    let h = plan.h;
    let group = &h.consumer_group;
    let max = core.store.max_offset_in_queue(topic, queue_id);
    let Some(_lock) = core.locks.try_lock(QueueLocks::key(topic, group, queue_id)) else {
        let offset = core.offsets.query(group, topic, queue_id).unwrap_or(0);
        got.rest += (max - offset).max(0);
        return Ok(());
    };
    let mut offset = pop_offset(core, group, topic, queue_id, h.init_mode);
    let order_key = OrderKey {
        topic: topic.to_owned(),
        group: group.clone(),
        queue_id,
    };
    let wanted = (h.max_msg_nums as usize).saturating_sub(got.records.len());
    if wanted == 0
        || (h.is_order()
            && core
                .orders
                .blocked(&order_key, h.attempt_id.as_deref(), plan.pop_time))
    {
        got.rest += (max - offset).max(0);
        return Ok(());
    }
    let retry = TopicType::of_topic(topic);
    let filter = if retry.is_retry() {
        &plan.retry_filter
    } else {
        &plan.filter
    };
    let mut result = core
        .store
        .get_messages(topic, queue_id, offset, wanted, filter);
    if matches!(
        result.status,
        GetMessageStatus::OffsetTooSmall
            | GetMessageStatus::OffsetOverflowBadly
            | GetMessageStatus::OffsetFoundNull
    ) && result.next_begin_offset != offset
    {
        tracing::warn!(%topic, queue_id, %group, from = offset, to = result.next_begin_offset, "POP offset corrected");
        core.offsets
            .commit(group, topic, queue_id, result.next_begin_offset);
        offset = result.next_begin_offset;
        result = core
            .store
            .get_messages(topic, queue_id, offset, wanted, filter);
    }
    got.rest += (result.max_offset - result.next_begin_offset).max(0);
    if result.messages.is_empty() {
        if result.next_begin_offset > offset {
            // Only filtered-out messages: nothing in flight, the offset moves past them.
            core.offsets
                .commit(group, topic, queue_id, result.next_begin_offset);
        }
        return Ok(());
    }
    if h.is_order() {
        if !core.orders.has_room(&order_key) {
            return Err(inflight_full(core.orders.len()));
        }
        let counts = core.orders.update(
            order_key,
            h.attempt_id.as_deref(),
            plan.pop_time,
            h.invisible_time,
            &result.queue_offsets,
        );
        for (o, c) in &counts.per_offset {
            handle::push_offset_order_count(&mut got.order_info, retry, queue_id, *o, *c);
        }
        handle::push_queue_order_count(&mut got.order_info, retry, queue_id, counts.min);
        core.offsets.commit(group, topic, queue_id, offset);
    } else {
        write_checkpoint(core, ctx, plan, topic, queue_id, offset, &result).await?;
        core.offsets
            .commit(group, topic, queue_id, result.next_begin_offset);
    }
    handle::push_start_offset_info(&mut got.start_info, retry, queue_id, offset);
    handle::push_msg_offset_info(&mut got.msg_info, retry, queue_id, &result.queue_offsets);
    for (raw, queue_offset) in result.messages.iter().zip(&result.queue_offsets) {
        let record = if retry.is_retry() {
            let extra = ExtraInfo {
                ck_queue_offset: offset,
                pop_time: plan.pop_time,
                invisible_time: h.invisible_time,
                revive_qid: plan.revive_qid,
                topic_type: retry,
                broker_name: core.identity.broker_name.clone(),
                queue_id,
                queue_offset: Some(*queue_offset),
            };
            match as_original(raw, &h.topic, &extra) {
                Ok(record) => record,
                Err(e) => {
                    tracing::error!(%topic, queue_id, queue_offset, error = %e, "cannot re-encode a retried message for POP");
                    continue;
                }
            }
        } else {
            raw.clone()
        };
        got.bytes += record.len();
        got.records.push(record);
    }
    Ok(())
}

/// Writes the checkpoint of one queue's batch to the revive log, tracking it first so that
/// the revive progress never passes its record.
async fn write_checkpoint(
    core: &PopCore,
    ctx: Option<&RequestContext>,
    plan: &PopPlan<'_>,
    topic: &str,
    queue_id: i32,
    offset: i64,
    result: &GetMessageResult,
) -> Result<(), ProcessorError> {
    let h = plan.h;
    let key = CkKey {
        group: h.consumer_group.clone(),
        topic: topic.to_owned(),
        queue_id,
        start_offset: offset,
        pop_time: plan.pop_time,
    };
    let lower_bound = core
        .store
        .max_offset_in_queue(&core.revive_topic, plan.revive_qid);
    core.checkpoints
        .insert(
            key.clone(),
            Checkpoint {
                offsets: result.queue_offsets.clone(),
                acked: 0,
                invisible_time: h.invisible_time,
                revive_qid: plan.revive_qid,
                revive_offset: lower_bound,
            },
        )
        .map_err(|TableFull(n)| inflight_full(n))?;
    let record = PopCheckPoint {
        start_offset: offset,
        pop_time: plan.pop_time,
        invisible_time: h.invisible_time,
        bit_map: 0,
        num: result.queue_offsets.len() as i32,
        queue_id,
        topic: topic.to_owned(),
        cid: h.consumer_group.clone(),
        revive_offset: 0,
        queue_offset_diff: result.queue_offsets.iter().map(|o| o - offset).collect(),
        broker_name: Some(core.identity.broker_name.clone()),
    };
    let uniq = format!(
        "{topic}@{queue_id}@{offset}@{}@{}@{}@{CK_TAG}",
        h.consumer_group, plan.pop_time, core.identity.broker_name
    );
    match core
        .append_revive(
            ctx,
            plan.revive_qid,
            CK_TAG,
            uniq,
            fastjson::encode(&record),
        )
        .await
    {
        Ok(at) => {
            core.checkpoints.set_revive_offset(&key, at);
            Ok(())
        }
        Err(e) => {
            core.checkpoints.remove(&key);
            Err(e)
        }
    }
}

fn inflight_full(n: usize) -> ProcessorError {
    ProcessorError::new(
        ResponseCode::SYSTEM_BUSY,
        format!(
            "[POP_INFLIGHT_FULL] {n} POP batches are in flight on this broker (popMaxInflightCheckpoints); ack them or wait for their invisible time to pass"
        ),
    )
}

/// A retried message as POP returns it: the original topic, its receipt handle in `POP_CK`.
fn as_original(raw: &Bytes, topic: &str, extra: &ExtraInfo) -> Result<Bytes, ProcessorError> {
    let (mut record, _) = MessageRecord::decode(raw, false)?;
    if !record.properties.contains(property::POP_CK) {
        record
            .properties
            .insert(property::POP_CK, extra.to_string());
    }
    record.topic = topic.to_owned();
    Ok(Bytes::from(record.encode_to_vec()?))
}
