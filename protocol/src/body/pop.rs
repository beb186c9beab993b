//! POP bodies: BATCH_ACK_MESSAGE's request (`BatchAckMessageRequestBody` of `BatchAck`s) and
//! the revive log's records (`PopCheckPoint`, `AckMsg`, `BatchAckMsg`), with the short JSON
//! keys RocketMQ 5.1's `@JSONField` annotations give them (the long names are accepted when
//! reading, as fastjson's `alternateNames`).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `BatchAckMessageRequestBody`: the acks of one BATCH_ACK_MESSAGE.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchAckMessageRequestBody {
    #[serde(default)]
    pub acks: Vec<BatchAck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
}

/// `BatchAck`: the acked messages of one POP batch, as a bit set over offsets counted from
/// `startOffset`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAck {
    #[serde(rename = "c", alias = "consumerGroup")]
    pub consumer_group: String,
    #[serde(rename = "t", alias = "topic")]
    pub topic: String,
    /// The handle's topic type: `"0"`, or `"1"` for the POP retry topic.
    #[serde(rename = "r", alias = "retry")]
    pub retry: String,
    #[serde(rename = "so", alias = "startOffset")]
    pub start_offset: i64,
    #[serde(rename = "q", alias = "queueId")]
    pub queue_id: i32,
    #[serde(rename = "rq", alias = "reviveQueueId")]
    pub revive_queue_id: i32,
    #[serde(rename = "pt", alias = "popTime")]
    pub pop_time: i64,
    #[serde(rename = "it", alias = "invisibleTime")]
    pub invisible_time: i64,
    /// `java.util.BitSet`, written by fastjson as the base64 of `BitSet.toByteArray()`.
    #[serde(rename = "b", alias = "bitSet", default, with = "bit_set")]
    pub bit_set: BitSet,
}

/// A `java.util.BitSet` (little-endian bytes, bit `i` of byte `n` is index `8n + i`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BitSet(pub Vec<u8>);

/// Largest index a bit set from a client may hold: a POP batch has at most 32 messages, and
/// a bit set far past that is refused rather than walked.
pub const BIT_SET_MAX_BYTES: usize = 1024;

impl BitSet {
    pub fn from_indexes(indexes: impl IntoIterator<Item = usize>) -> Self {
        let mut bytes = Vec::new();
        for i in indexes {
            let byte = i / 8;
            if bytes.len() <= byte {
                bytes.resize(byte + 1, 0);
            }
            if let Some(b) = bytes.get_mut(byte) {
                *b |= 1 << (i % 8);
            }
        }
        Self(bytes)
    }

    /// The set indexes, ascending.
    pub fn indexes(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(n, byte)| {
            (0..8)
                .filter(move |bit| byte & (1 << bit) != 0)
                .map(move |bit| n * 8 + bit)
        })
    }

    /// `BitSet.toByteArray()`: trailing zero bytes dropped.
    pub fn to_java_bytes(&self) -> Vec<u8> {
        let mut bytes = self.0.clone();
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        bytes
    }
}

mod bit_set {
    use super::*;

    pub fn serialize<S: Serializer>(set: &BitSet, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&BASE64.encode(set.to_java_bytes()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BitSet, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        let bytes = BASE64
            .decode(text.trim())
            .map_err(|e| serde::de::Error::custom(format!("bit set is not base64: {e}")))?;
        if bytes.len() > BIT_SET_MAX_BYTES {
            return Err(serde::de::Error::custom(format!(
                "bit set of {} bytes is larger than {BIT_SET_MAX_BYTES}",
                bytes.len()
            )));
        }
        Ok(BitSet(bytes))
    }
}

/// `PopCheckPoint`: one POP batch in the revive log (tag `ck`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PopCheckPoint {
    #[serde(rename = "so")]
    pub start_offset: i64,
    #[serde(rename = "pt")]
    pub pop_time: i64,
    #[serde(rename = "it")]
    pub invisible_time: i64,
    /// Acked messages, bit `i` for the `i`th of `d`.
    #[serde(rename = "bm", default)]
    pub bit_map: i32,
    #[serde(rename = "n")]
    pub num: i32,
    #[serde(rename = "q")]
    pub queue_id: i32,
    /// The topic read (the POP retry topic for retries).
    #[serde(rename = "t")]
    pub topic: String,
    #[serde(rename = "c")]
    pub cid: String,
    #[serde(rename = "ro", default)]
    pub revive_offset: i64,
    /// Each message's queue offset minus `so`.
    #[serde(rename = "d", default)]
    pub queue_offset_diff: Vec<i64>,
    #[serde(rename = "bn", default, skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
}

impl PopCheckPoint {
    /// When its unacked messages are revived (`getReviveTime`).
    pub fn revive_time(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }

