//! RocketMQ's message trace records and their text form (Java's `TraceDataEncoder`): fields
//! separated by U+0001, records ended by U+0002, several records in one trace message body.
//! A missing tag or key is written `null`, as Java writes it, so Java readers show the same.

use std::fmt::Write as _;

/// Between the fields of a record.
pub const CONTENT_SEPARATOR: char = '\u{1}';
/// After each record.
pub const FIELD_SEPARATOR: char = '\u{2}';

/// The kind of a trace record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceType {
    /// A producer's send and its outcome.
    #[default]
    Pub,
    /// A consumer received the message, before its listener ran.
    SubBefore,
    /// The listener's outcome and time.
    SubAfter,
    /// A transaction's commit or rollback.
    EndTransaction,
}

impl TraceType {
    pub fn name(self) -> &'static str {
        match self {
            TraceType::Pub => "Pub",
            TraceType::SubBefore => "SubBefore",
            TraceType::SubAfter => "SubAfter",
            TraceType::EndTransaction => "EndTransaction",
        }
    }
}

/// RocketMQ's `MessageType`, written as its ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceMessageType {
    #[default]
    Normal = 0,
    TransactionHalf = 1,
    TransactionCommit = 2,
    Delay = 3,
    Order = 4,
}

impl TraceMessageType {
    fn from_ordinal(n: &str) -> Option<Self> {
        Some(match n {
            "0" => Self::Normal,
            "1" => Self::TransactionHalf,
            "2" => Self::TransactionCommit,
            "3" => Self::Delay,
            "4" => Self::Order,
            _ => return None,
        })
    }
}

/// RocketMQ's `ConsumeReturnType`, a SubAfter record's context code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeReturnType {
    Success = 0,
    TimeOut = 1,
    Exception = 2,
    ReturnNull = 3,
    Failed = 4,
}

/// One trace record of one message (Java's `TraceContext` with one `TraceBean`). Which fields
/// a kind carries is RocketMQ's choice; the others stay empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceRecord {
    pub kind: TraceType,
    /// When it happened (ms); Pub: when the send began.
    pub timestamp: i64,
    pub region_id: String,
    /// Producer or consumer group, without namespace.
    pub group: String,
    /// Pairs a SubBefore with its SubAfter.
    pub request_id: String,
    pub cost_ms: i64,
    pub success: bool,
    /// SubAfter: a [`ConsumeReturnType`].
    pub context_code: i32,
    pub topic: String,
    /// The client's message id (UNIQ_KEY).
    pub msg_id: String,
    /// The broker's id (store host and offset).
    pub offset_msg_id: String,
    pub tags: String,
    /// Keys separated by spaces.
    pub keys: String,
    /// The broker address the message was sent to.
    pub store_host: String,
    /// Pub: the sender's address, when the record has it (older writers).
    pub client_host: String,
    pub body_length: i64,
    pub retry_times: i32,
    pub msg_type: TraceMessageType,
    pub transaction_id: String,
    /// `COMMIT_MESSAGE`, `ROLLBACK_MESSAGE` or `UNKNOW`.
    pub transaction_state: String,
    pub from_transaction_check: bool,
}

impl TraceRecord {
    /// Appends the record's text form to `out`, as Java's encoder writes it.
    pub fn encode_into(&self, out: &mut String) {
        let fields: Vec<String> = match self.kind {
            TraceType::Pub => vec![
                self.kind.name().into(),
                self.timestamp.to_string(),
                self.region_id.clone(),
                self.group.clone(),
                self.topic.clone(),
                self.msg_id.clone(),
                or_null(&self.tags),
                or_null(&self.keys),
                self.store_host.clone(),
                self.body_length.to_string(),
                self.cost_ms.to_string(),
                (self.msg_type as i32).to_string(),
                self.offset_msg_id.clone(),
                self.success.to_string(),
            ],
            TraceType::SubBefore => vec![
                self.kind.name().into(),
                self.timestamp.to_string(),
                self.region_id.clone(),
                self.group.clone(),
                self.request_id.clone(),
                self.msg_id.clone(),
                self.retry_times.to_string(),
                or_null(&self.keys),
            ],
            TraceType::SubAfter => vec![
                self.kind.name().into(),
                self.request_id.clone(),
                self.msg_id.clone(),
                self.cost_ms.to_string(),
                self.success.to_string(),
                or_null(&self.keys),
                self.context_code.to_string(),
                self.timestamp.to_string(),
                self.group.clone(),
            ],
            TraceType::EndTransaction => vec![
                self.kind.name().into(),
                self.timestamp.to_string(),
                self.region_id.clone(),
                self.group.clone(),
                self.topic.clone(),
                self.msg_id.clone(),
                or_null(&self.tags),
                or_null(&self.keys),
                self.store_host.clone(),
                (self.msg_type as i32).to_string(),
                self.transaction_id.clone(),
                self.transaction_state.clone(),
                self.from_transaction_check.to_string(),
            ],
        };
        for (i, field) in fields.iter().enumerate() {
            if i > 0 {
                out.push(CONTENT_SEPARATOR);
            }
            let _ = write!(out, "{field}");
        }
        out.push(FIELD_SEPARATOR);
    }

