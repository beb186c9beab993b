//! Store housekeeping a broker runs on request: deleting expired CommitLog files, expired
//! consume queues and the consume queues of topics it no longer has.

use stellmq_remoting::protocol::RequestCode;

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{bare, read};

impl AdminClient {
    /// DELETE_EXPIRED_COMMITLOG: retention runs now.
    pub async fn delete_expired_commit_log(&self, broker: &str) -> Result<(), ClientError> {
        let request = bare(RequestCode::DELETE_EXPIRED_COMMITLOG);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// CLEAN_EXPIRED_CONSUMEQUEUE: consume queues whose messages all left the CommitLog go.
    pub async fn clean_expired_consume_queue(&self, broker: &str) -> Result<(), ClientError> {
        let request = bare(RequestCode::CLEAN_EXPIRED_CONSUMEQUEUE);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// CLEAN_UNUSED_TOPIC: consume queues of topics the broker no longer has go.
    pub async fn clean_unused_topic(&self, broker: &str) -> Result<(), ClientError> {
        let request = bare(RequestCode::CLEAN_UNUSED_TOPIC);
        self.ask(To::Addr(broker), request, read::nothing).await
    }
}
