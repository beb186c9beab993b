//! POP receipt handles and offset summaries, as RocketMQ's `ExtraInfoUtil` writes and reads
//! them (RocketMQ 5.1).
//!
//! A message's receipt handle (`extraInfo`, the `POP_CK` property) is eight fields separated
//! by single spaces:
//!
//! ```text
//! ckQueueOffset popTime invisibleTime reviveQid topicType brokerName queueId queueOffset
//! 7             1700000000000 60000  3         0         broker-a   1       9
//! ```
//!
//! `ckQueueOffset` is the first queue offset of the batch the message was popped in (the
//! checkpoint's start), `topicType` is `0` for the topic itself, `1` for the group's POP
//! retry topic (`%RETRY%<group>_<topic>`) and `2` for RocketMQ's later `%RETRY%<group>+<topic>`
//! form; `reviveQid` 999 marks an orderly POP. The seven-field form without `queueOffset`
//! is RocketMQ's older one.
//!
//! POP responses summarise the queues read, `;`-separated, one entry per queue:
//! `startOffsetInfo` (`topicType queueId startOffset`), `msgOffsetInfo`
//! (`topicType queueId offset,offset,...`) and, for orderly POP, `orderCountInfo`
//! (`topicType qo<queueId>%<offset> count` per message and `topicType queueId count` per
//! queue).

use std::collections::HashMap;

use thiserror::Error;

use super::names::{self, NameError, RETRY_PREFIX};

/// `KeyBuilder.POP_ORDER_REVIVE_QUEUE`: the revive queue id orderly POP handles carry.
pub const POP_ORDER_REVIVE_QUEUE: i32 = 999;

/// Most messages one POP may ask for (RocketMQ's limit).
pub const MAX_POP_MESSAGES: i32 = 32;

/// Which topic a handle's message was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicType {
    /// The topic itself (`0`).
    Normal,
    /// The group's POP retry topic `%RETRY%<group>_<topic>` (`1`).
    Retry,
    /// RocketMQ's later retry topic form `%RETRY%<group>+<topic>` (`2`).
    RetryV2,
}

impl TopicType {
    pub fn as_str(self) -> &'static str {
        match self {
            TopicType::Normal => "0",
            TopicType::Retry => "1",
            TopicType::RetryV2 => "2",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "0" => Some(TopicType::Normal),
            "1" => Some(TopicType::Retry),
            "2" => Some(TopicType::RetryV2),
            _ => None,
        }
    }

    /// The mark of a topic that was read: retry topics start with `%RETRY%`.
    pub fn of_topic(topic: &str) -> Self {
        if topic.starts_with(RETRY_PREFIX) {
            TopicType::Retry
        } else {
            TopicType::Normal
        }
    }

    pub fn is_retry(self) -> bool {
        self != TopicType::Normal
    }

    /// The topic a handle of this type was read from, given the topic the consumer named.
    pub fn real_topic(self, topic: &str, group: &str) -> String {
        match self {
            TopicType::Normal => topic.to_owned(),
            TopicType::Retry => format!("{RETRY_PREFIX}{group}_{topic}"),
            TopicType::RetryV2 => format!("{RETRY_PREFIX}{group}+{topic}"),
        }
    }
}

/// `%RETRY%<group>_<topic>`, the POP retry topic of RocketMQ 5.1 (`KeyBuilder.buildPopRetryTopic`),
/// checked as a topic name.
pub fn pop_retry_topic(topic: &str, group: &str) -> Result<String, NameError> {
    let name = TopicType::Retry.real_topic(topic, group);
    names::check_topic(&name)?;
    Ok(name)
}

/// The topic a POP retry topic retries (`%RETRY%<group>_<topic>` -> `<topic>`), or the
/// topic itself.
pub fn parse_normal_topic<'a>(topic: &'a str, group: &str) -> &'a str {
    topic
        .strip_prefix(RETRY_PREFIX)
        .and_then(|rest| rest.strip_prefix(group))
        .and_then(|rest| rest.strip_prefix('_').or_else(|| rest.strip_prefix('+')))
        .unwrap_or(topic)
}

/// Why a receipt handle or an offset summary does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ExtraInfoError {
    #[error("the receipt handle (extraInfo) '{shown}' has {found} fields; RocketMQ's has 7 to 9 separated by single spaces")]
    FieldCount { shown: String, found: usize },
    #[error("field '{field}' of the receipt handle (extraInfo) is not a valid number: '{value}'")]
    Number { field: &'static str, value: String },
    #[error("the topic type of the receipt handle (extraInfo) must be 0, 1 or 2, not '{0}'")]
    TopicType(String),
    #[error("bad {what} entry '{entry}': {why}")]
    Summary {
        what: &'static str,
        entry: String,
        why: &'static str,
    },
}

