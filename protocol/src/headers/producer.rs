//! Producer request headers (protocol.md 2.4).

use std::collections::BTreeMap;

use super::{command_header, HeaderValue};
use crate::message::{encode_properties_into, encoded_properties_len};
use crate::ExtFields;

command_header! {
    /// SEND_MESSAGE (10) and, through [`SendMessageRequestHeaderV2`], 310 and 320.
    pub struct SendMessageRequestHeader {
        required producer_group: String = "producerGroup",
        required topic: String = "topic",
        required default_topic: String = "defaultTopic",
        required default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        required queue_id: i32 = "queueId",
        required sys_flag: i32 = "sysFlag",
        required born_timestamp: i64 = "bornTimestamp",
        required flag: i32 = "flag",
        optional properties: String = "properties",
        optional reconsume_times: i32 = "reconsumeTimes",
        optional unit_mode: bool = "unitMode",
        /// The broker takes the batch path on this flag, not on the request code.
        optional batch: bool = "batch",
        optional max_reconsume_times: i32 = "maxReconsumeTimes",
        optional broker_name: String = "bname",
    }
}

command_header! {
    /// SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): single-letter keys.
    pub struct SendMessageRequestHeaderV2 {
        required a: String = "a",
        required b: String = "b",
        required c: String = "c",
        required d: i32 = "d",
        required e: i32 = "e",
        required f: i32 = "f",
        required g: i64 = "g",
        required h: i32 = "h",
        optional i: String = "i",
        optional j: i32 = "j",
        optional k: bool = "k",
        optional l: i32 = "l",
        optional m: bool = "m",
        optional n: String = "n",
    }
}

impl From<SendMessageRequestHeaderV2> for SendMessageRequestHeader {
    fn from(v2: SendMessageRequestHeaderV2) -> Self {
        Self {
            producer_group: v2.a,
            topic: v2.b,
            default_topic: v2.c,
            default_topic_queue_nums: v2.d,
            queue_id: v2.e,
            sys_flag: v2.f,
            born_timestamp: v2.g,
            flag: v2.h,
            properties: v2.i,
            reconsume_times: v2.j,
            unit_mode: v2.k,
            max_reconsume_times: v2.l,
            batch: v2.m,
            broker_name: v2.n,
        }
    }
}

impl From<SendMessageRequestHeader> for SendMessageRequestHeaderV2 {
    fn from(v1: SendMessageRequestHeader) -> Self {
        Self {
            a: v1.producer_group,
            b: v1.topic,
            c: v1.default_topic,
            d: v1.default_topic_queue_nums,
            e: v1.queue_id,
            f: v1.sys_flag,
            g: v1.born_timestamp,
            h: v1.flag,
            i: v1.properties,
            j: v1.reconsume_times,
            k: v1.unit_mode,
            l: v1.max_reconsume_times,
            m: v1.batch,
            n: v1.broker_name,
        }
    }
}

/// SEND_MESSAGE_V2's fields from borrowed values, rendered straight into `extFields`: a
/// producer's header per message without copying group, topic and properties into a
/// [`SendMessageRequestHeaderV2`] first. Renders what that header renders.
#[derive(Debug, Clone, Copy)]
pub struct SendMessageV2Fields<'a> {
    pub producer_group: &'a str,
    pub topic: &'a str,
    pub default_topic: &'a str,
    pub default_topic_queue_nums: i32,
    pub queue_id: i32,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub flag: i32,
    /// The message's properties, encoded as they are rendered.
    pub properties: Option<&'a BTreeMap<String, String>>,
    pub reconsume_times: Option<i32>,
    pub unit_mode: Option<bool>,
    pub max_reconsume_times: Option<i32>,
    pub batch: Option<bool>,
    pub broker_name: Option<&'a str>,
}

