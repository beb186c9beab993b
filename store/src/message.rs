//! What goes into the store and what comes out of a put.

use std::net::SocketAddr;

use bytes::Bytes;
use stellmq_protocol::message::{sys_flag, MessageRecord, Properties};

/// One message to append. The store assigns physical offset, queue offset and store time.
#[derive(Debug, Clone)]
pub struct PutMessage {
    pub topic: String,
    pub queue_id: i32,
    pub flag: i32,
    /// Body as stored (compressed when `sys_flag` says so).
    pub body: Bytes,
    /// Encoded properties string.
    pub properties: String,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    /// The `WAIT` property: with SYNC_FLUSH, answer only after the flush (default true).
    pub wait_store_ok: bool,
}

impl PutMessage {
    /// A stored record put again (a delivered delay, a committed or checked transaction)
    /// with `properties`, to `topic` and `queue_id`; host-family bits are recomputed on
    /// append, and nobody waits for its flush.
    pub fn from_record(
        record: &MessageRecord,
        properties: &Properties,
        topic: String,
        queue_id: i32,
        store_host: SocketAddr,
    ) -> Self {
        Self {
            topic,
            queue_id,
            flag: record.head.flag,
            body: record.body.clone(),
            properties: properties.encode(),
            sys_flag: record.head.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6),
            born_timestamp: record.head.born_timestamp,
            born_host: record.head.born_host,
            store_host,
            reconsume_times: record.head.reconsume_times,
            prepared_transaction_offset: 0,
            wait_store_ok: false,
        }
    }
}

/// RocketMQ's `PutMessageStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMessageStatus {
    PutOk,
    FlushDiskTimeout,
    FlushSlaveTimeout,
    SlaveNotAvailable,
    ServiceNotAvailable,
    CreateMappedFileFailed,
    MessageIllegal,
    PropertiesSizeExceeded,
    OsPageCacheBusy,
    /// Controller mode: the master's SyncStateSet is smaller than `minInSyncReplicas`; the
    /// message was not stored.
    InSyncReplicasNotEnough,
    UnknownError,
}

impl PutMessageStatus {
    /// Whether the message is in the store (possibly not yet flushed or replicated).
    pub fn is_stored(self) -> bool {
        matches!(
            self,
            PutMessageStatus::PutOk
                | PutMessageStatus::FlushDiskTimeout
                | PutMessageStatus::FlushSlaveTimeout
                | PutMessageStatus::SlaveNotAvailable
        )
    }
}

/// Where an appended message (or batch) landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    /// Physical offset of each message, in order.
    pub phys_offsets: Vec<i64>,
    /// Queue offset of the first message.
    pub queue_offset: i64,
    pub store_timestamp: i64,
    pub wrote_bytes: usize,
    /// Physical offset just past the last message.
    pub end_offset: i64,
}

impl AppendResult {
    pub fn first_phys_offset(&self) -> i64 {
        self.phys_offsets.first().copied().unwrap_or(0)
    }
}

/// Outcome of a put: a status, where it landed when stored, and a reason when not.
#[derive(Debug, Clone)]
pub struct PutMessageResult {
    pub status: PutMessageStatus,
    pub append: Option<AppendResult>,
    pub remark: Option<String>,
}

impl PutMessageResult {
    pub fn failed(status: PutMessageStatus, remark: impl Into<String>) -> Self {
        Self {
            status,
            append: None,
            remark: Some(remark.into()),
        }
    }

    pub fn is_ok(&self) -> bool {
        self.status == PutMessageStatus::PutOk
    }
}
