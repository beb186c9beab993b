//! Offsets: a queue's min, max and by-time offsets, and a group's consumer offsets (update,
//! reset by time, clone to another group).

use stellmq_remoting::protocol::body::ResetOffsetBody;
use stellmq_remoting::protocol::headers::{
    CloneGroupOffsetRequestHeader, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader,
    OffsetResponseHeader, ResetOffsetRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{read, request};

impl AdminClient {
    pub async fn max_offset(
        &self,
        broker: &str,
        topic: &str,
        queue_id: i32,
    ) -> Result<i64, ClientError> {
        let header = GetMaxOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            committed: None,
        };
        self.offset(broker, request(RequestCode::GET_MAX_OFFSET, &header))
            .await
    }

    pub async fn min_offset(
        &self,
        broker: &str,
        topic: &str,
        queue_id: i32,
    ) -> Result<i64, ClientError> {
        let header = GetMinOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
        };
        self.offset(broker, request(RequestCode::GET_MIN_OFFSET, &header))
            .await
    }

    pub async fn search_offset(
        &self,
        broker: &str,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
    ) -> Result<i64, ClientError> {
        let header = SearchOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            timestamp,
            boundary_type: None,
        };
        self.offset(
            broker,
            request(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &header),
        )
        .await
    }

    /// The offset in the response header of GET_MAX_OFFSET, GET_MIN_OFFSET and
    /// SEARCH_OFFSET_BY_TIMESTAMP.
    async fn offset(&self, broker: &str, request: RemotingCommand) -> Result<i64, ClientError> {
        let header: OffsetResponseHeader =
            self.ask(To::Addr(broker), request, read::header).await?;
        Ok(header.offset)
    }

    pub async fn update_consumer_offset(
        &self,
        broker: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<(), ClientError> {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            commit_offset: offset,
        };
        let request = request(RequestCode::UPDATE_CONSUMER_OFFSET, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// INVOKE_BROKER_TO_RESET_OFFSET on one broker: the group's online consumers move to the
    /// offsets of `timestamp`. Without one online the broker refuses with CONSUMER_NOT_ONLINE
    /// (see [`ClientError::remote_code`]).
    pub async fn reset_offset_by_time(
        &self,
        broker: &str,
        group: &str,
        topic: &str,
        timestamp: i64,
        force: bool,
    ) -> Result<ResetOffsetBody, ClientError> {
        let header = ResetOffsetRequestHeader {
            topic: topic.to_owned(),
            group: group.to_owned(),
            timestamp,
            is_force: Some(force),
            queue_id: None,
            offset: None,
        };
        let request = request(RequestCode::INVOKE_BROKER_TO_RESET_OFFSET, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// Copies `src` group's offsets of `topic` to `dest` on `broker` (CLONE_GROUP_OFFSET).
    pub async fn clone_group_offset(
        &self,
        broker: &str,
        src: &str,
        dest: &str,
        topic: &str,
        offline: bool,
    ) -> Result<(), ClientError> {
        let header = CloneGroupOffsetRequestHeader {
            src_group: src.to_owned(),
            dest_group: dest.to_owned(),
            topic: Some(topic.to_owned()),
            offline: Some(offline),
        };
        let request = request(RequestCode::CLONE_GROUP_OFFSET, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }
}
