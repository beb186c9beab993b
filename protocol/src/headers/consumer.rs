//! Consumer request headers (protocol.md 2.5).

use super::command_header;

command_header! {
    /// PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361).
    pub struct PullMessageRequestHeader {
        required consumer_group: String = "consumerGroup",
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        required queue_offset: i64 = "queueOffset",
        required max_msg_nums: i32 = "maxMsgNums",
        required sys_flag: i32 = "sysFlag",
        required commit_offset: i64 = "commitOffset",
        required suspend_timeout_millis: i64 = "suspendTimeoutMillis",
        optional subscription: String = "subscription",
        required sub_version: i64 = "subVersion",
        optional expression_type: String = "expressionType",
        optional max_msg_bytes: i32 = "maxMsgBytes",
    }
}

command_header! {
    /// Response to PULL_MESSAGE: all four fields on every outcome.
    pub struct PullMessageResponseHeader {
        required suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        required next_begin_offset: i64 = "nextBeginOffset",
        required min_offset: i64 = "minOffset",
        required max_offset: i64 = "maxOffset",
    }
}

command_header! {
    /// QUERY_CONSUMER_OFFSET (14).
    pub struct QueryConsumerOffsetRequestHeader {
        required consumer_group: String = "consumerGroup",
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        optional set_zero_if_not_found: bool = "setZeroIfNotFound",
    }
}

command_header! {
    /// Response carrying one offset (QUERY_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET, SEARCH_OFFSET).
    pub struct OffsetResponseHeader {
        required offset: i64 = "offset",
    }
}

command_header! {
    /// UPDATE_CONSUMER_OFFSET (15).
    pub struct UpdateConsumerOffsetRequestHeader {
        required consumer_group: String = "consumerGroup",
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        required commit_offset: i64 = "commitOffset",
    }
}

command_header! {
    /// GET_CONSUMER_LIST_BY_GROUP (38).
    pub struct GetConsumerListByGroupRequestHeader {
        required consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// NOTIFY_CONSUMER_IDS_CHANGED (40), broker to consumer.
    pub struct NotifyConsumerIdsChangedRequestHeader {
        required consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// CONSUMER_SEND_MSG_BACK (36).
    pub struct ConsumerSendMsgBackRequestHeader {
        /// Physical CommitLog offset of the returned message.
        required offset: i64 = "offset",
        required group: String = "group",
        /// 0 = broker decides, negative = straight to the DLQ, n > 0 = that level.
        required delay_level: i32 = "delayLevel",
        optional origin_msg_id: String = "originMsgId",
        optional origin_topic: String = "originTopic",
        optional unit_mode: bool = "unitMode",
        optional max_reconsume_times: i32 = "maxReconsumeTimes",
    }
}

command_header! {
    /// GET_MAX_OFFSET (30).
    pub struct GetMaxOffsetRequestHeader {
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        optional committed: bool = "committed",
    }
}

command_header! {
    /// GET_MIN_OFFSET (31).
    pub struct GetMinOffsetRequestHeader {
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
    }
}

command_header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP (29).
    pub struct SearchOffsetRequestHeader {
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        required timestamp: i64 = "timestamp",
        optional boundary_type: String = "boundaryType",
    }
}

command_header! {
    /// GET_EARLIEST_MSG_STORETIME (32).
    pub struct GetEarliestMsgStoretimeRequestHeader {
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
    }
}

command_header! {
    /// Response to GET_EARLIEST_MSG_STORETIME.
    pub struct GetEarliestMsgStoretimeResponseHeader {
        required timestamp: i64 = "timestamp",
    }
}
