//! Broker admin request headers (protocol.md 2.7).

use super::command_header;

command_header! {
    /// UPDATE_AND_CREATE_TOPIC (17).
    pub struct CreateTopicRequestHeader {
        required topic: String = "topic",
        required default_topic: String = "defaultTopic",
        required read_queue_nums: i32 = "readQueueNums",
        required write_queue_nums: i32 = "writeQueueNums",
        required perm: i32 = "perm",
        required topic_filter_type: String = "topicFilterType",
        optional topic_sys_flag: i32 = "topicSysFlag",
        optional order: bool = "order",
        optional attributes: String = "attributes",
        optional force: bool = "force",
    }
}

command_header! {
    /// DELETE_TOPIC_IN_BROKER (215).
    pub struct DeleteTopicRequestHeader {
        required topic: String = "topic",
    }
}

command_header! {
    /// GET_TOPIC_STATS_INFO (202).
    pub struct GetTopicStatsInfoRequestHeader {
        required topic: String = "topic",
    }
}

command_header! {
    /// GET_CONSUME_STATS (208).
    pub struct GetConsumeStatsRequestHeader {
        required consumer_group: String = "consumerGroup",
        optional topic: String = "topic",
    }
}

command_header! {
    /// GET_CONSUMER_CONNECTION_LIST (203).
    pub struct GetConsumerConnectionListRequestHeader {
        required consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// GET_PRODUCER_CONNECTION_LIST (204).
    pub struct GetProducerConnectionListRequestHeader {
        required producer_group: String = "producerGroup",
    }
}

command_header! {
    /// QUERY_TOPIC_CONSUME_BY_WHO (300).
    pub struct QueryTopicConsumeByWhoRequestHeader {
        required topic: String = "topic",
    }
}

command_header! {
    /// GET_TOPIC_CONFIG (351): one topic's config (RocketMQ 5; what its proxy reads a topic's
    /// message type from).
    pub struct GetTopicConfigRequestHeader {
        required topic: String = "topic",
        /// Logic (static) queue mapping wanted; StellMQ has no static topics.
        optional lo: bool = "lo",
    }
}

command_header! {
    /// GET_SUBSCRIPTIONGROUP_CONFIG (352): one group's config (RocketMQ 5).
    pub struct GetSubscriptionGroupConfigRequestHeader {
        required group: String = "group",
    }
}

command_header! {
    /// DELETE_SUBSCRIPTIONGROUP (207).
    pub struct DeleteSubscriptionGroupRequestHeader {
        required group_name: String = "groupName",
        /// 4.x name.
        optional remove_offset: bool = "removeOffset",
        /// 5.x name.
        optional clean_offset: bool = "cleanOffset",
    }
}

command_header! {
    /// INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220).
    pub struct ResetOffsetRequestHeader {
        required topic: String = "topic",
        required group: String = "group",
        /// Milliseconds; -1 resets to the max offset.
        required timestamp: i64 = "timestamp",
        optional is_force: bool = "isForce",
        optional queue_id: i32 = "queueId",
        optional offset: i64 = "offset",
    }
}

command_header! {
    /// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) and GET_CONSUMER_STATUS_FROM_CLIENT (221).
    pub struct GetConsumerStatusRequestHeader {
        required topic: String = "topic",
        required group: String = "group",
        optional client_addr: String = "clientAddr",
    }
}

command_header! {
    /// GET_CONSUMER_RUNNING_INFO (307), relayed by the broker to the client.
    pub struct GetConsumerRunningInfoRequestHeader {
        required consumer_group: String = "consumerGroup",
        required client_id: String = "clientId",
        optional jstack_enable: bool = "jstackEnable",
    }
}

command_header! {
    /// CONSUME_MESSAGE_DIRECTLY (309).
    pub struct ConsumeMessageDirectlyResultRequestHeader {
        required consumer_group: String = "consumerGroup",
        optional client_id: String = "clientId",
        optional msg_id: String = "msgId",
        optional broker_name: String = "brokerName",
        optional topic: String = "topic",
        /// Added by the broker as it relays (5.x).
        optional topic_sys_flag: i32 = "topicSysFlag",
        optional group_sys_flag: i32 = "groupSysFlag",
    }
}

command_header! {
    /// VIEW_BROKER_STATS_DATA (315).
    pub struct ViewBrokerStatsDataRequestHeader {
        required stats_name: String = "statsName",
        required stats_key: String = "statsKey",
    }
}

command_header! {
    /// Response to GET_BROKER_CONFIG (26): the DataVersion as a JSON string.
    pub struct GetBrokerConfigResponseHeader {
        required version: String = "version",
    }
}

command_header! {
    /// QUERY_CONSUME_QUEUE (321): `count` entries of a ConsumeQueue from `index`.
    pub struct QueryConsumeQueueRequestHeader {
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        required index: i64 = "index",
        required count: i32 = "count",
        optional consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// CLONE_GROUP_OFFSET (314).
    pub struct CloneGroupOffsetRequestHeader {
        required src_group: String = "srcGroup",
        required dest_group: String = "destGroup",
        optional topic: String = "topic",
        optional offline: bool = "offline",
    }
}

command_header! {
    /// GET_BROKER_CONSUME_STATS (317).
    pub struct GetConsumeStatsInBrokerHeader {
        optional is_order: bool = "isOrder",
        optional timeout_millis: i64 = "timeoutMillis",
    }
}

command_header! {
    /// QUERY_CONSUME_TIME_SPAN (303).
    pub struct QueryConsumeTimeSpanRequestHeader {
        required topic: String = "topic",
        required group: String = "group",
    }
}

command_header! {
    /// QUERY_CORRECTION_OFFSET (308).
    pub struct QueryCorrectionOffsetHeader {
        /// Comma-separated groups to leave out.
        optional filter_groups: String = "filterGroups",
        required compare_group: String = "compareGroup",
        required topic: String = "topic",
    }
}

command_header! {
    /// RESUME_CHECK_HALF_MESSAGE (323).
    pub struct ResumeCheckHalfMessageRequestHeader {
        /// The half message's offset message id.
        optional msg_id: String = "msgId",
        /// 5.x.
        optional topic: String = "topic",
    }
}

command_header! {
    /// GET_ALL_TOPIC_CONFIG (21), RocketMQ 5's paged form (`enableSplitMetadata`): the
    /// topics from `topicSeq` in name order, at most `maxTopicNum`; from the first when
    /// `dataVersion` is not the broker's. Without any of them, the whole table.
    pub struct GetAllTopicConfigRequestHeader {
        optional topic_seq: i32 = "topicSeq",
        optional data_version: String = "dataVersion",
        optional max_topic_num: i32 = "maxTopicNum",
    }
}

command_header! {
    /// Response to GET_ALL_TOPIC_CONFIG: the broker's topic count.
    pub struct GetAllTopicConfigResponseHeader {
        optional total_topic_num: i32 = "totalTopicNum",
    }
}

command_header! {
    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201), RocketMQ 5's paged form, as
    /// [`GetAllTopicConfigRequestHeader`] for groups.
    pub struct GetAllSubscriptionGroupRequestHeader {
        optional group_seq: i32 = "groupSeq",
        optional data_version: String = "dataVersion",
        optional max_group_num: i32 = "maxGroupNum",
    }
}

command_header! {
    /// Response to GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the broker's group count.
    pub struct GetAllSubscriptionGroupResponseHeader {
        optional total_group_num: i32 = "totalGroupNum",
    }
}
