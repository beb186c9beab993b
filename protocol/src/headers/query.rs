//! Message query headers (protocol.md 2.6).

use super::command_header;

command_header! {
    /// QUERY_MESSAGE (12).
    pub struct QueryMessageRequestHeader {
        required topic: String = "topic",
        required key: String = "key",
        required max_num: i32 = "maxNum",
        required begin_timestamp: i64 = "beginTimestamp",
        required end_timestamp: i64 = "endTimestamp",
        /// Extra field, not part of Java's class: look the key up as a UNIQ_KEY.
        optional unique_key_query: bool = "_UNIQUE_KEY_QUERY",
    }
}

command_header! {
    /// Response to QUERY_MESSAGE.
    pub struct QueryMessageResponseHeader {
        required index_last_update_timestamp: i64 = "indexLastUpdateTimestamp",
        required index_last_update_phyoffset: i64 = "indexLastUpdatePhyoffset",
    }
}

command_header! {
    /// VIEW_MESSAGE_BY_ID (33).
    pub struct ViewMessageRequestHeader {
        /// Physical CommitLog offset.
        required offset: i64 = "offset",
        optional topic: String = "topic",
    }
}
