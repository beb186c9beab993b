//! Where broker-side writes go: the store, then replication as the broker role requires
//! (protocol.md 9.3). Sends, send-backs and transaction commits share it, so a SYNC_MASTER
//! acknowledges each of them only once a slave has it.
//!
//! In controller mode the rule is RocketMQ 5's: a master whose SyncStateSet has fewer than
//! `minInSyncReplicas` members refuses the write before storing it ("in-sync replicas not
//! enough"); with `allAckInSyncStateSet` a write is acknowledged once every member has it,
//! otherwise once `inSyncReplicas` replicas (the master included) have it.

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
    rule: AckRule,
}

/// When a write is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckRule {
    /// ASYNC_MASTER (`false`) or SYNC_MASTER (`true`, one slave must have it).
    Classic { sync: bool },
    /// Controller mode (see the module docs).
    Controller {
        all_ack: bool,
        in_sync_replicas: usize,
        min_in_sync_replicas: usize,
    },
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
    pub fn with_replication(self, ha: Arc<HaMaster>, sync: bool) -> Self {
        self.with_rule(ha, AckRule::Classic { sync })
    }

    /// Writes wake `ha`'s slaves and are acknowledged by `rule`.
    pub fn with_rule(mut self, ha: Arc<HaMaster>, rule: AckRule) -> Self {
        self.replication = Some(Replication { ha, rule });
        self
    }

    /// Appends the store's queued prologue records (metadata changes) and wakes the slaves;
    /// while the write rule refuses writes they stay queued for the next write it takes.
    pub async fn append_prologue(&self) {
        if self.refuse_before_storing().is_some() {
            return;
        }
        if self.store.append_prologue().await.is_some() {
            if let Some(replication) = &self.replication {
                replication.ha.wake();
            }
        }
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
        if let Some(refused) = self.refuse_before_storing() {
            return PendingWrite {
                stored: PendingPut::done(refused),
                replica_wait: None,
                timeout: self.store.config().sync_flush_timeout(),
            };
        }
        let stored = self.store.append_messages(msgs).await;
        let replica_wait = match &self.replication {
            Some(replication) => {
                replication.ha.wake();
                let waits = match replication.rule {
                    AckRule::Classic { sync } => sync,
                    AckRule::Controller { .. } => true,
                };
                (waits && wait_store_ok).then(|| (replication.ha.clone(), replication.rule))
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

impl MessageWriter {
    /// Controller mode: a master with too small a SyncStateSet stores nothing.
    fn refuse_before_storing(&self) -> Option<PutMessageResult> {
        let replication = self.replication.as_ref()?;
        let AckRule::Controller {
            min_in_sync_replicas,
            ..
        } = replication.rule
        else {
            return None;
        };
        let controlled = replication.ha.controlled()?;
        controlled.term()?;
        let members = controlled.sync.effective().len();
        (members < min_in_sync_replicas).then(|| {
            PutMessageResult::failed(
                PutMessageStatus::InSyncReplicasNotEnough,
                format!(
                    "in-sync replicas not enough: the SyncStateSet has {members}, \
                     minInSyncReplicas is {min_in_sync_replicas}"
                ),
            )
        })
    }
}

/// A write in the CommitLog that may still wait for its flush or a slave.
pub struct PendingWrite {
    stored: PendingPut,
    /// SYNC_MASTER or controller mode: who must confirm it, by which rule.
    replica_wait: Option<(Arc<HaMaster>, AckRule)>,
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
        let Some((ha, rule)) = self.replica_wait else {
            return result;
        };
        let end = match &result.append {
            Some(append) if result.status == PutMessageStatus::PutOk => append.end_offset,
            _ => return result,
        };
        if let AckRule::Controller {
            all_ack,
            in_sync_replicas,
            ..
        } = rule
        {
            if !wait_in_sync(&ha, end, all_ack, in_sync_replicas, self.timeout).await {
                result.status = PutMessageStatus::FlushSlaveTimeout;
            }
            return result;
        }
        if !ha.has_slaves() || end - ha.acked_offset() > SLAVE_FALL_BEHIND_MAX {
            result.status = PutMessageStatus::SlaveNotAvailable;
        } else if !ha.wait_for_slave(end, self.timeout).await {
            result.status = PutMessageStatus::FlushSlaveTimeout;
        }
        result
    }
}

/// Controller mode: waits until every SyncStateSet member (`all_ack`) or `in_sync_replicas`
/// replicas have `end`; false on timeout. A broker no longer master stops waiting (the write
/// is not acknowledged).
async fn wait_in_sync(
    ha: &HaMaster,
    end: i64,
    all_ack: bool,
    in_sync_replicas: usize,
    timeout: std::time::Duration,
) -> bool {
    let Some(controlled) = ha.controlled() else {
        return true;
    };
    let mut progress = controlled.sync.progress();
    let done = || {
        if all_ack {
            controlled.sync.all_members_have(end)
        } else {
            controlled.sync.replicas_with(end) >= in_sync_replicas
        }
    };
    tokio::time::timeout(timeout, async {
        loop {
            progress.borrow_and_update();
            if controlled.term().is_none() {
                return false;
            }
            if done() {
                return true;
            }
            if progress.changed().await.is_err() {
                return false;
            }
        }
    })
    .await
    .unwrap_or(false)
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
        PutMessageStatus::InSyncReplicasNotEnough => Err(ProcessorError::system(
            result
                .remark
                .clone()
                .unwrap_or_else(|| "in-sync replicas not enough".into()),
        )),
        PutMessageStatus::UnknownError => Err(ProcessorError::system(
            result
                .remark
                .clone()
                .unwrap_or_else(|| "UNKNOWN_ERROR".into()),
        )),
    }
}
