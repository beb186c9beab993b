//! Transactional messages (protocol.md 7.4). A send marked `TRAN_MSG=true` is stored as a *half*
//! message in `RMQ_SYS_TRANS_HALF_TOPIC` (queue 0), invisible to consumers. END_TRANSACTION
//! commits it (re-put to its real topic and queue) or rolls it back; either way an *op*
//! record in `RMQ_SYS_TRANS_OP_HALF_TOPIC` (tag `d`, body = the half's queue offset) marks
//! it resolved. The check service asks the producer group about halves left unresolved.
//!
//! All of it lives in the CommitLog in RocketMQ's layout, so a restart (or a slave) sees
//! the same state, and the check progress is the offset of consumer group
//! `CID_RMQ_SYS_TRANS` on the half queue, as in RocketMQ.

pub mod check;

use std::collections::BTreeSet;
use std::net::SocketAddr;

use bytes::Bytes;
use parking_lot::Mutex;
use stellmq_remoting::protocol::message::{
    property, sys_flag, MessageRecord, Properties, PropertyLookup,
};
use stellmq_store::PutMessage;

use crate::context::now_ms;
use crate::topic::{TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};

/// The consumer group whose offsets track the check progress.
pub const SYS_TRANS_GROUP: &str = "CID_RMQ_SYS_TRANS";
/// Tag of op records.
pub const OP_TAG: &str = "d";

/// Whether a send's properties ask for a half message.
pub fn is_half_request(props: &impl PropertyLookup) -> bool {
    props
        .get(property::TRAN_MSG)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Parks a send as a half message: the real topic and queue go into properties, the
/// transaction bits become NOT (so the half queue indexes it) and it goes to queue 0 of
/// the half topic.
pub fn to_half(msg: &mut PutMessage, props: &mut Properties) {
    msg.sys_flag = sys_flag::with_transaction_type(msg.sys_flag, sys_flag::TRANSACTION_NOT_TYPE);
    crate::deferred::park(msg, props, TRANS_HALF_TOPIC, 0);
}

/// A stored record put again with `props`, to its own topic and queue.
pub fn reput(record: &MessageRecord, props: &Properties, store_host: SocketAddr) -> PutMessage {
    PutMessage::from_record(
        record,
        props,
        record.topic.clone(),
        record.head.queue_id,
        store_host,
    )
}

/// The op record that marks the half at `half_offset` resolved.
pub fn op_message(half_offset: i64, store_host: SocketAddr) -> PutMessage {
    let mut props = Properties::new();
    props.insert(property::TAGS, OP_TAG);
    props.insert(property::WAIT, "false");
    PutMessage {
        topic: TRANS_OP_HALF_TOPIC.to_owned(),
        queue_id: 0,
        flag: 0,
        body: Bytes::from(half_offset.to_string()),
        properties: props.encode(),
        sys_flag: 0,
        born_timestamp: now_ms(),
        born_host: store_host,
        store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        wait_store_ok: false,
    }
}

/// Half offsets an op record has marked resolved (from `d` bodies: one offset, or several
/// joined with commas as RocketMQ 5 writes them).
pub fn op_offsets(body: &[u8]) -> impl Iterator<Item = i64> + '_ {
    std::str::from_utf8(body)
        .unwrap_or("")
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
}

/// Half offsets resolved but not yet passed by the check progress.
#[derive(Default)]
pub struct Resolved(Mutex<BTreeSet<i64>>);

impl Resolved {
    pub fn insert(&self, half_offset: i64) {
        self.0.lock().insert(half_offset);
    }

    pub fn contains(&self, half_offset: i64) -> bool {
        self.0.lock().contains(&half_offset)
    }

    /// Forgets what the check progress has passed.
    pub fn forget_below(&self, progress: i64) {
        let mut set = self.0.lock();
        *set = set.split_off(&progress);
    }
}
