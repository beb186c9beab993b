//! Messages: queries by key and by offset, a plain pull of a queue, and a single send, as
//! the message commands of `mqadmin` use them.

use std::time::Duration;

use bytes::Bytes;
use stellmq_remoting::protocol::headers::{
    PullMessageRequestHeader, QueryMessageRequestHeader, SendMessageRequestHeader,
    SendMessageRequestHeaderV2, SendMessageResponseHeader, ViewMessageRequestHeader,
};
use stellmq_remoting::protocol::message::{now_ms, MessageRecord};
use stellmq_remoting::protocol::{RequestCode, ResponseCode};

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{read, request};

impl AdminClient {
    /// Messages indexed under the query's key on one broker (hash collisions are filtered by
    /// the caller, by KEYS or UNIQ_KEY).
    pub async fn query_message(
        &self,
        broker: &str,
        query: &QueryMessageRequestHeader,
    ) -> Result<Vec<MessageRecord>, ClientError> {
        let request = request(RequestCode::QUERY_MESSAGE, query);
        let found = self
            .ask_or_none(
                To::Addr(broker),
                request,
                ResponseCode::QUERY_NOT_FOUND,
                read::records,
            )
            .await?;
        Ok(found.unwrap_or_default())
    }

    /// The message at a physical offset of a broker.
    pub async fn view_message(
        &self,
        broker: &str,
        offset: i64,
    ) -> Result<MessageRecord, ClientError> {
        let header = ViewMessageRequestHeader {
            offset,
            topic: None,
        };
        let request = request(RequestCode::VIEW_MESSAGE_BY_ID, &header);
        let mut records = self.ask(To::Addr(broker), request, read::records).await?;
        records
            .pop()
            .ok_or_else(|| ClientError::Invalid("empty VIEW_MESSAGE_BY_ID body".into()))
    }

    /// Pulls up to 32 messages of a queue (no subscription filtering, no offset commit); with
    /// `suspend_ms` > 0 the broker holds the pull until a message arrives (long polling).
    /// Returns the response code, the next offset and the messages (none unless SUCCESS).
    pub async fn pull(
        &self,
        broker: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
        suspend_ms: i64,
    ) -> Result<(i32, i64, Vec<MessageRecord>), ClientError> {
        let header = PullMessageRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: if suspend_ms > 0 { 0x2 | 0x4 } else { 0x4 },
            commit_offset: 0,
            suspend_timeout_millis: suspend_ms,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        };
        // A held pull may take `suspend_ms` on top of the usual wait.
        let timeout = self.timeout + Duration::from_millis(suspend_ms.max(0) as u64);
        let response = self
            .remoting
            .invoke(broker, request(RequestCode::PULL_MESSAGE, &header), timeout)
            .await?;
        let next = response
            .ext_fields
            .get("nextBeginOffset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(offset);
        let code = response.code;
        let records = if code == ResponseCode::SUCCESS.as_i32() {
            read::records(response)?
        } else {
            Vec::new()
        };
        Ok((code, next, records))
    }

    /// Sends one message to a queue of a broker (SEND_MESSAGE_V2).
    pub async fn send(
        &self,
        broker: &str,
        topic: &str,
        queue_id: i32,
        body: Bytes,
        properties: String,
    ) -> Result<SendMessageResponseHeader, ClientError> {
        let header = SendMessageRequestHeader {
            producer_group: "TOOLS_PRODUCER".into(),
            topic: topic.to_owned(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id,
            sys_flag: 0,
            born_timestamp: now_ms(),
            flag: 0,
            properties: Some(properties),
            reconsume_times: None,
            unit_mode: None,
            batch: None,
            max_reconsume_times: None,
            broker_name: None,
        };
        let v2: SendMessageRequestHeaderV2 = header.into();
        let request = request(RequestCode::SEND_MESSAGE_V2, &v2).with_body(body);
        self.ask(To::Addr(broker), request, read::header).await
    }
}
