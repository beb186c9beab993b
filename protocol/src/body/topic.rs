//! Topic configuration bodies (protocol.md 3.4, 3.5) and small list bodies (3.14).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::fastjson::IntKeyMap;
use super::DataVersion;

/// Permission bits (protocol.md 7.8).
pub mod perm {
    pub const INHERIT: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const READ: i32 = 4;
    pub const PRIORITY: i32 = 8;

    pub const fn is_readable(perm: i32) -> bool {
        perm & READ != 0
    }

    pub const fn is_writeable(perm: i32) -> bool {
        perm & WRITE != 0
    }

    pub const fn is_inherited(perm: i32) -> bool {
        perm & INHERIT != 0
    }

    /// Java's `PermName.perm2String`, e.g. `RW-`.
    pub fn to_display(perm: i32) -> String {
        let mut s = String::with_capacity(3);
        s.push(if is_readable(perm) { 'R' } else { '-' });
        s.push(if is_writeable(perm) { 'W' } else { '-' });
        s.push(if is_inherited(perm) { 'X' } else { '-' });
        s
    }
}

fn default_queue_nums() -> i32 {
    16
}

fn default_perm() -> i32 {
    perm::READ | perm::WRITE
}

fn default_filter_type() -> String {
    "SINGLE_TAG".to_owned()
}

/// `TopicConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfig {
    pub topic_name: String,
    #[serde(default = "default_queue_nums")]
    pub read_queue_nums: i32,
    #[serde(default = "default_queue_nums")]
    pub write_queue_nums: i32,
    #[serde(default = "default_perm")]
    pub perm: i32,
    #[serde(default = "default_filter_type")]
    pub topic_filter_type: String,
    #[serde(default)]
    pub topic_sys_flag: i32,
    #[serde(default)]
    pub order: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
}

impl TopicConfig {
    /// A topic with Java's class defaults (16/16 queues, RW, SINGLE_TAG).
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_queues(name, 16, 16, default_perm())
    }

    pub fn with_queues(name: impl Into<String>, read: i32, write: i32, perm: i32) -> Self {
        Self {
            topic_name: name.into(),
            read_queue_nums: read,
            write_queue_nums: write,
            perm,
            topic_filter_type: default_filter_type(),
            topic_sys_flag: 0,
            order: false,
            attributes: BTreeMap::new(),
        }
    }

    /// Java's `TopicConfig.encode()`: `name read write perm filterType` (compressed registration).
    pub fn encode_compact(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.topic_name,
            self.read_queue_nums,
            self.write_queue_nums,
            self.perm,
            self.topic_filter_type
        )
    }

    /// Parses [`TopicConfig::encode_compact`] text (5.x may append attributes as a sixth token).
    pub fn decode_compact(text: &str) -> Option<Self> {
        let mut parts = text.splitn(6, ' ');
        let name = parts.next()?;
        let read = parts.next()?.parse().ok()?;
        let write = parts.next()?.parse().ok()?;
        let perm = parts.next()?.parse().ok()?;
        let filter = parts.next()?.to_owned();
        let attributes = parts
            .next()
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default();
        Some(Self {
            topic_name: name.to_owned(),
            read_queue_nums: read,
            write_queue_nums: write,
            perm,
            topic_filter_type: filter,
            topic_sys_flag: 0,
            order: false,
            attributes,
        })
    }
}

/// The topic attribute RocketMQ 5 keeps a topic's message type in.
pub const MESSAGE_TYPE_ATTRIBUTE: &str = "message.type";

/// What values an attribute takes.
enum AttributeRule {
    OneOf(&'static [&'static str]),
    /// A whole number in this range, both ends included (RocketMQ's `LongRangeAttribute`).
    Range(i64, i64),
    /// A topic's name.
    Topic,
}

impl AttributeRule {
    fn check(&self, key: &str, value: &str) -> Result<(), String> {
        match self {
            Self::OneOf(allowed) if allowed.contains(&value) => Ok(()),
            Self::OneOf(allowed) => Err(format!(
                "value {value} of attribute {key} is not one of {}",
                allowed.join(", ")
            )),
            Self::Topic => crate::names::check_topic(value)
                .map_err(|e| format!("value {value} of attribute {key}: {e}")),
            Self::Range(min, max) => match value.trim().parse::<i64>() {
                Ok(n) if (*min..=*max).contains(&n) => Ok(()),
                _ => Err(format!(
                    "value {value} of attribute {key} is not a whole number from {min} to {max}"
                )),
            },
        }
    }
}

/// The topic attributes RocketMQ 5 knows and their allowed values.
const TOPIC_ATTRIBUTES: &[(&str, AttributeRule)] = &[
    (
        MESSAGE_TYPE_ATTRIBUTE,
        AttributeRule::OneOf(&[
            "UNSPECIFIED",
            "NORMAL",
            "FIFO",
            "DELAY",
            "TRANSACTION",
            "PRIORITY",
            "LITE",
            "MIXED",
        ]),
    ),
    ("queue.type", AttributeRule::OneOf(&["BatchCQ", "SimpleCQ"])),
    (
        "cleanup.policy",
        AttributeRule::OneOf(&["DELETE", "COMPACTION"]),
    ),
    // Lite topics: minutes an idle lite topic lives (-1: for ever).
    ("lite.topic.expiration", AttributeRule::Range(-1, 43_200)),
];

