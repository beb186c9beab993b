//! Messages between RocketMQ 5's protobuf form and the broker's: what a send's message becomes
//! (properties, checks, sysFlag) and what a stored message becomes for a consumer (system
//! properties, receipt handle, digest), as RocketMQ's proxy maps them.

use bytes::Bytes;
use prost_types::{Duration as PbDuration, Timestamp};
use stellmq_remoting::protocol::lite::{check_lite_topic, MAX_LITE_TOPIC_SIZE};
use stellmq_remoting::protocol::message::{
    now_ms, priority_of, property, sys_flag, MessageKind, MessageRecord, Properties,
};

use super::status::Refusal;
use crate::cluster::Outgoing;
use crate::config::ProxyConfig;
use crate::pb::{
    Code, DeadLetterQueue, Digest, DigestType, Encoding, Message, MessageType, Resource,
    SystemProperties,
};

/// Properties RocketMQ reserves for itself (`MessageConst.STRING_HASH_SET`): never user
/// properties, in either direction.
const SYSTEM_PROPERTIES: &[&str] = &[
    "TRACE_ON",
    "MSG_REGION",
    "KEYS",
    "TAGS",
    "WAIT",
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "BUYER_ID",
    "ORIGIN_MESSAGE_ID",
    "TRANSFER_FLAG",
    "CORRECTION_FLAG",
    "MQ2_FLAG",
    "RECONSUME_TIME",
    "UNIQ_KEY",
    "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME",
    "POP_CK",
    "POP_CK_OFFSET",
    "1ST_POP_TIME",
    "TRAN_PREPARED_QUEUE_OFFSET",
    "DUP_INFO",
    "EXTEND_UNIQ_INFO",
    "INSTANCE_ID",
    "CORRELATION_ID",
    "REPLY_TO_CLIENT",
    "TTL",
    "ARRIVE_TIME",
    "PUSH_REPLY_TIME",
    "CLUSTER",
    "MSG_TYPE",
    "INNER_MULTI_QUEUE_OFFSET",
    "TIMER_DELAY_MS",
    "TIMER_DELAY_SEC",
    "TIMER_DELIVER_MS",
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "TIMER_ROLL_TIMES",
    "TIMER_OUT_MS",
    "TIMER_DEL_UNIQKEY",
    "TIMER_DELAY_LEVEL",
    "__BORNHOST",
    "BORN_TIMESTAMP",
    "DLQ_ORIGIN_TOPIC",
    "DLQ_ORIGIN_MESSAGE_ID",
    "__CRC32#",
    "_SYS_MSG_PRIORITY_",
    "__LITE_TOPIC",
];

use property::{TIMER_DELAY_SEC, TIMER_DELIVER_MS};
const TRACE_CONTEXT: &str = "TRACE_CONTEXT";
const BORN_HOST: &str = "__BORNHOST";
const BORN_TIMESTAMP: &str = "BORN_TIMESTAMP";
const DLQ_ORIGIN_TOPIC: &str = "DLQ_ORIGIN_TOPIC";
const DLQ_ORIGIN_MESSAGE_ID: &str = "DLQ_ORIGIN_MESSAGE_ID";

pub fn is_system_property(key: &str) -> bool {
    SYSTEM_PROPERTIES.contains(&key)
}

/// A message of a send, ready for the broker.
#[derive(Debug)]
pub struct Prepared {
    pub outgoing: Outgoing,
    pub kind: MessageType,
    pub message_group: Option<String>,
    pub message_id: String,
    /// The sysFlag bits this message asks for (transactional half, compressed body).
    pub sys_flag: i32,
}