impl SendMessageV2Fields<'_> {
    pub fn to_ext_fields(&self) -> ExtFields {
        // The 14 one-letter keys, room for the numbers and booleans, and the strings.
        let text = 14
            + 64
            + self.producer_group.len()
            + self.topic.len()
            + self.default_topic.len()
            + self.properties.map_or(0, encoded_properties_len)
            + self.broker_name.map_or(0, str::len);
        let mut out = ExtFields::with_capacity(14, text);
        // In key order, so each field goes last.
        out.insert_with("a", |t| t.push_str(self.producer_group));
        out.insert_with("b", |t| t.push_str(self.topic));
        out.insert_with("c", |t| t.push_str(self.default_topic));
        out.insert_with("d", |t| self.default_topic_queue_nums.render_into(t));
        out.insert_with("e", |t| self.queue_id.render_into(t));
        out.insert_with("f", |t| self.sys_flag.render_into(t));
        out.insert_with("g", |t| self.born_timestamp.render_into(t));
        out.insert_with("h", |t| self.flag.render_into(t));
        if let Some(properties) = self.properties {
            out.insert_with("i", |t| encode_properties_into(properties, t));
        }
        render_some(&mut out, "j", self.reconsume_times);
        render_some(&mut out, "k", self.unit_mode);
        render_some(&mut out, "l", self.max_reconsume_times);
        render_some(&mut out, "m", self.batch);
        if let Some(name) = self.broker_name {
            out.insert_with("n", |t| t.push_str(name));
        }
        out
    }
}

fn render_some(out: &mut ExtFields, key: &str, value: Option<impl HeaderValue>) {
    if let Some(v) = value {
        out.insert_with(key, |t| v.render_into(t));
    }
}

command_header! {
    /// Response to SEND_MESSAGE / V2 / batch.
    pub struct SendMessageResponseHeader {
        /// offsetMsgId; for a batch the ids of all messages joined with ','.
        required msg_id: String = "msgId",
        required queue_id: i32 = "queueId",
        required queue_offset: i64 = "queueOffset",
        optional transaction_id: String = "transactionId",
        optional batch_uniq_id: String = "batchUniqId",
        optional msg_region: String = "MSG_REGION",
        optional trace_on: String = "TRACE_ON",
        /// A timer message's handle for RECALL_MESSAGE (RocketMQ 5.3.2+).
        optional recall_handle: String = "recallHandle",
    }
}

command_header! {
    /// RECALL_MESSAGE (370, RocketMQ 5.3.2+): take back a timer message not yet delivered.
    pub struct RecallMessageRequestHeader {
        optional producer_group: String = "producerGroup",
        required topic: String = "topic",
        required recall_handle: String = "recallHandle",
    }
}

command_header! {
    /// RECALL_MESSAGE's answer: the recalled message's id (its UNIQ_KEY).
    pub struct RecallMessageResponseHeader {
        required msg_id: String = "msgId",
    }
}

command_header! {
    /// PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker to the requesting client: a reply sent
    /// with SEND_REPLY_MESSAGE(_V2), the body being the reply's body.
    pub struct ReplyMessageRequestHeader {
        required producer_group: String = "producerGroup",
        required topic: String = "topic",
        required default_topic: String = "defaultTopic",
        required default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        required queue_id: i32 = "queueId",
        required sys_flag: i32 = "sysFlag",
        required born_timestamp: i64 = "bornTimestamp",
        required flag: i32 = "flag",
        optional properties: String = "properties",
        optional reconsume_times: i32 = "reconsumeTimes",
        optional unit_mode: bool = "unitMode",
        required born_host: String = "bornHost",
        required store_host: String = "storeHost",
        required store_timestamp: i64 = "storeTimestamp",
    }
}