/// The group attribute of RocketMQ 5.4's priority messages: how often in 100 a POP of a
/// PRIORITY topic serves the highest priorities first (`SubscriptionGroupAttributes`).
pub const PRIORITY_FACTOR_ATTRIBUTE: &str = "priority.factor";

/// The subscription group attributes RocketMQ 5 knows.
const GROUP_ATTRIBUTES: &[(&str, AttributeRule)] = &[
    (PRIORITY_FACTOR_ATTRIBUTE, AttributeRule::Range(0, 100)),
    // RocketMQ 5.5 lite groups: the parent topic they consume, and their options.
    ("lite.bind.topic", AttributeRule::Topic),
    (
        "lite.sub.model",
        AttributeRule::OneOf(&["Shared", "Exclusive"]),
    ),
    (
        "lite.sub.reset.offset.exclusive",
        AttributeRule::OneOf(&["true", "false"]),
    ),
    (
        "lite.sub.reset.offset.unsubscribe",
        AttributeRule::OneOf(&["true", "false"]),
    ),
    ("lite.sub.client.quota", AttributeRule::Range(-1, i64::MAX)),
    (
        "lite.sub.client.max.event.cnt",
        AttributeRule::Range(10, i64::MAX),
    ),
];

/// Applies RocketMQ's attribute changes (`+key=value` sets, `-key` removes, comma separated,
/// as `mqadmin updateTopic -a` writes them) to a topic's `current` attributes; unknown keys,
/// values out of a key's set and malformed entries are refused with the reason.
pub fn apply_attribute_changes(
    current: &BTreeMap<String, String>,
    changes: &str,
) -> Result<BTreeMap<String, String>, String> {
    apply_changes(TOPIC_ATTRIBUTES, current, changes)
}

/// [`apply_attribute_changes`] for a subscription group's attributes (`updateSubGroup
/// --attributes`).
pub fn apply_group_attribute_changes(
    current: &BTreeMap<String, String>,
    changes: &str,
) -> Result<BTreeMap<String, String>, String> {
    apply_changes(GROUP_ATTRIBUTES, current, changes)
}

fn apply_changes(
    known: &[(&str, AttributeRule)],
    current: &BTreeMap<String, String>,
    changes: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut result = current.clone();
    for entry in changes.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let set = entry
            .strip_prefix('+')
            .and_then(|rest| rest.split_once('='));
        let remove = entry.strip_prefix('-').filter(|rest| !rest.contains('='));
        let (key, value) = match (set, remove) {
            (Some((key, value)), _) => (key, Some(value)),
            (None, Some(key)) => (key, None),
            (None, None) => {
                return Err(format!(
                    "attribute '{entry}' must be +key=value (set) or -key (remove)"
                ))
            }
        };
        let Some((_, rule)) = known.iter().find(|(k, _)| *k == key) else {
            return Err(format!("unsupported attribute key: {key}"));
        };
        match value {
            Some(value) => {
                rule.check(key, value)?;
                result.insert(key.to_owned(), value.to_owned());
            }
            None => {
                result.remove(key);
            }
        }
    }
    Ok(result)
}