/// Checks and converts one message of a send, in RocketMQ's proxy's order; `peer` fills the
/// born host when the client gave none.
pub fn prepare(message: &Message, config: &ProxyConfig, peer: &str) -> Result<Prepared, Refusal> {
    let system = message.system_properties.clone().unwrap_or_default();
    if message.body.is_empty() {
        return Err(Refusal::new(
            Code::MessageBodyEmpty,
            "message body is empty",
        ));
    }
    if message.body.len() > config.max_message_size {
        return Err(Refusal::new(
            Code::MessageBodyTooLarge,
            format!(
                "message body is {} bytes, over the {} byte limit",
                message.body.len(),
                config.max_message_size
            ),
        ));
    }
    let mut properties = Properties::new();
    let mut user_size = 0usize;
    if message.user_properties.len() > config.user_property_max_num {
        return Err(Refusal::new(
            Code::MessagePropertiesTooLarge,
            format!(
                "a message may carry at most {} user properties",
                config.user_property_max_num
            ),
        ));
    }
    for (key, value) in &message.user_properties {
        if is_system_property(key) {
            return Err(Refusal::new(
                Code::IllegalMessagePropertyKey,
                format!("property key {key} is reserved by the system"),
            ));
        }
        if key.is_empty() || has_control_chars(key) || has_control_chars(value) {
            return Err(Refusal::new(
                Code::IllegalMessagePropertyKey,
                format!("property {key:?} has an empty key or control characters"),
            ));
        }
        user_size += key.len() + value.len();
        properties.insert(key.clone(), value.clone());
    }
    if let Some(tag) = &system.tag {
        check_tag(tag)?;
        user_size += tag.len();
        properties.insert(property::TAGS, tag.clone());
    }
    if !system.keys.is_empty() {
        for key in &system.keys {
            if key.trim().is_empty() || has_control_chars(key) {
                return Err(Refusal::new(
                    Code::IllegalMessageKey,
                    format!("message key {key:?} is blank or has control characters"),
                ));
            }
            user_size += key.len();
        }
        properties.insert(property::KEYS, system.keys.join(" "));
    }
    if user_size > config.max_user_property_size {
        return Err(Refusal::new(
            Code::MessagePropertiesTooLarge,
            format!(
                "user properties, tag and keys take {user_size} bytes, over the {} byte limit",
                config.max_user_property_size
            ),
        ));
    }
    if system.message_id.trim().is_empty() {
        return Err(Refusal::new(Code::IllegalMessageId, "message id is blank"));
    }
    properties.insert(property::UNIQ_KEY, system.message_id.clone());
    let kind = MessageType::try_from(system.message_type).unwrap_or(MessageType::Unspecified);
    let mut flag = 0;
    if kind == MessageType::Transaction {
        properties.insert(property::TRAN_MSG, "true");
        flag |= sys_flag::TRANSACTION_PREPARED_TYPE;
        if let Some(recovery) = &system.orphaned_transaction_recovery_duration {
            let seconds = recovery.seconds.max(0) as u64;
            if seconds > config.max_transaction_recovery_second {
                return Err(Refusal::new(
                    Code::BadRequest,
                    format!(
                        "the orphaned transaction recovery duration is over {} s",
                        config.max_transaction_recovery_second
                    ),
                ));
            }
            properties.insert(
                property::CHECK_IMMUNITY_TIME_IN_SECONDS,
                seconds.to_string(),
            );
        }
    }
    if let Some(at) = &system.delivery_timestamp {
        let at_ms = timestamp_ms(at);
        if at_ms.saturating_sub(now_ms()) > config.max_delay_time_mills as i64 {
            return Err(Refusal::new(
                Code::IllegalDeliveryTime,
                format!(
                    "the delivery time is more than {} ms away",
                    config.max_delay_time_mills
                ),
            ));
        }
        properties.insert(TIMER_DELIVER_MS, at_ms.to_string());
    }
    if let Some(lite) = system.lite_topic.as_deref().filter(|l| !l.is_empty()) {
        check_lite_topic(lite, MAX_LITE_TOPIC_SIZE)
            .map_err(|reason| Refusal::new(Code::IllegalLiteTopic, reason))?;
        properties.insert(property::LITE_TOPIC, lite);
    }
    if let Some(priority) = system.priority {
        if priority < 0 {
            return Err(Refusal::new(
                Code::BadRequest,
                format!("the priority must be greater than or equal to 0, not {priority}"),
            ));
        }
        properties.insert(property::PRIORITY, priority.to_string());
    }
    if let Some(attempt) = system.delivery_attempt {
        properties.insert(property::RECONSUME_TIME, attempt.to_string());
    }
    let message_group = match &system.message_group {
        Some(group) => {
            if group.trim().is_empty()
                || group.len() >= config.max_message_group_size
                || has_control_chars(group)
            {
                return Err(Refusal::new(
                    Code::IllegalMessageGroup,
                    format!(
                        "message group must be non-blank, shorter than {} bytes and without control characters",
                        config.max_message_group_size
                    ),
                ));
            }
            properties.insert(property::SHARDING_KEY, group.clone());
            Some(group.clone())
        }
        None => None,
    };
    if let Some(trace) = system.trace_context.as_deref().filter(|t| !t.is_empty()) {
        properties.insert(TRACE_CONTEXT, trace);
    }
    let born_host = if system.born_host.trim().is_empty() {
        peer.to_owned()
    } else {
        system.born_host.clone()
    };
    if !born_host.is_empty() {
        properties.insert(BORN_HOST, born_host);
    }
    let born_timestamp = system
        .born_timestamp
        .as_ref()
        .map(timestamp_ms)
        .filter(|ms| *ms > 0)
        .unwrap_or_else(now_ms);
    properties.insert(BORN_TIMESTAMP, born_timestamp.to_string());
    if system.body_encoding == Encoding::Gzip as i32 {
        flag |= sys_flag::COMPRESSED;
    }
    Ok(Prepared {
        outgoing: Outgoing {
            body: Bytes::from(message.body.clone()),
            properties,
            born_timestamp,
        },
        kind,
        message_group,
        message_id: system.message_id,
        sys_flag: flag,
    })
}

