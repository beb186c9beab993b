//! `queryMsgTraceById`: a message's trace (what its producer and consumers recorded in the
//! trace topic), found through the index by message id and printed as RocketMQ prints it:
//! the send (Pub), then per consumer group each consumption (SubAfter).
#![allow(clippy::print_literal)] // header rows are literals

use std::collections::BTreeMap;

use stellmq_client::trace::{decode, TraceRecord, TraceType, DEFAULT_TRACE_TOPIC};
use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::headers::QueryMessageRequestHeader;

use super::{format_time, masters_of};

/// Trace bodies larger than this (inflated) are not read.
const MAX_TRACE_BODY: usize = 4 << 20;

#[derive(clap::Args, Debug)]
pub struct QueryMsgTraceById {
    /// The message id (the client's, UNIQ_KEY).
    #[arg(short = 'i', long = "msgId")]
    id: String,
    /// The trace topic.
    #[arg(short = 't', long = "traceTopic", default_value = DEFAULT_TRACE_TOPIC)]
    trace_topic: String,
    #[arg(short = 'b', long = "beginTimestamp", default_value_t = 0)]
    begin: i64,
    #[arg(short = 'e', long = "endTimestamp", default_value_t = i64::MAX)]
    end: i64,
    /// Trace messages read at most, per broker.
    #[arg(short = 'c', long = "maxNum", default_value_t = 64)]
    max: i32,
}

/// A trace record of the message and the address of the client that sent it.
struct Seen {
    record: TraceRecord,
    client_host: String,
}

pub async fn query_msg_trace_by_id(
    admin: &AdminClient,
    a: QueryMsgTraceById,
) -> Result<(), ClientError> {
    let id = a.id.trim();
    let seen = find_trace(admin, &a, id).await?;
    print_trace(&seen);
    Ok(())
}

async fn find_trace(
    admin: &AdminClient,
    a: &QueryMsgTraceById,
    id: &str,
) -> Result<Vec<Seen>, ClientError> {
    let query = QueryMessageRequestHeader {
        topic: a.trace_topic.clone(),
        key: id.to_owned(),
        max_num: a.max,
        begin_timestamp: a.begin,
        end_timestamp: a.end,
        unique_key_query: None,
    };
    let mut seen = Vec::new();
    for addr in masters_of(admin, &a.trace_topic).await? {
        for message in admin.query_message(&addr, &query).await? {
            let Ok(body) = message.uncompressed_body(MAX_TRACE_BODY) else {
                continue;
            };
            let client_host = message.head.born_host.to_string();
            let text = String::from_utf8_lossy(&body);
            seen.extend(
                decode(&text)
                    .into_iter()
                    .filter(|r| r.msg_id == id)
                    .map(|record| Seen {
                        record,
                        client_host: client_host.clone(),
                    }),
            );
        }
    }
    seen.sort_by_key(|s| s.record.timestamp);
    Ok(seen)
}

fn row(kind: &str, group: &str, host: &str, time: &str, cost: &str, status: &str) {
    crate::outln!("{kind:<10} {group:<20} {host:<20} {time:<20} {cost:<10} {status:<10}");
}

fn status(r: &TraceRecord) -> &'static str {
    if r.success {
        "success"
    } else {
        "failed"
    }
}

/// `yyyy-MM-dd HH:mm:ss`, as the Java command prints trace times.
fn seconds(ms: i64) -> String {
    format_time(ms).chars().take(19).collect()
}

fn print_trace(seen: &[Seen]) {
    let mut consumers: BTreeMap<&str, Vec<&Seen>> = BTreeMap::new();
    for s in seen {
        match s.record.kind {
            TraceType::Pub => {
                header("#ProducerGroup", "#SendTime");
                record_row("Pub", s);
                crate::outln!();
            }
            TraceType::SubAfter => consumers.entry(&s.record.group).or_default().push(s),
            _ => {}
        }
    }
    for subs in consumers.values() {
        header("#ConsumerGroup", "#ConsumerTime");
        for s in subs {
            record_row("Sub", s);
        }
        crate::outln!();
    }
}

fn header(group: &str, time: &str) {
    row("#Type", group, "#ClientHost", time, "#CostTimes", "#Status");
}

/// A record's line: its group, the client, time, cost and outcome.
fn record_row(kind: &str, s: &Seen) {
    let r = &s.record;
    let cost = format!("{}ms", r.cost_ms);
    row(
        kind,
        &r.group,
        &s.client_host,
        &seconds(r.timestamp),
        &cost,
        status(r),
    );
}