/// Attributes as a request carries them, as the change text [`apply_attribute_changes`]
/// reads: `+key` and `-key` entries as RocketMQ's mqadmin writes them, and a bare key (a
/// config read back, or a topics.json export) as a set.
pub fn attribute_map_as_changes(attributes: &BTreeMap<String, String>) -> String {
    attributes
        .iter()
        .map(|(key, value)| match key.chars().next() {
            Some('-') => key.clone(),
            Some('+') => format!("{key}={value}"),
            _ => format!("+{key}={value}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Change text (`+a=b,+c=d,-e`, as mqadmin's `--attributes` takes it) as the map a request
/// carries (RocketMQ's `AttributeParser.parseToMap`: `+a` -> `b`, `-e` -> empty).
pub fn attribute_changes_as_map(changes: &str) -> Result<BTreeMap<String, String>, String> {
    let mut map = BTreeMap::new();
    for entry in changes.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        if let Some((key, value)) = entry.strip_prefix('+').and_then(|r| r.split_once('=')) {
            map.insert(format!("+{key}"), value.to_owned());
        } else if entry.starts_with('-') && !entry.contains('=') {
            map.insert(entry.to_owned(), String::new());
        } else {
            return Err(format!(
                "attribute '{entry}' must be +key=value (set) or -key (remove)"
            ));
        }
    }
    Ok(map)
}

/// `attributes` as the changes that set each of them (`+k=v,+k2=v2`).
pub fn attributes_as_changes(attributes: &BTreeMap<String, String>) -> Option<String> {
    (!attributes.is_empty()).then(|| {
        attributes
            .iter()
            .map(|(k, v)| format!("+{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// `TopicConfigSerializeWrapper`: topics.json and the registration body's topic table.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigSerializeWrapper {
    #[serde(default)]
    pub data_version: DataVersion,
    #[serde(default)]
    pub topic_config_table: BTreeMap<String, TopicConfig>,
}

/// UPDATE_AND_CREATE_TOPIC_LIST's body (`CreateTopicListRequestBody`): topics to create or
/// update at once; each config's `attributes` are changes (`+key` sets, `-key` removes).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTopicListRequestBody {
    #[serde(default)]
    pub topic_config_list: Vec<TopicConfig>,
}

/// `TopicList`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicList {
    #[serde(default)]
    pub topic_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
}

/// `GroupList`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupList {
    #[serde(default)]
    pub group_list: Vec<String>,
}

/// Body of GET_CONSUMER_LIST_BY_GROUP.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerIdList {
    #[serde(default)]
    pub consumer_id_list: Vec<String>,
}

/// consumerOffset.json and GET_ALL_CONSUMER_OFFSET: `topic@group` to queue id to offset.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerOffsetSerializeWrapper {
    #[serde(default)]
    pub offset_table: BTreeMap<String, IntKeyMap<i64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_version: Option<DataVersion>,
    /// A StellMQ master's answer to a slave that asked for changes only: the keys removed
    /// since its mark (never written otherwise).
    #[serde(
        default,
        rename = "stellmqRemovedKeys",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub removed_keys: Vec<String>,
}

/// delayOffset.json and GET_ALL_DELAY_OFFSET: delay level to consumed offset.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelayOffsetSerializeWrapper {
    #[serde(default)]
    pub offset_table: IntKeyMap<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_version: Option<DataVersion>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_changes_follow_rocketmq() {
        let set = apply_attribute_changes(&BTreeMap::new(), "+message.type=FIFO").unwrap();
        assert_eq!(set[MESSAGE_TYPE_ATTRIBUTE], "FIFO");
        assert_eq!(attributes_as_changes(&set).unwrap(), "+message.type=FIFO");
        let removed = apply_attribute_changes(&set, "-message.type").unwrap();
        assert!(removed.is_empty());
        for bad in [
            "+message.type=ODD",
            "+color=red",
            "message.type=FIFO",
            "-",
            "+x",
            "-a=b",
        ] {
            assert!(apply_attribute_changes(&set, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn attribute_changes_starting_with_multibyte_text_are_refused_not_a_panic() {
        for bad in [
            "\u{e9}",
            "\u{e9}+message.type=FIFO",
            "+\u{e9}=x",
            "-\u{1f600}",
            "\u{1f600}",
        ] {
            let refused = apply_attribute_changes(&BTreeMap::new(), bad);
            assert!(refused.is_err(), "{bad}");
        }
    }
    use crate::body::fastjson;

    #[test]
    fn topics_json_golden() {
        let mut w = TopicConfigSerializeWrapper {
            data_version: DataVersion {
                counter: 5,
                state_version: 0,
                timestamp: 1_700_000_000_000,
            },
            ..Default::default()
        };
        w.topic_config_table
            .insert("TopicA".into(), TopicConfig::with_queues("TopicA", 4, 4, 6));
        assert_eq!(
            String::from_utf8(fastjson::encode(&w)).expect("utf8"),
            r#"{"dataVersion":{"counter":5,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicA":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicA","topicSysFlag":0,"writeQueueNums":4}}}"#
        );
    }

    #[test]
    fn consumer_offsets_read_java_file() {
        let java =
            r#"{"offsetTable":{"TopicA@group1":{0:120,1:118},"%RETRY%group1@group1":{0:0}}}"#;
        let w: ConsumerOffsetSerializeWrapper = fastjson::decode(java.as_bytes()).expect("decodes");
        assert_eq!(w.offset_table["TopicA@group1"].0[&1], 118);
        assert_eq!(
            String::from_utf8(fastjson::encode(&w)).expect("utf8"),
            java.replace(
                r#"{"TopicA@group1":{0:120,1:118},"%RETRY%group1@group1":{0:0}}"#,
                r#"{"%RETRY%group1@group1":{0:0},"TopicA@group1":{0:120,1:118}}"#
            )
        );
    }

    #[test]
    fn compact_topic_config() {
        let t = TopicConfig::with_queues("T", 4, 8, 6);
        assert_eq!(t.encode_compact(), "T 4 8 6 SINGLE_TAG");
        assert_eq!(TopicConfig::decode_compact("T 4 8 6 SINGLE_TAG"), Some(t));
        assert_eq!(TopicConfig::decode_compact("T 4 x 6 SINGLE_TAG"), None);
    }

    #[test]
    fn perm_display() {
        assert_eq!(perm::to_display(7), "RWX");
        assert_eq!(perm::to_display(4), "R--");
    }
}
