//! RocketMQ 5 POP consumption headers (POP_MESSAGE, ACK_MESSAGE, PEEK_MESSAGE,
//! CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION, POLLING_INFO), with the Java classes' field
//! names. The receipt handle they carry (`extraInfo`) is read and written by
//! [`crate::pop`].

use super::command_header;

command_header! {
    /// POP_MESSAGE (200050).
    pub struct PopMessageRequestHeader {
        required consumer_group: String = "consumerGroup",
        required topic: String = "topic",
        /// -1 = any queue of the topic.
        required queue_id: i32 = "queueId",
        required max_msg_nums: i32 = "maxMsgNums",
        /// How long (ms) popped messages stay invisible to other POPs.
        required invisible_time: i64 = "invisibleTime",
        /// How long (ms) the broker may hold the request when nothing is there.
        required poll_time: i64 = "pollTime",
        /// When the client sent it (ms); the broker fills it in when absent or 0.
        optional born_time: i64 = "bornTime",
        /// Where a group without an offset starts: 0 = MIN (first), 1 = MAX (last).
        optional init_mode: i32 = "initMode",
        /// `TAG` (default) or `SQL92`.
        optional exp_type: String = "expType",
        optional exp: String = "exp",
        /// Orderly (FIFO) POP: one batch per queue in flight.
        optional order: bool = "order",
        /// An orderly POP retried with the same id is not blocked by its own batch.
        optional attempt_id: String = "attemptId",
    }
}

impl PopMessageRequestHeader {
    pub fn is_order(&self) -> bool {
        self.order.unwrap_or(false)
    }
}

command_header! {
    /// Response to POP_MESSAGE.
    pub struct PopMessageResponseHeader {
        required pop_time: i64 = "popTime",
        required invisible_time: i64 = "invisibleTime",
        required revive_qid: i32 = "reviveQid",
        /// Messages left in the queues read.
        required rest_num: i64 = "restNum",
        /// `retry queueId startOffset` per queue read, `;`-separated.
        optional start_offset_info: String = "startOffsetInfo",
        /// `retry queueId offset,offset...` per queue read, `;`-separated.
        optional msg_offset_info: String = "msgOffsetInfo",
        /// Orderly POP: `retry qo<queueId>%<offset> count` per message and `retry queueId
        /// count` per queue, `;`-separated.
        optional order_count_info: String = "orderCountInfo",
    }
}

command_header! {
    /// ACK_MESSAGE (200051).
    pub struct AckMessageRequestHeader {
        required consumer_group: String = "consumerGroup",
        /// The topic the message was read from (the POP retry topic for retried ones).
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        /// The receipt handle (the message's `POP_CK`).
        required extra_info: String = "extraInfo",
        /// The message's queue offset.
        required offset: i64 = "offset",
        /// RocketMQ 5.5: the lite topic of a lite consumer's message (its queue offset is then
        /// the light message queue's).
        optional lite_topic: String = "liteTopic",
    }
}

command_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME (200053).
    pub struct ChangeInvisibleTimeRequestHeader {
        required consumer_group: String = "consumerGroup",
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        required extra_info: String = "extraInfo",
        required offset: i64 = "offset",
        /// The new invisible time (ms), counted from now.
        required invisible_time: i64 = "invisibleTime",
        /// RocketMQ 5.5: as [`AckMessageRequestHeader::lite_topic`].
        optional lite_topic: String = "liteTopic",
    }
}

command_header! {
    /// POP_LITE_MESSAGE (200070): a lite consumer's POP of the lite topics it subscribed to
    /// under `topic` (the parent).
    pub struct PopLiteMessageRequestHeader {
        required client_id: String = "clientId",
        required consumer_group: String = "consumerGroup",
        required topic: String = "topic",
        required max_msg_num: i32 = "maxMsgNum",
        required invisible_time: i64 = "invisibleTime",
        required poll_time: i64 = "pollTime",
        required born_time: i64 = "bornTime",
        optional attempt_id: String = "attemptId",
    }
}

command_header! {
    /// POP_LITE_MESSAGE's answer. `orderCountInfo`: each message's earlier deliveries, in
    /// body order, `;` separated.
    pub struct PopLiteMessageResponseHeader {
        required pop_time: i64 = "popTime",
        required invisible_time: i64 = "invisibleTime",
        required revive_qid: i32 = "reviveQid",
        optional start_offset_info: String = "startOffsetInfo",
        optional msg_offset_info: String = "msgOffsetInfo",
        optional order_count_info: String = "orderCountInfo",
    }
}

command_header! {
    /// NOTIFY_UNSUBSCRIBE_LITE (200073), broker to client: the client no longer receives
    /// `liteTopic` (another client of its group took it over).
    pub struct NotifyUnsubscribeLiteRequestHeader {
        required lite_topic: String = "liteTopic",
        required consumer_group: String = "consumerGroup",
        required client_id: String = "clientId",
    }
}

