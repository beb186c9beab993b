//! What one pull of the [`super::PullConsumer`] returns (RocketMQ's `PullResult`), read from
//! the broker's PULL_MESSAGE response: the status its code means, where to pull next, the
//! queue's bounds and the messages, filtered again by tag as Java clients do.

use std::sync::Arc;

use stellmq_remoting::protocol::body::{MessageQueue, SubscriptionData};
use stellmq_remoting::protocol::headers::{CommandHeader, PullMessageResponseHeader};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::error::ClientError;
use crate::message::ReceivedMessage;
use crate::request::refusal;

/// RocketMQ's `PullStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullStatus {
    /// Messages were found (those matching the expression are in the result).
    Found,
    /// Nothing at or after the offset yet.
    NoNewMsg,
    /// Messages were there, none matching the expression.
    NoMatchedMsg,
    /// The offset is outside the queue: pull again from `next_begin_offset`.
    OffsetIllegal,
}

/// The outcome of one pull.
#[derive(Debug, Clone)]
pub struct PullResult {
    pub status: PullStatus,
    /// Where the next pull of the queue starts.
    pub next_begin_offset: i64,
    /// The queue's first and next-to-write offsets when the broker answered.
    pub min_offset: i64,
    pub max_offset: i64,
    pub messages: Vec<ReceivedMessage>,
}

/// A pull response of `addr` for `queue` (as the application named it), and the broker id
/// the broker suggests pulling from next. Codes other than the four pull statuses are the
/// broker's refusal.
pub(crate) fn read(
    addr: &str,
    response: RemotingCommand,
    queue: &MessageQueue,
    sub: &SubscriptionData,
    namespace: Option<&Arc<str>>,
) -> Result<(PullResult, i64), ClientError> {
    let status = match response.response_code() {
        Some(ResponseCode::SUCCESS) => PullStatus::Found,
        Some(ResponseCode::PULL_NOT_FOUND) => PullStatus::NoNewMsg,
        Some(ResponseCode::PULL_RETRY_IMMEDIATELY) => PullStatus::NoMatchedMsg,
        Some(ResponseCode::PULL_OFFSET_MOVED) => PullStatus::OffsetIllegal,
        _ => return Err(refusal(addr, &response).into()),
    };
    let header = PullMessageResponseHeader::from_ext_fields(&response.ext_fields)?;
    let messages = if status == PullStatus::Found {
        MessageRecord::decode_all(response.body, false)?
            .into_iter()
            .filter(|r| wanted(sub, r))
            .map(|r| ReceivedMessage::new(r, queue.clone()).in_namespace(namespace))
            .collect()
    } else {
        Vec::new()
    };
    let result = PullResult {
        status,
        next_begin_offset: header.next_begin_offset,
        min_offset: header.min_offset,
        max_offset: header.max_offset,
        messages,
    };
    Ok((result, header.suggest_which_broker_id))
}

/// The broker filters by tag hash code; a colliding tag is dropped here by its name.
fn wanted(sub: &SubscriptionData, record: &MessageRecord) -> bool {
    sub.tags_set.is_empty()
        || record
            .properties
            .tags()
            .is_some_and(|t| sub.tags_set.contains(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_remoting::protocol::ExtFields;

    fn queue() -> MessageQueue {
        MessageQueue {
            broker_name: "b".into(),
            queue_id: 1,
            topic: "T".into(),
        }
    }

    fn response(code: ResponseCode) -> RemotingCommand {
        let mut fields = ExtFields::new();
        for (k, v) in [
            ("suggestWhichBrokerId", "1"),
            ("nextBeginOffset", "7"),
            ("minOffset", "2"),
            ("maxOffset", "9"),
        ] {
            fields.insert(k, v);
        }
        RemotingCommand::new_response(code, None).with_ext_fields(fields)
    }

    #[test]
    fn codes_become_pull_statuses() {
        let sub = SubscriptionData::tags("T", "*", 0);
        for (code, status) in [
            (ResponseCode::PULL_NOT_FOUND, PullStatus::NoNewMsg),
            (
                ResponseCode::PULL_RETRY_IMMEDIATELY,
                PullStatus::NoMatchedMsg,
            ),
            (ResponseCode::PULL_OFFSET_MOVED, PullStatus::OffsetIllegal),
        ] {
            let (result, suggested) =
                read("a", response(code), &queue(), &sub, None).expect("a pull status");
            assert_eq!(result.status, status);
            assert_eq!(
                (
                    result.next_begin_offset,
                    result.min_offset,
                    result.max_offset
                ),
                (7, 2, 9)
            );
            assert_eq!(suggested, 1);
        }
    }

    #[test]
    fn other_codes_are_refusals() {
        let sub = SubscriptionData::tags("T", "*", 0);
        let err = read(
            "a",
            response(ResponseCode::SUBSCRIPTION_NOT_LATEST),
            &queue(),
            &sub,
            None,
        )
        .expect_err("refused");
        assert_eq!(
            err.remote_code(),
            Some(ResponseCode::SUBSCRIPTION_NOT_LATEST.as_i32())
        );
    }
}
