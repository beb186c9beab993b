//! The checks ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME make of the message a receipt
//! handle names, as RocketMQ makes them: the topic exists, the queue is one of its read
//! queues, the handle's extra info parses, and the offset is in the queue.

use std::fmt::Display;

use stellmq_remoting::net::ProcessorError;
use stellmq_remoting::protocol::lite::{
    check_lite_topic, lmq_name, LMQ_QUEUE_ID, MAX_LITE_TOPIC_SIZE,
};
use stellmq_remoting::protocol::names::RETRY_PREFIX;
use stellmq_remoting::protocol::pop::{ExtraInfo, POP_ORDER_REVIVE_QUEUE};
use stellmq_remoting::protocol::ResponseCode;

use super::{bad_handle, PopCore};

/// A request's view of one popped message.
pub(super) struct HandleRequest<'a> {
    pub topic: &'a str,
    pub group: &'a str,
    pub queue_id: i32,
    pub offset: i64,
    pub extra_info: &'a str,
    /// A lite consumer's message: its lite topic (the offset is its queue's).
    pub lite_topic: Option<&'a str>,
}

/// The handle's extra info and the topic the message was read from (the POP retry topic for
/// retries), once every check passed; `peer` names the consumer in remarks.
pub(super) fn resolve_handle(
    core: &PopCore,
    r: &HandleRequest<'_>,
    peer: impl Display,
) -> Result<(ExtraInfo, String), ProcessorError> {
    let topic = core.topics.get(r.topic).ok_or_else(|| {
        ProcessorError::new(
            ResponseCode::TOPIC_NOT_EXIST,
            format!(
                "topic[{}] not exist, apply first please!{}",
                r.topic,
                super::FAQ
            ),
        )
    })?;
    if r.queue_id < 0 || r.queue_id >= topic.read_queue_nums {
        return Err(ProcessorError::new(
            ResponseCode::MESSAGE_ILLEGAL,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{peer}]",
                r.queue_id, r.topic, topic.read_queue_nums
            ),
        ));
    }
    let extra = ExtraInfo::parse(r.extra_info).map_err(bad_handle)?;
    if let Some(lite) = r.lite_topic {
        let lmq = lite_queue(core, r, lite, &extra)?;
        check_offset(core, &lmq, LMQ_QUEUE_ID, r.offset)?;
        return Ok((extra, lmq));
    }
    let real_topic = if r.topic.starts_with(RETRY_PREFIX) {
        r.topic.to_owned()
    } else {
        extra.real_topic(r.topic, r.group)
    };
    check_offset(core, &real_topic, r.queue_id, r.offset)?;
    Ok((extra, real_topic))
}

/// The lite topic's queue a lite consumer's handle names, after RocketMQ's checks: the
/// group is bound to the topic, the queue is 0 and the handle is an orderly one.
fn lite_queue(
    core: &PopCore,
    r: &HandleRequest<'_>,
    lite: &str,
    extra: &ExtraInfo,
) -> Result<String, ProcessorError> {
    let invalid = |remark: &str| ProcessorError::new(ResponseCode::INVALID_PARAMETER, remark);
    check_lite_topic(lite, MAX_LITE_TOPIC_SIZE).map_err(|reason| invalid(&reason))?;
    let bound = core.groups.get(r.group).and_then(|g| {
        g.attributes
            .get(super::lite::LITE_BIND_TOPIC_ATTRIBUTE)
            .cloned()
    });
    if bound.as_deref() != Some(r.topic) {
        return Err(invalid("group type or bind topic not match."));
    }
    if r.queue_id != LMQ_QUEUE_ID || extra.revive_qid != POP_ORDER_REVIVE_QUEUE {
        return Err(invalid("ack queue illegal."));
    }
    Ok(lmq_name(r.topic, lite))
}

/// RocketMQ's check that the acked offset is in the queue.
fn check_offset(
    core: &PopCore,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> Result<(), ProcessorError> {
    let min = core.store.min_offset_in_queue(topic, queue_id);
    let max = core.store.max_offset_in_queue(topic, queue_id);
    if offset < min || offset > max {
        return Err(ProcessorError::new(
            ResponseCode::NO_MESSAGE,
            format!(
                "offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{min}~{max}"
            ),
        ));
    }
    Ok(())
}
