//! DELETE_EXPIRED_COMMITLOG: runs retention now, as at a `deleteWhen` hour (RocketMQ 5's
//! `executeDeleteFilesManually`), for an operator freeing space on a full disk.

use std::sync::Arc;

use stellmq_remoting::net::{
    ProcessFuture, ProcessResult, ProcessorError, RequestContext, RequestProcessor,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use stellmq_store::MessageStore;

pub struct StoreAdminProcessor {
    pub store: Arc<MessageStore>,
}

async fn delete_expired(store: Arc<MessageStore>, request: RemotingCommand) -> ProcessResult {
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

impl RequestProcessor for StoreAdminProcessor {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        match request.request_code_typed() {
            Some(RequestCode::DELETE_EXPIRED_COMMITLOG) => {
                Box::pin(delete_expired(self.store.clone(), request))
            }
            _ => Box::pin(std::future::ready(Ok(Some(request.not_supported_to())))),
        }
    }
}
