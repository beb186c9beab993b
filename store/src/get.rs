//! Reading a queue: RocketMQ's GetMessage statuses and limits (protocol.md 2.5).

use bytes::Bytes;

/// RocketMQ's `GetMessageStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetMessageStatus {
    Found,
    NoMatchedMessage,
    MessageWasRemoving,
    OffsetFoundNull,
    OffsetOverflowBadly,
    OffsetOverflowOne,
    OffsetTooSmall,
    NoMatchedLogicQueue,
    NoMessageInQueue,
}

impl GetMessageStatus {
    /// The Java constant name, which pull responses carry as their remark.
    pub fn name(self) -> &'static str {
        match self {
            GetMessageStatus::Found => "FOUND",
            GetMessageStatus::NoMatchedMessage => "NO_MATCHED_MESSAGE",
            GetMessageStatus::MessageWasRemoving => "MESSAGE_WAS_REMOVING",
            GetMessageStatus::OffsetFoundNull => "OFFSET_FOUND_NULL",
            GetMessageStatus::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
            GetMessageStatus::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
            GetMessageStatus::OffsetTooSmall => "OFFSET_TOO_SMALL",
            GetMessageStatus::NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
            GetMessageStatus::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
        }
    }
}

/// The answer to one read of a queue.
#[derive(Debug, Clone)]
pub struct GetMessageResult {
    pub status: GetMessageStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    /// Raw stored records, zero-copy slices of the CommitLog, in queue order.
    pub messages: Vec<Bytes>,
    /// Queue offset of each message.
    pub queue_offsets: Vec<i64>,
    /// The data read is old enough to be "on disk" rather than in memory.
    pub suggest_pull_from_slave: bool,
}

impl GetMessageResult {
    pub fn total_bytes(&self) -> usize {
        self.messages.iter().map(Bytes::len).sum()
    }

    /// The records back to back, as a pull response body.
    pub fn concat(&self) -> Bytes {
        match self.messages.as_slice() {
            [one] => one.clone(),
            many => {
                let mut out = Vec::with_capacity(self.total_bytes());
                for m in many {
                    out.extend_from_slice(m);
                }
                Bytes::from(out)
            }
        }
    }
}

/// Decides which consume-queue entries a pull wants, by tags code.
pub trait MessageFilter: Send + Sync {
    /// First pass, on the ConsumeQueue entry's tags code.
    fn matches_tags_code(&self, tags_code: i64) -> bool;

    /// Second pass, on the stored record (for filters on properties, e.g. SQL92).
    fn matches_record(&self, _record: &Bytes) -> bool {
        true
    }
}

/// Accepts everything (`*`).
pub struct AcceptAll;

impl MessageFilter for AcceptAll {
    fn matches_tags_code(&self, _tags_code: i64) -> bool {
        true
    }
}

impl<F: Fn(i64) -> bool + Send + Sync> MessageFilter for F {
    fn matches_tags_code(&self, tags_code: i64) -> bool {
        self(tags_code)
    }
}