    /// The queue offsets of its messages.
    pub fn offsets(&self) -> Vec<i64> {
        self.queue_offset_diff
            .iter()
            .map(|d| self.start_offset.saturating_add(*d))
            .collect()
    }
}

/// `AckMsg` (tag `ack`) and `BatchAckMsg` (tag `bAck`, with `aol`) in the revive log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckMsg {
    /// The acked message's queue offset (-1 in a batch ack).
    #[serde(rename = "ao", alias = "ackOffset", default)]
    pub ack_offset: i64,
    #[serde(rename = "so", alias = "startOffset")]
    pub start_offset: i64,
    #[serde(rename = "c", alias = "consumerGroup")]
    pub consumer_group: String,
    #[serde(rename = "t", alias = "topic")]
    pub topic: String,
    #[serde(rename = "q", alias = "queueId")]
    pub queue_id: i32,
    #[serde(rename = "pt", alias = "popTime")]
    pub pop_time: i64,
    #[serde(
        rename = "bn",
        alias = "brokerName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub broker_name: Option<String>,
    /// A batch ack's offsets (`BatchAckMsg.ackOffsetList`).
    #[serde(
        rename = "aol",
        alias = "ackOffsetList",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ack_offset_list: Vec<i64>,
}

impl AckMsg {
    /// The acked queue offsets, whether single or batch.
    pub fn acked_offsets(&self) -> Vec<i64> {
        if self.ack_offset_list.is_empty() {
            vec![self.ack_offset]
        } else {
            self.ack_offset_list.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fastjson;
    use super::*;

    #[test]
    fn batch_ack_uses_java_keys_and_base64_bit_sets() {
        let body = BatchAckMessageRequestBody {
            broker_name: Some("broker-a".into()),
            acks: vec![BatchAck {
                consumer_group: "g".into(),
                topic: "T".into(),
                retry: "0".into(),
                start_offset: 10,
                queue_id: 1,
                revive_queue_id: 2,
                pop_time: 1000,
                invisible_time: 5000,
                bit_set: BitSet::from_indexes([0, 2, 9]),
            }],
        };
        let json = String::from_utf8(fastjson::encode(&body)).expect("utf-8");
        assert_eq!(
            json,
            r#"{"acks":[{"b":"BQI=","c":"g","it":5000,"pt":1000,"q":1,"r":"0","rq":2,"so":10,"t":"T"}],"brokerName":"broker-a"}"#
        );
        let back: BatchAckMessageRequestBody = fastjson::decode(json.as_bytes()).expect("decodes");
        assert_eq!(back, body);
        assert_eq!(
            back.acks[0].bit_set.indexes().collect::<Vec<_>>(),
            [0, 2, 9]
        );
        // fastjson's alternate names.
        let long = r#"{"acks":[{"consumerGroup":"g","topic":"T","retry":"1","startOffset":1,"queueId":0,"reviveQueueId":0,"popTime":1,"invisibleTime":1,"bitSet":"AQ=="}]}"#;
        let back: BatchAckMessageRequestBody = fastjson::decode(long.as_bytes()).expect("decodes");
        assert_eq!(back.acks[0].bit_set.indexes().collect::<Vec<_>>(), [0]);
        let huge = format!(
            r#"{{"acks":[{{"c":"g","t":"T","r":"0","so":1,"q":0,"rq":0,"pt":1,"it":1,"b":"{}"}}]}}"#,
            BASE64.encode(vec![1u8; 4096])
        );
        assert!(fastjson::decode::<BatchAckMessageRequestBody>(huge.as_bytes()).is_err());
    }

    #[test]
    fn checkpoint_and_ack_records_round_trip() {
        let ck = PopCheckPoint {
            start_offset: 5,
            pop_time: 100,
            invisible_time: 50,
            bit_map: 0,
            num: 2,
            queue_id: 1,
            topic: "T".into(),
            cid: "g".into(),
            revive_offset: 0,
            queue_offset_diff: vec![0, 3],
            broker_name: Some("broker-a".into()),
        };
        let json = String::from_utf8(fastjson::encode(&ck)).expect("utf-8");
        assert_eq!(
            json,
            r#"{"bm":0,"bn":"broker-a","c":"g","d":[0,3],"it":50,"n":2,"pt":100,"q":1,"ro":0,"so":5,"t":"T"}"#
        );
        assert_eq!(ck.offsets(), [5, 8]);
        assert_eq!(ck.revive_time(), 150);
        let ack = AckMsg {
            ack_offset: -1,
            start_offset: 5,
            consumer_group: "g".into(),
            topic: "T".into(),
            queue_id: 1,
            pop_time: 100,
            broker_name: None,
            ack_offset_list: vec![5, 8],
        };
        let back: AckMsg = fastjson::decode(&fastjson::encode(&ack)).expect("decodes");
        assert_eq!(back.acked_offsets(), [5, 8]);
    }
}