/// A POP receipt handle (`extraInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExtraInfo {
    /// Start offset of the checkpoint (the batch) the message belongs to.
    pub ck_queue_offset: i64,
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    pub topic_type: TopicType,
    pub broker_name: String,
    pub queue_id: i32,
    /// The message's own queue offset (absent in the older seven-field form).
    pub queue_offset: Option<i64>,
}

fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(96)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().nth(96).is_some() {
        out.push_str("...");
    }
    out
}

fn number<T: std::str::FromStr>(field: &'static str, value: &str) -> Result<T, ExtraInfoError> {
    value.parse().map_err(|_| ExtraInfoError::Number {
        field,
        value: shown(value),
    })
}

impl ExtraInfo {
    /// Parses a handle as `ExtraInfoUtil.split` and its getters read it.
    pub fn parse(text: &str) -> Result<Self, ExtraInfoError> {
        let fields: Vec<&str> = text.split(' ').collect();
        // RocketMQ's proxy appends the CommitLog offset as a ninth field and sends the whole
        // handle back; brokers read the first eight.
        if !(7..=9).contains(&fields.len()) {
            return Err(ExtraInfoError::FieldCount {
                shown: shown(text),
                found: fields.len(),
            });
        }
        let field = |i: usize| fields.get(i).copied().unwrap_or_default();
        Ok(Self {
            ck_queue_offset: number("ckQueueOffset", field(0))?,
            pop_time: number("popTime", field(1))?,
            invisible_time: number("invisibleTime", field(2))?,
            revive_qid: number("reviveQid", field(3))?,
            topic_type: TopicType::parse(field(4))
                .ok_or_else(|| ExtraInfoError::TopicType(shown(field(4))))?,
            broker_name: field(5).to_owned(),
            queue_id: number("queueId", field(6))?,
            queue_offset: match fields.get(7) {
                Some(v) => Some(number("queueOffset", v)?),
                None => None,
            },
        })
    }

    /// Whether the handle is an orderly POP's.
    pub fn is_order(&self) -> bool {
        self.revive_qid == POP_ORDER_REVIVE_QUEUE
    }

    /// When the message becomes visible again (ms since the epoch).
    pub fn deadline(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }

    /// The topic the message was read from, given the topic the consumer named.
    pub fn real_topic(&self, topic: &str, group: &str) -> String {
        self.topic_type.real_topic(topic, group)
    }
}

impl std::fmt::Display for ExtraInfo {
    /// `ExtraInfoUtil.buildExtraInfo`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {}",
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.topic_type.as_str(),
            self.broker_name,
            self.queue_id
        )?;
        if let Some(offset) = self.queue_offset {
            write!(f, " {offset}")?;
        }
        Ok(())
    }
}

/// Gives every record of a POP answer its receipt handle (`POP_CK`) and first POP time, as
/// RocketMQ's `MQClientAPIImpl.processPopResponse` does: retried messages come with their
/// handle; the others get one built from the answer's header (`startOffsetInfo`,
/// `msgOffsetInfo`, pop and invisible time, revive queue) and `broker_name`. For an orderly
/// POP, `orderCountInfo` gives each message its reconsume times.
pub fn attach_handles(
    broker_name: &str,
    order: bool,
    h: &crate::headers::PopMessageResponseHeader,
    records: &mut [crate::message::MessageRecord],
) -> Result<(), ExtraInfoError> {
    use crate::message::property;
    let starts = parse_start_offset_info(h.start_offset_info.as_deref().unwrap_or_default())?;
    let offsets = parse_msg_offset_info(h.msg_offset_info.as_deref().unwrap_or_default())?;
    let counts = parse_order_count_info(h.order_count_info.as_deref().unwrap_or_default())?;
    for record in records.iter_mut() {
        if !record.properties.contains(property::POP_CK) {
            let queue_id = record.head.queue_id;
            let queue_offset = record.head.queue_offset;
            let kind = TopicType::of_topic(&record.topic);
            let key = queue_key(kind, queue_id);
            let start = starts.get(&key).copied().unwrap_or(queue_offset);
            let offset = offsets
                .get(&key)
                .and_then(|list| list.iter().find(|o| **o == queue_offset))
                .copied()
                .unwrap_or(queue_offset);
            let extra = ExtraInfo {
                ck_queue_offset: start,
                pop_time: h.pop_time,
                invisible_time: h.invisible_time,
                revive_qid: h.revive_qid,
                topic_type: kind,
                broker_name: broker_name.to_owned(),
                queue_id,
                queue_offset: Some(offset),
            };
            if order {
                let count = counts
                    .get(&queue_offset_key(kind, queue_id, queue_offset))
                    .or_else(|| counts.get(&queue_key(kind, queue_id)))
                    .copied()
                    .unwrap_or(0);
                if count > 0 {
                    record.head.reconsume_times = count;
                }
            }
            record
                .properties
                .insert(property::POP_CK, extra.to_string());
        }
        if !record.properties.contains(property::FIRST_POP_TIME) {
            record
                .properties
                .insert(property::FIRST_POP_TIME, h.pop_time.to_string());
        }
    }
    Ok(())
}

