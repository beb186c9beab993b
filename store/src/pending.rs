//! A write that is in the CommitLog and may still wait for its SYNC_FLUSH group commit.

use std::time::Duration;

use tokio::sync::oneshot;

use crate::inner::FlushError;
use crate::message::{PutMessageResult, PutMessageStatus};

/// What [`crate::MessageStore::append_messages`] returns: the append's result, and for a
/// SYNC_FLUSH write the flush to wait for with [`PendingPut::wait`].
pub struct PendingPut {
    pub(crate) result: PutMessageResult,
    pub(crate) flush: Option<(oneshot::Receiver<Result<(), FlushError>>, Duration)>,
}

impl PendingPut {
    /// A result with nothing left to wait for.
    pub fn done(result: PutMessageResult) -> Self {
        Self {
            result,
            flush: None,
        }
    }

    /// Whether [`Self::wait`] will wait for a flush.
    pub fn waits_for_flush(&self) -> bool {
        self.flush.is_some()
    }

    /// The final result: the append's, or after the flush `PutOk`, `FlushDiskTimeout` when
    /// it took longer than `syncFlushTimeout`, or a failure when it failed.
    pub async fn wait(self) -> PutMessageResult {
        let Some((flushed, timeout)) = self.flush else {
            return self.result;
        };
        let status = match tokio::time::timeout(timeout, flushed).await {
            Ok(Ok(Ok(()))) => PutMessageStatus::PutOk,
            Ok(Ok(Err(reason))) => {
                return PutMessageResult::failed(
                    PutMessageStatus::ServiceNotAvailable,
                    format!("flush failed: {reason}"),
                )
            }
            Ok(Err(_)) => {
                return PutMessageResult::failed(
                    PutMessageStatus::ServiceNotAvailable,
                    "the store stopped before the flush",
                )
            }
            Err(_) => PutMessageStatus::FlushDiskTimeout,
        };
        PutMessageResult {
            status,
            ..self.result
        }
    }
}