    /// The keys the trace message is indexed by: the message id and each of its keys.
    pub fn index_keys(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.msg_id.as_str()).chain(
            self.keys
                .split(' ')
                .filter(|k| !k.is_empty() && *k != "null"),
        )
    }
}

fn or_null(s: &str) -> String {
    if s.is_empty() {
        "null".into()
    } else {
        s.to_owned()
    }
}

/// Every record in a trace message body that can be read; records of unknown kinds or with
/// unreadable fields are skipped (bodies come from any client, or anyone who can send).
pub fn decode(body: &str) -> Vec<TraceRecord> {
    body.split(FIELD_SEPARATOR)
        .filter(|r| !r.is_empty())
        .filter_map(|r| {
            let f: Vec<&str> = r.split(CONTENT_SEPARATOR).collect();
            match f.split_first()? {
                (&"Pub", fields) => decode_pub(fields),
                (&"SubBefore", fields) => decode_sub_before(fields),
                (&"SubAfter", fields) => decode_sub_after(fields),
                (&"EndTransaction", fields) => decode_end_transaction(fields),
                _ => None,
            }
        })
        .collect()
}

// Each decoder gets the fields after the record's kind.

fn decode_pub(f: &[&str]) -> Option<TraceRecord> {
    let [timestamp, region_id, group, topic, msg_id, tags, keys, store_host, body_length, cost_ms, msg_type, rest @ ..] =
        f
    else {
        return None;
    };
    let mut r = TraceRecord {
        kind: TraceType::Pub,
        timestamp: timestamp.parse().ok()?,
        region_id: (*region_id).into(),
        group: (*group).into(),
        topic: (*topic).into(),
        msg_id: (*msg_id).into(),
        tags: (*tags).into(),
        keys: (*keys).into(),
        store_host: (*store_host).into(),
        body_length: body_length.parse().ok()?,
        cost_ms: cost_ms.parse().ok()?,
        msg_type: TraceMessageType::from_ordinal(msg_type)?,
        ..Default::default()
    };
    // 13 fields: no offset id (oldest writers); 14: with it; 15 and more: and the client host.
    match rest {
        [] => return None,
        [success] => r.success = *success == "true",
        [offset_msg_id, success, more @ ..] => {
            r.offset_msg_id = (*offset_msg_id).into();
            r.success = *success == "true";
            if let Some(host) = more.first() {
                r.client_host = (*host).into();
            }
        }
    }
    Some(r)
}

fn decode_sub_before(f: &[&str]) -> Option<TraceRecord> {
    let [timestamp, region_id, group, request_id, msg_id, retry_times, keys, ..] = f else {
        return None;
    };
    Some(TraceRecord {
        kind: TraceType::SubBefore,
        timestamp: timestamp.parse().ok()?,
        region_id: (*region_id).into(),
        group: (*group).into(),
        request_id: (*request_id).into(),
        msg_id: (*msg_id).into(),
        retry_times: retry_times.parse().ok()?,
        keys: (*keys).into(),
        success: true,
        ..Default::default()
    })
}

fn decode_sub_after(f: &[&str]) -> Option<TraceRecord> {
    let [request_id, msg_id, cost_ms, success, keys, rest @ ..] = f else {
        return None;
    };
    let mut r = TraceRecord {
        kind: TraceType::SubAfter,
        request_id: (*request_id).into(),
        msg_id: (*msg_id).into(),
        cost_ms: cost_ms.parse().ok()?,
        success: *success == "true",
        keys: (*keys).into(),
        ..Default::default()
    };
    if let Some(code) = rest.first() {
        r.context_code = code.parse().ok()?;
    }
    // Writers before 4.9 (and the cloud channel) leave out the time and group.
    if let [_, timestamp, group, ..] = rest {
        r.timestamp = timestamp.parse().ok()?;
        r.group = (*group).into();
    }
    Some(r)
}

