//! Where broker-side writes go: the store, then replication as the broker role requires
//! (protocol.md 9.3). Sends, send-backs and transaction commits share it, so a SYNC_MASTER
//! acknowledges each of them only once a slave has it.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessorError, RequestContext};
use stellmq_remoting::protocol::codes::busy_remark;
use stellmq_remoting::protocol::ResponseCode;
use stellmq_store::{MessageStore, PendingPut, PutMessage, PutMessageResult, PutMessageStatus};

use crate::ha::HaMaster;

/// `haSlaveFallbehindMax`: a slave further behind than this does not count as available.
const SLAVE_FALL_BEHIND_MAX: i64 = 256 * 1024 * 1024;

pub struct MessageWriter {
    store: Arc<MessageStore>,
    /// Set on masters: slaves are woken after appends, and SYNC_MASTER waits for them.
    replication: Option<Replication>,
}

struct Replication {
    ha: Arc<HaMaster>,
    sync: bool,
}

impl MessageWriter {
    pub fn new(store: Arc<MessageStore>) -> Self {
        Self {
            store,
            replication: None,
        }
    }

    /// A master's writes wake its slaves; with `sync` (SYNC_MASTER) a write is acknowledged
    /// only once a slave confirmed it.
    pub fn with_replication(mut self, ha: Arc<HaMaster>, sync: bool) -> Self {
        self.replication = Some(Replication { ha, sync });
        self
    }

    /// Appends messages of one topic and queue, then replicates as the role requires.
    pub async fn put(&self, msgs: Vec<PutMessage>) -> PutMessageResult {
        self.begin(msgs).await.wait().await
    }

    /// [`Self::put`] for a request running on a lane worker: the worker goes back to the lane
    /// while the write waits for its flush or a slave, so a SYNC_FLUSH or SYNC_MASTER lane
    /// never has fewer writes in one group commit than it has workers.
    pub async fn put_for(&self, ctx: &RequestContext, msgs: Vec<PutMessage>) -> PutMessageResult {
        let pending = self.begin(msgs).await;
        if pending.waits() {
            ctx.release_worker();
        }
        pending.wait().await
    }

    /// Appends and wakes the slaves; what is left (the SYNC_FLUSH group commit, a
    /// SYNC_MASTER slave's acknowledgement) is [`PendingWrite::wait`], which a caller that
    /// holds a lane worker should run after giving the worker back.
    pub async fn begin(&self, msgs: Vec<PutMessage>) -> PendingWrite {
        let wait_store_ok = msgs.iter().all(|m| m.wait_store_ok);
        let stored = self.store.append_messages(msgs).await;
        let replica_wait = match &self.replication {
            Some(replication) => {
                replication.ha.wake();
                (replication.sync && wait_store_ok).then(|| replication.ha.clone())
            }
            None => None,
        };
        PendingWrite {
            stored,
            replica_wait,
            timeout: self.store.config().sync_flush_timeout(),
        }
    }
}

/// A write in the CommitLog that may still wait for its flush or a slave.
pub struct PendingWrite {
    stored: PendingPut,
    /// SYNC_MASTER: the slave that must confirm it.
    replica_wait: Option<Arc<HaMaster>>,
    timeout: std::time::Duration,
}

impl PendingWrite {
    /// Whether [`Self::wait`] will wait at all (for a flush or a slave).
    pub fn waits(&self) -> bool {
        self.stored.waits_for_flush() || self.replica_wait.is_some()
    }

    /// The final result, once flushed (SYNC_FLUSH) and confirmed by a slave (SYNC_MASTER).
    pub async fn wait(self) -> PutMessageResult {
        let mut result = self.stored.wait().await;
        let Some(ha) = self.replica_wait else {
            return result;
        };
        let end = match &result.append {
            Some(append) if result.status == PutMessageStatus::PutOk => append.end_offset,
            _ => return result,
        };
        if !ha.has_slaves() || end - ha.acked_offset() > SLAVE_FALL_BEHIND_MAX {
            result.status = PutMessageStatus::SlaveNotAvailable;
        } else if !ha.wait_for_slave(end, self.timeout).await {
            result.status = PutMessageStatus::FlushSlaveTimeout;
        }
        result
    }
}

/// The response code of a stored write (flush or replication may have timed out), or the
/// error a failed one answers, with RocketMQ's remarks.
pub fn response_code(result: &PutMessageResult) -> Result<ResponseCode, ProcessorError> {
    let remark = || result.remark.clone().unwrap_or_default();
    match result.status {
        PutMessageStatus::PutOk => Ok(ResponseCode::SUCCESS),
        PutMessageStatus::FlushDiskTimeout => Ok(ResponseCode::FLUSH_DISK_TIMEOUT),
        PutMessageStatus::FlushSlaveTimeout => Ok(ResponseCode::FLUSH_SLAVE_TIMEOUT),
        PutMessageStatus::SlaveNotAvailable => Ok(ResponseCode::SLAVE_NOT_AVAILABLE),
        PutMessageStatus::MessageIllegal | PutMessageStatus::PropertiesSizeExceeded => {
            Err(ProcessorError::new(
                ResponseCode::MESSAGE_ILLEGAL,
                format!("the message is illegal: {}", remark()),
            ))
        }
        PutMessageStatus::ServiceNotAvailable => Err(ProcessorError::new(
            ResponseCode::SERVICE_NOT_AVAILABLE,
            format!("service not available now: {}", remark()),
        )),
        PutMessageStatus::CreateMappedFileFailed => Err(ProcessorError::system(format!(
            "create mapped file failed, server is busy or broken: {}",
            remark()
        ))),
        PutMessageStatus::OsPageCacheBusy => Err(ProcessorError::new(
            ResponseCode::SYSTEM_BUSY,
            busy_remark::PC_SYNCHRONIZED,
        )),
        PutMessageStatus::UnknownError => Err(ProcessorError::system(
            result
                .remark
                .clone()
                .unwrap_or_else(|| "UNKNOWN_ERROR".into()),
        )),
    }
}