/// RocketMQ's tag rule: not blank, no `|`, no control characters.
pub fn check_tag(tag: &str) -> Result<(), Refusal> {
    if tag.trim().is_empty() || tag.contains('|') || has_control_chars(tag) {
        return Err(Refusal::new(
            Code::IllegalMessageTag,
            format!("tag {tag:?} is blank, has '|' or control characters"),
        ));
    }
    Ok(())
}

fn has_control_chars(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// The kind of a stored message, from its properties (`TopicMessageType.parseFromMessageProperty`).
pub fn kind_of(properties: &Properties) -> MessageType {
    match MessageKind::of(properties) {
        MessageKind::Normal => MessageType::Normal,
        MessageKind::Fifo => MessageType::Fifo,
        MessageKind::Delay => MessageType::Delay,
        MessageKind::Transaction => MessageType::Transaction,
        MessageKind::Priority => MessageType::Priority,
        MessageKind::Lite => MessageType::Lite,
    }
}

/// What a consumer gets of a stored message, with `topic` (the one it subscribed to) and
/// `receipt_handle` (absent for transaction checks).
pub fn to_grpc(
    record: &MessageRecord,
    topic: Resource,
    receipt_handle: Option<String>,
    reconsume_times: i32,
) -> Message {
    let props = &record.properties;
    let user_properties = props
        .iter()
        .filter(|(k, _)| !is_system_property(k))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let message_id = props
        .get(property::UNIQ_KEY)
        .map(str::to_owned)
        .unwrap_or_else(|| record.offset_msg_id());
    let compressed = record.head.sys_flag & sys_flag::COMPRESSED != 0;
    let delivery_timestamp = props
        .get(TIMER_DELIVER_MS)
        .and_then(|v| v.parse::<i64>().ok())
        .or_else(|| {
            props
                .get(TIMER_DELAY_SEC)
                .and_then(|v| v.parse::<i64>().ok())
                .map(|s| now_ms().saturating_add(s.saturating_mul(1000)))
        })
        .map(ms_timestamp);
    let dead_letter_queue = match (
        props.get(DLQ_ORIGIN_TOPIC),
        props.get(DLQ_ORIGIN_MESSAGE_ID),
    ) {
        (Some(topic), Some(id)) => Some(DeadLetterQueue {
            topic: topic.to_owned(),
            message_id: id.to_owned(),
        }),
        _ => None,
    };
    let system = SystemProperties {
        tag: props.get(property::TAGS).map(str::to_owned),
        keys: props
            .get(property::KEYS)
            .map(|k| {
                k.split(' ')
                    .filter(|k| !k.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        message_id,
        body_digest: Some(Digest {
            r#type: DigestType::Md5 as i32,
            checksum: md5_upper_hex(&record.body),
        }),
        body_encoding: if compressed {
            Encoding::Gzip as i32
        } else {
            Encoding::Identity as i32
        },
        message_type: kind_of(props) as i32,
        born_timestamp: Some(ms_timestamp(record.head.born_timestamp)),
        born_host: props
            .get(BORN_HOST)
            .map(str::to_owned)
            .unwrap_or_else(|| record.head.born_host.to_string()),
        store_timestamp: Some(ms_timestamp(record.head.store_timestamp)),
        store_host: record.head.store_host.to_string(),
        delivery_timestamp,
        receipt_handle,
        queue_id: record.head.queue_id,
        queue_offset: Some(record.head.queue_offset),
        invisible_duration: None,
        delivery_attempt: Some(reconsume_times.saturating_add(1)),
        message_group: props.get(property::SHARDING_KEY).map(str::to_owned),
        trace_context: props.get(TRACE_CONTEXT).map(str::to_owned),
        orphaned_transaction_recovery_duration: None,
        dead_letter_queue,
        lite_topic: props.get(property::LITE_TOPIC).map(str::to_owned),
        priority: priority_of(props),
    };
    Message {
        topic: Some(topic),
        user_properties,
        system_properties: Some(system),
        body: record.body.to_vec(),
    }
}

pub fn timestamp_ms(t: &Timestamp) -> i64 {
    t.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(t.nanos) / 1_000_000)
}

pub fn ms_timestamp(ms: i64) -> Timestamp {
    Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub fn duration_ms(d: &PbDuration) -> i64 {
    d.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(d.nanos) / 1_000_000)
}

pub fn ms_duration(ms: i64) -> PbDuration {
    PbDuration {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

fn md5_upper_hex(body: &[u8]) -> String {
    use md5::{Digest as _, Md5};
    Md5::digest(body)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(system: SystemProperties) -> Message {
        Message {
            topic: Some(Resource {
                resource_namespace: String::new(),
                name: "T".into(),
            }),
            user_properties: [("color".to_owned(), "red".to_owned())].into(),
            system_properties: Some(system),
            body: b"hello".to_vec(),
        }
    }

    fn system() -> SystemProperties {
        SystemProperties {
            message_id: "01ABCDEF".into(),
            tag: Some("TagA".into()),
            keys: vec!["k1".into(), "k2".into()],
            message_type: MessageType::Normal as i32,
            ..Default::default()
        }
    }

    #[test]
    fn a_send_becomes_rocketmq_properties() {
        let config = ProxyConfig::default();
        let mut s = system();
        s.message_group = Some("order-1".into());
        s.born_timestamp = Some(ms_timestamp(1_700_000_000_123));
        let p = prepare(&message(s), &config, "10.0.0.1:5555").unwrap();
        let props = &p.outgoing.properties;
        assert_eq!(props.get("UNIQ_KEY"), Some("01ABCDEF"));
        assert_eq!(props.get("TAGS"), Some("TagA"));
        assert_eq!(props.get("KEYS"), Some("k1 k2"));
        assert_eq!(props.get("__SHARDINGKEY"), Some("order-1"));
        assert_eq!(props.get("color"), Some("red"));
        assert_eq!(props.get("__BORNHOST"), Some("10.0.0.1:5555"));
        assert_eq!(p.outgoing.born_timestamp, 1_700_000_000_123);
        assert_eq!(p.message_group.as_deref(), Some("order-1"));
        assert_eq!(p.sys_flag, 0);
    }

    #[test]
    fn transactions_and_delays_set_their_properties() {
        let config = ProxyConfig::default();
        let mut s = system();
        s.message_type = MessageType::Transaction as i32;
        let p = prepare(&message(s), &config, "").unwrap();
        assert_eq!(p.outgoing.properties.get("TRAN_MSG"), Some("true"));
        assert_ne!(p.sys_flag & sys_flag::TRANSACTION_PREPARED_TYPE, 0);
        let mut s = system();
        let at = now_ms() + 5_000;
        s.delivery_timestamp = Some(ms_timestamp(at));
        let p = prepare(&message(s), &config, "").unwrap();
        assert_eq!(
            p.outgoing.properties.get("TIMER_DELIVER_MS"),
            Some(at.to_string().as_str())
        );
        assert_eq!(kind_of(&p.outgoing.properties), MessageType::Delay);
    }

    #[test]
    fn a_priority_travels_as_its_property() {
        let config = ProxyConfig::default();
        let mut s = system();
        s.message_type = MessageType::Priority as i32;
        s.priority = Some(4);
        let p = prepare(&message(s), &config, "").unwrap();
        assert_eq!(p.outgoing.properties.get("_SYS_MSG_PRIORITY_"), Some("4"));
        assert_eq!(kind_of(&p.outgoing.properties), MessageType::Priority);
        let mut s = system();
        s.priority = Some(-1);
        let refused = prepare(&message(s), &config, "").unwrap_err();
        assert_eq!(refused.code, Code::BadRequest);
        let mut reserved = message(system());
        reserved
            .user_properties
            .insert("_SYS_MSG_PRIORITY_".into(), "9".into());
        let refused = prepare(&reserved, &config, "").unwrap_err();
        assert_eq!(refused.code, Code::IllegalMessagePropertyKey);
    }

    #[test]
    fn bad_messages_get_rocketmq_codes() {
        let config = ProxyConfig::default();
        let code = |m: Message| prepare(&m, &config, "").unwrap_err().code;
        let mut empty = message(system());
        empty.body.clear();
        assert_eq!(code(empty), Code::MessageBodyEmpty);
        let mut s = system();
        s.message_id = " ".into();
        assert_eq!(code(message(s)), Code::IllegalMessageId);
        let mut s = system();
        s.tag = Some("a|b".into());
        assert_eq!(code(message(s)), Code::IllegalMessageTag);
        let mut reserved = message(system());
        reserved
            .user_properties
            .insert("UNIQ_KEY".into(), "x".into());
        assert_eq!(code(reserved), Code::IllegalMessagePropertyKey);
        let mut s = system();
        s.message_group = Some("g".repeat(64));
        assert_eq!(code(message(s)), Code::IllegalMessageGroup);
        let mut s = system();
        s.delivery_timestamp = Some(ms_timestamp(now_ms() + 2 * 24 * 3600 * 1000));
        assert_eq!(code(message(s)), Code::IllegalDeliveryTime);
        let mut big = message(system());
        big.body = vec![0; config.max_message_size + 1];
        assert_eq!(code(big), Code::MessageBodyTooLarge);
    }

    #[test]
    fn delivery_times_at_the_ends_of_time_are_answered_not_a_panic() {
        let config = ProxyConfig::default();
        for seconds in [i64::MIN, -1, i64::MAX] {
            let mut s = system();
            s.delivery_timestamp = Some(Timestamp { seconds, nanos: 0 });
            let prepared = prepare(&message(s), &config, "");
            if seconds == i64::MAX {
                assert_eq!(prepared.unwrap_err().code, Code::IllegalDeliveryTime);
            } else {
                assert!(prepared.is_ok(), "a time in the past delivers at once");
            }
        }
    }

    #[test]
    fn digests_are_upper_case_md5() {
        assert_eq!(md5_upper_hex(b"hello"), "5D41402ABC4B2A76B9719D911017C592");
    }
}