fn decode_end_transaction(f: &[&str]) -> Option<TraceRecord> {
    let [timestamp, region_id, group, topic, msg_id, tags, keys, store_host, msg_type, transaction_id, transaction_state, from_check, ..] =
        f
    else {
        return None;
    };
    Some(TraceRecord {
        kind: TraceType::EndTransaction,
        timestamp: timestamp.parse().ok()?,
        region_id: (*region_id).into(),
        group: (*group).into(),
        topic: (*topic).into(),
        msg_id: (*msg_id).into(),
        tags: (*tags).into(),
        keys: (*keys).into(),
        store_host: (*store_host).into(),
        msg_type: TraceMessageType::from_ordinal(msg_type)?,
        transaction_id: (*transaction_id).into(),
        transaction_state: (*transaction_state).into(),
        from_transaction_check: *from_check == "true",
        success: true,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: TraceType) -> TraceRecord {
        TraceRecord {
            kind,
            timestamp: 1_700_000_000_123,
            region_id: "DefaultRegion".into(),
            group: "g".into(),
            request_id: "REQ".into(),
            cost_ms: 7,
            success: true,
            context_code: 0,
            topic: "T".into(),
            msg_id: "AC1100".into(),
            offset_msg_id: "7F000001".into(),
            tags: "TagA".into(),
            keys: "k1 k2".into(),
            store_host: "127.0.0.1:10911".into(),
            body_length: 5,
            retry_times: 0,
            msg_type: TraceMessageType::Normal,
            transaction_id: "AC1100".into(),
            transaction_state: "COMMIT_MESSAGE".into(),
            from_transaction_check: false,
            ..Default::default()
        }
    }

    /// Only the fields a kind writes come back.
    fn written(r: &TraceRecord) -> TraceRecord {
        let mut out = String::new();
        r.encode_into(&mut out);
        let mut back = decode(&out);
        assert_eq!(back.len(), 1, "{out:?}");
        back.remove(0)
    }

    #[test]
    fn pub_is_written_as_java_writes_it() {
        let mut out = String::new();
        sample(TraceType::Pub).encode_into(&mut out);
        assert_eq!(
            out,
            "Pub\u{1}1700000000123\u{1}DefaultRegion\u{1}g\u{1}T\u{1}AC1100\u{1}TagA\u{1}k1 k2\u{1}\
             127.0.0.1:10911\u{1}5\u{1}7\u{1}0\u{1}7F000001\u{1}true\u{2}"
        );
        let back = written(&sample(TraceType::Pub));
        assert_eq!(back.offset_msg_id, "7F000001");
        assert_eq!(back.store_host, "127.0.0.1:10911");
        assert!(back.success);
    }

    #[test]
    fn every_kind_reads_back() {
        for kind in [
            TraceType::SubBefore,
            TraceType::SubAfter,
            TraceType::EndTransaction,
        ] {
            let back = written(&sample(kind));
            assert_eq!(back.kind, kind);
            assert_eq!(back.msg_id, "AC1100");
            assert_eq!(back.keys, "k1 k2");
        }
        let after = written(&sample(TraceType::SubAfter));
        assert_eq!((after.group.as_str(), after.cost_ms), ("g", 7));
        let end = written(&sample(TraceType::EndTransaction));
        assert_eq!(end.transaction_state, "COMMIT_MESSAGE");
    }

    #[test]
    fn missing_tags_and_keys_are_null_and_not_index_keys() {
        let mut r = sample(TraceType::Pub);
        r.tags.clear();
        r.keys.clear();
        let mut out = String::new();
        r.encode_into(&mut out);
        assert!(out.contains("\u{1}null\u{1}null\u{1}"));
        let back = written(&r);
        assert_eq!(back.index_keys().collect::<Vec<_>>(), ["AC1100"]);
        assert_eq!(
            sample(TraceType::Pub).index_keys().collect::<Vec<_>>(),
            ["AC1100", "k1", "k2"]
        );
    }

    #[test]
    fn older_and_damaged_records_are_read_or_skipped() {
        // A 4.x SubAfter without time and group, a Pub of 13 fields, then garbage.
        let body = "SubAfter\u{1}R\u{1}ID\u{1}3\u{1}false\u{1}null\u{1}4\u{2}\
                    Pub\u{1}1\u{1}r\u{1}g\u{1}T\u{1}ID\u{1}null\u{1}null\u{1}h\u{1}1\u{1}2\u{1}0\u{1}true\u{2}\
                    Pub\u{1}x\u{2}Nope\u{1}1\u{2}Pub\u{1}1\u{1}r\u{1}g\u{1}T\u{1}ID\u{1}t\u{1}k\u{1}h\u{1}1\u{1}2\u{1}9\u{1}o\u{1}true\u{2}";
        let records = decode(body);
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].context_code, ConsumeReturnType::Failed as i32);
        assert!(!records[0].success);
        assert!(records[1].success && records[1].offset_msg_id.is_empty());
    }
}
