//! Consume-queue housekeeping an operator asks for (RocketMQ's `cleanExpiredConsumerQueue`
//! and `cleanUnusedTopic`, behind `mqadmin cleanExpiredCQ` and `cleanUnusedTopic`): queues
//! whose every message has left the CommitLog, and queues of topics the broker no longer
//! knows, are deleted with their files. A later message to such a queue starts it afresh
//! at offset 0, as in RocketMQ.

use crate::error::StoreError;
use crate::store::MessageStore;

impl MessageStore {
    /// Deletes every ConsumeQueue with entries all of whose messages are below the
    /// CommitLog's first offset, except those of topics `keep` names. Returns the queues
    /// deleted.
    pub fn clean_expired_consume_queues(
        &self,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<(String, i32)>, StoreError> {
        let min = self.commit_log_min_offset();
        let mut deleted = Vec::new();
        for cq in self.inner.queues.all() {
            let (topic, queue_id) = (cq.topic().to_owned(), cq.queue_id());
            if keep(&topic) || cq.max_offset() == 0 || cq.max_phys_offset() > min {
                continue;
            }
            if self.inner.queues.delete_queue(&topic, queue_id)? {
                self.inner.commit_log.forget_queue(&topic, queue_id);
                tracing::info!(event = "CONSUME_QUEUE_EXPIRED", %topic, queue_id, commit_log_min = min, "consume queue deleted: its messages left the CommitLog");
                deleted.push((topic, queue_id));
            }
        }
        Ok(deleted)
    }

    /// Deletes the ConsumeQueues of every topic `in_use` does not name. Returns the topics
    /// deleted.
    pub fn clean_unused_topics(
        &self,
        in_use: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, StoreError> {
        let mut deleted = Vec::new();
        for topic in self.topics() {
            if in_use(&topic) {
                continue;
            }
            self.delete_topic(&topic)?;
            deleted.push(topic);
        }
        Ok(deleted)
    }
}