command_header! {
    /// END_TRANSACTION (37).
    pub struct EndTransactionRequestHeader {
        required producer_group: String = "producerGroup",
        required tran_state_table_offset: i64 = "tranStateTableOffset",
        required commit_log_offset: i64 = "commitLogOffset",
        /// 0 = not type, 8 = commit, 12 = rollback.
        required commit_or_rollback: i32 = "commitOrRollback",
        optional from_transaction_check: bool = "fromTransactionCheck",
        required msg_id: String = "msgId",
        optional transaction_id: String = "transactionId",
        optional topic: String = "topic",
    }
}

command_header! {
    /// CHECK_TRANSACTION_STATE (39), broker to producer.
    pub struct CheckTransactionStateRequestHeader {
        required tran_state_table_offset: i64 = "tranStateTableOffset",
        required commit_log_offset: i64 = "commitLogOffset",
        optional msg_id: String = "msgId",
        optional transaction_id: String = "transactionId",
        optional offset_msg_id: String = "offsetMsgId",
        optional topic: String = "topic",
    }
}

command_header! {
    /// UNREGISTER_CLIENT (35). Note the capital `ID` of `clientID`.
    pub struct UnregisterClientRequestHeader {
        required client_id: String = "clientID",
        optional producer_group: String = "producerGroup",
        optional consumer_group: String = "consumerGroup",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headers::CommandHeader;
    use crate::message::Properties;

    #[test]
    fn v2_with_numbers_from_cpp_converts_to_v1() {
        let json = r#"{"a":"pg","b":"T","c":"TBW102","d":4,"e":1,"f":0,"g":"1700000000000","h":0,"i":"KEYS\u0001k\u0002","j":0,"k":false,"l":16}"#;
        let fields: ExtFields = serde_json::from_str(json).expect("json");
        let v1: SendMessageRequestHeader = SendMessageRequestHeaderV2::from_ext_fields(&fields)
            .expect("valid")
            .into();
        assert_eq!(v1.producer_group, "pg");
        assert_eq!(v1.queue_id, 1);
        assert_eq!(v1.born_timestamp, 1_700_000_000_000);
        assert_eq!(v1.max_reconsume_times, Some(16));
        assert_eq!(v1.batch, None);
        assert_eq!(v1.unit_mode, Some(false));
        let back: SendMessageRequestHeaderV2 = v1.clone().into();
        assert_eq!(SendMessageRequestHeader::from(back), v1);
    }

    #[test]
    fn borrowed_v2_fields_render_what_the_typed_header_renders() {
        let properties: BTreeMap<String, String> = [("UNIQ_KEY", "u1"), ("KEYS", "k1 k2")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let encoded = properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Properties>()
            .encode();
        for (retry, batch) in [(false, false), (true, false), (false, true)] {
            let borrowed = SendMessageV2Fields {
                producer_group: "pg",
                topic: "T",
                default_topic: "TBW102",
                default_topic_queue_nums: 4,
                queue_id: 3,
                sys_flag: 1,
                born_timestamp: 1_700_000_000_123,
                flag: -2,
                properties: (!batch).then_some(&properties),
                reconsume_times: if retry { Some(2) } else { Some(0) },
                unit_mode: Some(false),
                max_reconsume_times: retry.then_some(16),
                batch: batch.then_some(true),
                broker_name: retry.then_some("b1"),
            };
            let typed = SendMessageRequestHeaderV2 {
                a: "pg".into(),
                b: "T".into(),
                c: "TBW102".into(),
                d: 4,
                e: 3,
                f: 1,
                g: 1_700_000_000_123,
                h: -2,
                i: (!batch).then(|| encoded.clone()),
                j: borrowed.reconsume_times,
                k: Some(false),
                l: borrowed.max_reconsume_times,
                m: borrowed.batch,
                n: borrowed.broker_name.map(str::to_owned),
            };
            let rendered: Vec<(String, String)> = borrowed
                .to_ext_fields()
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let expected: Vec<(String, String)> = typed
                .to_ext_fields()
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            assert_eq!(rendered, expected, "retry {retry}, batch {batch}");
        }
    }
}
