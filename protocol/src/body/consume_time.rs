//! Consume-progress queries of a topic on one broker: QUERY_CONSUME_TIME_SPAN (303) answers
//! `QueryConsumeTimeSpanBody`, QUERY_CORRECTION_OFFSET (308) `QueryCorrectionOffsetBody`.

use serde::{Deserialize, Serialize};

use super::fastjson::IntKeyMap;
use super::MessageQueue;
use crate::message::UtcTime;

/// One queue's time span (`QueueTimeSpan`): store times of its first and last message and of
/// the last one the group consumed, and how long the next unconsumed message has waited.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueTimeSpan {
    pub message_queue: MessageQueue,
    pub min_time_stamp: i64,
    pub max_time_stamp: i64,
    pub consume_time_stamp: i64,
    /// Milliseconds since the next message to consume was stored (0: nothing to consume).
    pub delay_time: i64,
    /// Java's derived getters, which fastjson writes too.
    pub min_time_stamp_str: String,
    pub max_time_stamp_str: String,
    pub consume_time_stamp_str: String,
}

impl QueueTimeSpan {
    /// A span with its `*Str` fields rendered as Java's `timeMillisToHumanString2` does.
    pub fn new(
        message_queue: MessageQueue,
        min_time_stamp: i64,
        max_time_stamp: i64,
        consume_time_stamp: i64,
        delay_time: i64,
    ) -> Self {
        Self {
            message_queue,
            min_time_stamp,
            max_time_stamp,
            consume_time_stamp,
            delay_time,
            min_time_stamp_str: human_time(min_time_stamp),
            max_time_stamp_str: human_time(max_time_stamp),
            consume_time_stamp_str: human_time(consume_time_stamp),
        }
    }
}

/// `yyyy-MM-dd HH:mm:ss,SSS` (UTC).
fn human_time(ms: i64) -> String {
    let t = UtcTime::from_ms(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03}",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
    )
}

/// QUERY_CONSUME_TIME_SPAN body: one span per write queue.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryConsumeTimeSpanBody {
    pub consume_time_span_set: Vec<QueueTimeSpan>,
}

/// QUERY_CORRECTION_OFFSET body: per queue id, the smallest offset every other group has
/// consumed (`Long.MAX_VALUE` where the compared group is ahead of them).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryCorrectionOffsetBody {
    pub correction_offsets: IntKeyMap<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    #[test]
    fn time_span_in_fastjson_form() {
        let mq = MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: 0,
        };
        let body = QueryConsumeTimeSpanBody {
            consume_time_span_set: vec![QueueTimeSpan::new(mq, 1_000, 86_401_000, 0, 5)],
        };
        let text = String::from_utf8(fastjson::encode(&body)).expect("utf8");
        assert!(text.contains(r#""maxTimeStampStr":"1970-01-02 00:00:01,000""#));
        assert!(text.contains(r#""messageQueue":{"brokerName":"b","queueId":0,"topic":"T"}"#));
        let back: QueryConsumeTimeSpanBody = fastjson::decode(text.as_bytes()).expect("decodes");
        assert_eq!(back, body);
        let corr = QueryCorrectionOffsetBody {
            correction_offsets: [(0, i64::MAX), (1, 4)].into_iter().collect(),
        };
        assert_eq!(
            String::from_utf8(fastjson::encode(&corr)).expect("utf8"),
            r#"{"correctionOffsets":{0:9223372036854775807,1:4}}"#
        );
    }
}