/// Appends `entry` to a `;`-separated summary.
fn push_entry(out: &mut String, entry: std::fmt::Arguments<'_>) {
    use std::fmt::Write as _;
    if !out.is_empty() {
        out.push(';');
    }
    let _ = out.write_fmt(entry);
}

/// `ExtraInfoUtil.buildStartOffsetInfo`.
pub fn push_start_offset_info(out: &mut String, topic_type: TopicType, queue_id: i32, start: i64) {
    push_entry(
        out,
        format_args!("{} {queue_id} {start}", topic_type.as_str()),
    );
}

/// `ExtraInfoUtil.buildMsgOffsetInfo`.
pub fn push_msg_offset_info(
    out: &mut String,
    topic_type: TopicType,
    queue_id: i32,
    offsets: &[i64],
) {
    let list = offsets
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    push_entry(
        out,
        format_args!("{} {queue_id} {list}", topic_type.as_str()),
    );
}

/// `ExtraInfoUtil.buildQueueOffsetOrderCountInfo`: one message's delivery count.
pub fn push_offset_order_count(
    out: &mut String,
    topic_type: TopicType,
    queue_id: i32,
    offset: i64,
    count: i32,
) {
    push_entry(
        out,
        format_args!("{} qo{queue_id}%{offset} {count}", topic_type.as_str()),
    );
}

/// `ExtraInfoUtil.buildQueueIdOrderCountInfo`: a queue's smallest delivery count.
pub fn push_queue_order_count(out: &mut String, topic_type: TopicType, queue_id: i32, count: i32) {
    push_entry(
        out,
        format_args!("{} {queue_id} {count}", topic_type.as_str()),
    );
}

/// The key summaries are looked up by: `topicType@queueId` (`getStartOffsetInfoMapKey`).
pub fn queue_key(topic_type: TopicType, queue_id: i32) -> String {
    format!("{}@{queue_id}", topic_type.as_str())
}

/// The key of one message's order count: `topicType@qo<queueId>%<offset>`.
pub fn queue_offset_key(topic_type: TopicType, queue_id: i32, offset: i64) -> String {
    format!("{}@qo{queue_id}%{offset}", topic_type.as_str())
}

fn split_summary<'a>(
    what: &'static str,
    text: &'a str,
) -> Result<Vec<(String, &'a str)>, ExtraInfoError> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in text.split(';').filter(|e| !e.is_empty()) {
        let bad = |why| ExtraInfoError::Summary {
            what,
            entry: shown(entry),
            why,
        };
        let parts: Vec<&str> = entry.split(' ').collect();
        let [kind, key, value] = parts.as_slice() else {
            return Err(bad("expected three space-separated fields"));
        };
        let map_key = format!("{kind}@{key}");
        if !seen.insert(map_key.clone()) {
            return Err(bad("duplicate queue"));
        }
        out.push((map_key, *value));
    }
    Ok(out)
}

/// `ExtraInfoUtil.parseStartOffsetInfo`: `topicType@queueId` -> start offset.
pub fn parse_start_offset_info(text: &str) -> Result<HashMap<String, i64>, ExtraInfoError> {
    split_summary("startOffsetInfo", text)?
        .into_iter()
        .map(|(k, v)| Ok((k, number("startOffsetInfo", v)?)))
        .collect()
}

/// `ExtraInfoUtil.parseMsgOffsetInfo`: `topicType@queueId` -> message offsets.
pub fn parse_msg_offset_info(text: &str) -> Result<HashMap<String, Vec<i64>>, ExtraInfoError> {
    split_summary("msgOffsetInfo", text)?
        .into_iter()
        .map(|(k, v)| {
            let offsets = v
                .split(',')
                .map(|o| number("msgOffsetInfo", o))
                .collect::<Result<Vec<i64>, _>>()?;
            Ok((k, offsets))
        })
        .collect()
}