command_header! {
    /// Response to CHANGE_MESSAGE_INVISIBLETIME: the new handle's pop time and invisible time.
    pub struct ChangeInvisibleTimeResponseHeader {
        required pop_time: i64 = "popTime",
        required invisible_time: i64 = "invisibleTime",
        required revive_qid: i32 = "reviveQid",
    }
}

command_header! {
    /// PEEK_MESSAGE (200052): read without popping.
    pub struct PeekMessageRequestHeader {
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        required max_msg_nums: i32 = "maxMsgNums",
        required consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// NOTIFICATION (200054): wait until the queue (or any, -1) has a message to pop.
    pub struct NotificationRequestHeader {
        required consumer_group: String = "consumerGroup",
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
        required poll_time: i64 = "pollTime",
        optional born_time: i64 = "bornTime",
        optional order: bool = "order",
        optional attempt_id: String = "attemptId",
    }
}

command_header! {
    /// Response to NOTIFICATION.
    pub struct NotificationResponseHeader {
        required has_msg: bool = "hasMsg",
    }
}

command_header! {
    /// POLLING_INFO (200055): how many POPs wait on a queue.
    pub struct PollingInfoRequestHeader {
        required consumer_group: String = "consumerGroup",
        required topic: String = "topic",
        required queue_id: i32 = "queueId",
    }
}

command_header! {
    /// Response to POLLING_INFO.
    pub struct PollingInfoResponseHeader {
        required polling_num: i32 = "pollingNum",
    }
}

#[cfg(test)]
mod tests {
    use super::super::CommandHeader;
    use super::*;
    use crate::ExtFields;

    #[test]
    fn pop_header_reads_java_fields() {
        let fields: ExtFields = [
            ("consumerGroup", "g"),
            ("topic", "T"),
            ("queueId", "-1"),
            ("maxMsgNums", "32"),
            ("invisibleTime", "60000"),
            ("pollTime", "15000"),
            ("bornTime", "1700000000000"),
            ("initMode", "0"),
            ("expType", "TAG"),
            ("exp", "a || b"),
            ("order", "false"),
        ]
        .into_iter()
        .collect();
        let h = PopMessageRequestHeader::from_ext_fields(&fields).expect("decodes");
        assert_eq!(h.queue_id, -1);
        assert_eq!(h.exp.as_deref(), Some("a || b"));
        assert!(!h.is_order());
        assert_eq!(
            PopMessageRequestHeader::from_ext_fields(&h.to_ext_fields()),
            Ok(h)
        );
    }

    #[test]
    fn response_headers_round_trip() {
        let h = PopMessageResponseHeader {
            pop_time: 1,
            invisible_time: 2,
            revive_qid: 3,
            rest_num: 4,
            start_offset_info: Some("0 1 5".into()),
            msg_offset_info: Some("0 1 5,6".into()),
            order_count_info: None,
        };
        let fields = h.to_ext_fields();
        assert_eq!(fields.get("startOffsetInfo"), Some("0 1 5"));
        assert_eq!(PopMessageResponseHeader::from_ext_fields(&fields), Ok(h));
        let n = NotificationResponseHeader { has_msg: true };
        assert_eq!(n.to_ext_fields().get("hasMsg"), Some("true"));
    }
}

command_header! {
    /// GET_PARENT_TOPIC_INFO (200075).
    pub struct GetParentTopicInfoRequestHeader {
        required topic: String = "topic",
    }
}

command_header! {
    /// GET_LITE_TOPIC_INFO (200076).
    pub struct GetLiteTopicInfoRequestHeader {
        required parent_topic: String = "parentTopic",
        required lite_topic: String = "liteTopic",
    }
}

command_header! {
    /// GET_LITE_CLIENT_INFO (200077); `maxCount` (default 1000, at most 10,000) bounds the
    /// lite topics answered.
    pub struct GetLiteClientInfoRequestHeader {
        required parent_topic: String = "parentTopic",
        required group: String = "group",
        required client_id: String = "clientId",
        optional max_count: i32 = "maxCount",
    }
}

command_header! {
    /// GET_LITE_GROUP_INFO (200078): one lite topic's lag, or the `topK` largest.
    pub struct GetLiteGroupInfoRequestHeader {
        required group: String = "group",
        optional lite_topic: String = "liteTopic",
        optional top_k: i32 = "topK",
    }
}

command_header! {
    /// TRIGGER_LITE_DISPATCH (200079): a client's (or a group's) lite topics with messages
    /// become news again.
    pub struct TriggerLiteDispatchRequestHeader {
        required group: String = "group",
        optional client_id: String = "clientId",
    }
}
