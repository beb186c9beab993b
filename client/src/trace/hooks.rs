//! The records RocketMQ's trace hooks write, built from what the client saw: a send and its
//! result (Pub), a delivery to the listener (SubBefore) and its outcome (SubAfter), a
//! transaction's end (EndTransaction). Groups and topics are named without namespace.

use stellmq_remoting::protocol::message::{now_ms, property};

use super::record::{ConsumeReturnType, TraceMessageType, TraceRecord, TraceType};
use crate::message::{Message, ReceivedMessage, SendResult, SendStatus};
use crate::namespace;

/// Java's `MessageType` of a message about to be sent.
fn message_type(msg: &Message) -> TraceMessageType {
    if msg.property(property::TRAN_MSG) == Some("true") {
        TraceMessageType::TransactionHalf
    } else if [
        "DELAY",
        "__STARTDELIVERTIME",
        "TIMER_DELIVER_MS",
        "TIMER_DELAY_SEC",
    ]
    .iter()
    .any(|p| msg.property(p).is_some())
    {
        TraceMessageType::Delay
    } else {
        TraceMessageType::Normal
    }
}

/// A send that got an answer. `None` where RocketMQ writes nothing: the broker said tracing
/// is off or named no region.
pub(crate) fn published(
    ns: Option<&str>,
    group: &str,
    msg: &Message,
    broker_addr: &str,
    result: &SendResult,
    started_ms: i64,
) -> Option<TraceRecord> {
    if !result.trace_on || result.region_id.is_empty() {
        return None;
    }
    Some(TraceRecord {
        kind: TraceType::Pub,
        timestamp: started_ms,
        region_id: result.region_id.clone(),
        group: namespace::unwrap(ns, group).to_owned(),
        cost_ms: (now_ms() - started_ms).max(0),
        success: result.status == SendStatus::SendOk,
        topic: namespace::unwrap(ns, &msg.topic).to_owned(),
        msg_id: result.msg_id.clone(),
        offset_msg_id: result.offset_msg_id.clone(),
        tags: msg.property(property::TAGS).unwrap_or("").to_owned(),
        keys: msg.property(property::KEYS).unwrap_or("").to_owned(),
        store_host: broker_addr.to_owned(),
        body_length: msg.body.len() as i64,
        msg_type: message_type(msg),
        ..Default::default()
    })
}

/// A transaction's end (`state`: `COMMIT_MESSAGE`, `ROLLBACK_MESSAGE` or `UNKNOW`).
pub(crate) fn transaction_ended(
    ns: Option<&str>,
    group: &str,
    msg: &Message,
    broker_addr: &str,
    result: &SendResult,
    state: &str,
    from_check: bool,
) -> TraceRecord {
    TraceRecord {
        kind: TraceType::EndTransaction,
        timestamp: now_ms(),
        region_id: region_or_default(&result.region_id),
        group: namespace::unwrap(ns, group).to_owned(),
        success: true,
        topic: namespace::unwrap(ns, &msg.topic).to_owned(),
        msg_id: result.msg_id.clone(),
        tags: msg.property(property::TAGS).unwrap_or("").to_owned(),
        keys: msg.property(property::KEYS).unwrap_or("").to_owned(),
        store_host: broker_addr.to_owned(),
        msg_type: TraceMessageType::TransactionCommit,
        transaction_id: result.msg_id.clone(),
        transaction_state: state.to_owned(),
        from_transaction_check: from_check,
        ..Default::default()
    }
}

fn region_or_default(region: &str) -> String {
    if region.is_empty() {
        "DefaultRegion".into()
    } else {
        region.to_owned()
    }
}

/// The SubBefore records of one listener call (one per message, sharing a request id);
/// messages stored with `TRACE_ON=false` are left out.
pub(crate) fn delivered(
    ns: Option<&str>,
    group: &str,
    request_id: &str,
    messages: &[ReceivedMessage],
) -> Vec<TraceRecord> {
    let now = now_ms();
    messages
        .iter()
        .filter(|m| m.record.properties.get(property::TRACE_ON) != Some("false"))
        .map(|m| TraceRecord {
            kind: TraceType::SubBefore,
            timestamp: now,
            region_id: region_or_default(
                m.record.properties.get(property::MSG_REGION).unwrap_or(""),
            ),
            group: namespace::unwrap(ns, group).to_owned(),
            request_id: request_id.to_owned(),
            success: true,
            topic: m.topic().to_owned(),
            msg_id: m.msg_id(),
            tags: m.tags().unwrap_or("").to_owned(),
            keys: m.keys().join(" "),
            retry_times: m.reconsume_times(),
            ..Default::default()
        })
        .collect()
}

/// The SubAfter records for the SubBefore records `before` of a call that took `cost_ms`.
pub(crate) fn consumed(
    before: &[TraceRecord],
    cost_ms: i64,
    outcome: ConsumeReturnType,
) -> Vec<TraceRecord> {
    let per_message = cost_ms / before.len().max(1) as i64;
    before
        .iter()
        .map(|b| TraceRecord {
            kind: TraceType::SubAfter,
            timestamp: now_ms(),
            cost_ms: per_message,
            success: outcome == ConsumeReturnType::Success,
            context_code: outcome as i32,
            ..b.clone()
        })
        .collect()
}