/// `ExtraInfoUtil.parseOrderCountInfo`: `topicType@queueId` or
/// `topicType@qo<queueId>%<offset>` -> delivery count.
pub fn parse_order_count_info(text: &str) -> Result<HashMap<String, i32>, ExtraInfoError> {
    split_summary("orderCountInfo", text)?
        .into_iter()
        .map(|(k, v)| Ok((k, number("orderCountInfo", v)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_handles_parse_and_print() {
        // ExtraInfoUtil.buildExtraInfo(7, 1700000000000, 60000, 3, "T", "broker-a", 1, 9)
        let text = "7 1700000000000 60000 3 0 broker-a 1 9";
        let info = ExtraInfo::parse(text).expect("parses");
        assert_eq!(
            info,
            ExtraInfo {
                ck_queue_offset: 7,
                pop_time: 1_700_000_000_000,
                invisible_time: 60_000,
                revive_qid: 3,
                topic_type: TopicType::Normal,
                broker_name: "broker-a".into(),
                queue_id: 1,
                queue_offset: Some(9),
            }
        );
        assert_eq!(info.to_string(), text);
        assert_eq!(info.deadline(), 1_700_000_060_000);
        // The seven-field form, a retry topic, an orderly handle.
        let old = ExtraInfo::parse("0 5 10 999 1 b 0").expect("parses");
        assert_eq!(old.queue_offset, None);
        assert!(old.is_order());
        assert_eq!(old.real_topic("T", "g"), "%RETRY%g_T");
        assert_eq!(old.to_string(), "0 5 10 999 1 b 0");
    }

    #[test]
    fn bad_handles_say_why() {
        let e = ExtraInfo::parse("garbage").expect_err("refused");
        assert!(
            matches!(e, ExtraInfoError::FieldCount { found: 1, .. }),
            "{e}"
        );
        let e = ExtraInfo::parse("1 x 3 4 0 b 0 1").expect_err("refused");
        assert_eq!(
            e.to_string(),
            "field 'popTime' of the receipt handle (extraInfo) is not a valid number: 'x'"
        );
        assert!(matches!(
            ExtraInfo::parse("1 2 3 4 7 b 0 1"),
            Err(ExtraInfoError::TopicType(_))
        ));
        assert!(ExtraInfo::parse("1  2 3 4 0 b 0").is_err(), "double space");
        assert!(ExtraInfo::parse("").is_err());
    }

    #[test]
    fn summaries_match_extra_info_util() {
        let mut start = String::new();
        push_start_offset_info(&mut start, TopicType::Normal, 1, 5);
        push_start_offset_info(&mut start, TopicType::Retry, 0, 2);
        assert_eq!(start, "0 1 5;1 0 2");
        let parsed = parse_start_offset_info(&start).expect("parses");
        assert_eq!(parsed["0@1"], 5);
        assert_eq!(parsed["1@0"], 2);

        let mut msgs = String::new();
        push_msg_offset_info(&mut msgs, TopicType::Normal, 1, &[5, 6, 8]);
        assert_eq!(msgs, "0 1 5,6,8");
        assert_eq!(
            parse_msg_offset_info(&msgs).expect("parses")["0@1"],
            [5, 6, 8]
        );

        let mut order = String::new();
        push_offset_order_count(&mut order, TopicType::Normal, 2, 40, 1);
        push_queue_order_count(&mut order, TopicType::Normal, 2, 1);
        assert_eq!(order, "0 qo2%40 1;0 2 1");
        let counts = parse_order_count_info(&order).expect("parses");
        assert_eq!(counts[&queue_offset_key(TopicType::Normal, 2, 40)], 1);
        assert_eq!(counts[&queue_key(TopicType::Normal, 2)], 1);

        assert!(parse_start_offset_info("0 1 5;0 1 6").is_err(), "duplicate");
        assert!(parse_msg_offset_info("0 1").is_err());
    }

    #[test]
    fn retry_topic_names() {
        assert_eq!(pop_retry_topic("T", "g").as_deref(), Ok("%RETRY%g_T"));
        assert_eq!(parse_normal_topic("%RETRY%g_T", "g"), "T");
        assert_eq!(parse_normal_topic("%RETRY%my_g_T", "my_g"), "T");
        assert_eq!(parse_normal_topic("T", "g"), "T");
        assert!(pop_retry_topic(&"t".repeat(200), &"g".repeat(100)).is_err());
    }
}
