//! Store housekeeping on an operator's request, as RocketMQ's admin processor runs it:
//! DELETE_EXPIRED_COMMITLOG runs retention now, as at a `deleteWhen` hour (RocketMQ 5's
//! `executeDeleteFilesManually`), for an operator freeing space on a full disk;
//! CLEAN_EXPIRED_CONSUMEQUEUE deletes consume queues whose messages have all left the
//! CommitLog; CLEAN_UNUSED_TOPIC deletes the consume queues of topics the broker no longer
//! has.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::RemotingCommand;
use stellmq_store::MessageStore;

use crate::topic::{TopicConfigManager, SCHEDULE_TOPIC};

/// LMQ topics (light message queues) live outside the topic table.
const LMQ_PREFIX: &str = "%LMQ%";

pub struct StoreAdminProcessor {
    pub store: Arc<MessageStore>,
    pub topics: Arc<TopicConfigManager>,
}

fn task_failed(e: tokio::task::JoinError) -> ProcessorError {
    ProcessorError::system(format!("the store task failed: {e}"))
}

impl StoreAdminProcessor {
    /// DELETE_EXPIRED_COMMITLOG.
    pub(crate) async fn delete_expired(self: Arc<Self>, request: RemotingCommand) -> ProcessResult {
        let store = self.store.clone();
        let deleted = tokio::task::spawn_blocking(move || store.clean_expired_files_now())
            .await
            .map_err(task_failed)?;
        tracing::info!(
            event = "COMMITLOG_CLEANED_MANUALLY",
            deleted,
            "expired CommitLog files deleted on request"
        );
        Ok(Some(request.success_to()))
    }

    /// CLEAN_EXPIRED_CONSUMEQUEUE: every queue but the delay levels' (whose messages are
    /// copies kept for later) whose messages all left the CommitLog.
    pub(crate) async fn clean_expired_queues(
        self: Arc<Self>,
        request: RemotingCommand,
    ) -> ProcessResult {
        let store = self.store.clone();
        let deleted = tokio::task::spawn_blocking(move || {
            store.clean_expired_consume_queues(|topic| topic == SCHEDULE_TOPIC)
        })
        .await
        .map_err(task_failed)?
        .map_err(|e| ProcessorError::system(format!("cleaning consume queues failed: {e}")))?;
        tracing::info!(
            event = "CONSUME_QUEUES_CLEANED",
            deleted = deleted.len(),
            "expired consume queues deleted on request"
        );
        Ok(Some(request.success_to()))
    }

    /// CLEAN_UNUSED_TOPIC: the consume queues of topics neither in the topic table nor
    /// system topics nor LMQ topics.
    pub(crate) async fn clean_unused_topics(
        self: Arc<Self>,
        request: RemotingCommand,
    ) -> ProcessResult {
        let (store, topics) = (self.store.clone(), self.topics.clone());
        let deleted = tokio::task::spawn_blocking(move || {
            store.clean_unused_topics(|topic| {
                topics.contains(topic)
                    || topics.is_system_topic(topic)
                    || topic.starts_with(LMQ_PREFIX)
            })
        })
        .await
        .map_err(task_failed)?
        .map_err(|e| ProcessorError::system(format!("cleaning unused topics failed: {e}")))?;
        tracing::warn!(
            event = "UNUSED_TOPICS_CLEANED",
            topics = ?deleted,
            "consume queues of unused topics deleted on request"
        );
        Ok(Some(request.success_to()))
    }
}

#[cfg(test)]
mod tests;
