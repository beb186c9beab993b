//! DELETE_EXPIRED_COMMITLOG: runs retention now, as at a `deleteWhen` hour (RocketMQ 5's
//! `executeDeleteFilesManually`), for an operator freeing space on a full disk.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::RemotingCommand;
use stellmq_store::MessageStore;

pub struct StoreAdminProcessor {
    pub store: Arc<MessageStore>,
}

/// DELETE_EXPIRED_COMMITLOG.
pub(crate) async fn delete_expired(
    store: Arc<MessageStore>,
    request: RemotingCommand,
) -> ProcessResult {
    let deleted = tokio::task::spawn_blocking(move || store.clean_expired_files_now())
        .await
        .map_err(|e| ProcessorError::system(e.to_string()))?;
    tracing::info!(
        event = "COMMITLOG_CLEANED_MANUALLY",
        deleted,
        "expired CommitLog files deleted on request"
    );
    Ok(Some(request.success_to()))
}
