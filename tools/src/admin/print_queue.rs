//! `printMsgByQueue`: the messages of one queue between two times, filtered by tag,
//! printed and/or counted per tag.
#![allow(clippy::print_stdout)] // CLI output

use std::collections::{BTreeMap, BTreeSet};

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::message::{MessageRecord, UtcTime};

#[derive(clap::Args, Debug)]
pub struct PrintMsgByQueue {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'a', long = "brokerName")]
    broker_name: String,
    #[arg(short = 'i', long = "queueId")]
    queue_id: i32,
    /// Charset of the bodies; bodies are printed as UTF-8 (invalid bytes replaced).
    #[arg(short = 'c', long = "charsetName", default_value = "UTF-8")]
    charset: String,
    /// Tag expression, e.g. `TagA || TagB`.
    #[arg(short = 's', long = "subExpression", default_value = "*")]
    expression: String,
    /// Begin time: epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS (UTC).
    #[arg(short = 'b', long = "beginTimestamp")]
    begin: Option<String>,
    /// End time, as `-b`.
    #[arg(short = 'e', long = "endTimestamp")]
    end: Option<String>,
    /// Print each message.
    #[arg(short = 'p', long = "printMsg", default_value_t = false, action = clap::ArgAction::Set)]
    print: bool,
    /// Print bodies with the messages.
    #[arg(short = 'd', long = "printBody", default_value_t = false, action = clap::ArgAction::Set)]
    print_body: bool,
    /// Count messages per tag.
    #[arg(short = 'f', long = "calculate", default_value_t = false, action = clap::ArgAction::Set)]
    count_tags: bool,
}

/// Epoch milliseconds, or `yyyy-MM-dd#HH:mm:ss:SSS` (UTC) as RocketMQ's tools accept.
pub fn parse_time(text: &str) -> Result<i64, ClientError> {
    if let Ok(ms) = text.trim().parse::<i64>() {
        return Ok(ms);
    }
    let bad = || {
        ClientError::Invalid(format!(
            "cannot parse time '{text}': use epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS"
        ))
    };
    let (date, time) = text.trim().split_once('#').ok_or_else(bad)?;
    let d: Vec<i64> = date
        .split('-')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let t: Vec<i64> = time
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let (&[year, month, day], &[hour, minute, second, millis]) = (&d[..], &t[..]) else {
        return Err(bad());
    };
    Ok(UtcTime {
        year,
        month,
        day,
        hour,
        minute,
        second,
        millis,
    }
    .to_ms())
}

/// The tags of a `TagA || TagB` expression; empty for `*` (every message).
pub(super) fn wanted_tags(expression: &str) -> BTreeSet<String> {
    expression
        .split("||")
        .map(str::trim)
        .filter(|t| !t.is_empty() && *t != "*")
        .map(str::to_owned)
        .collect()
}

/// A message as RocketMQ's `MessageExt.toString()` shows its main fields.
pub(super) fn message_text(broker_name: &str, m: &MessageRecord) -> String {
    let props: Vec<String> = m
        .properties
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "MessageExt [brokerName={broker_name}, queueId={}, queueOffset={}, sysFlag={}, bornTimestamp={}, bornHost={}, storeTimestamp={}, storeHost={}, msgId={}, commitLogOffset={}, reconsumeTimes={}, toString()=Message{{topic='{}', flag={}, properties={{{}}}}}]",
        m.head.queue_id,
        m.head.queue_offset,
        m.head.sys_flag,
        m.head.born_timestamp,
        m.head.born_host,
        m.head.store_timestamp,
        m.head.store_host,
        m.offset_msg_id(),
        m.head.physical_offset,
        m.head.reconsume_times,
        m.topic,
        m.head.flag,
        props.join(", ")
    )
}

pub async fn print_msg_by_queue(
    admin: &AdminClient,
    a: PrintMsgByQueue,
) -> Result<(), ClientError> {
    let route = admin.topic_route(&a.topic).await?;
    let addr = route
        .broker_datas
        .iter()
        .find(|b| b.broker_name == a.broker_name)
        .and_then(|b| b.master_addr().map(str::to_owned))
        .ok_or_else(|| {
            ClientError::Invalid(format!(
                "broker {} does not serve topic {}",
                a.broker_name, a.topic
            ))
        })?;
    let (topic, q) = (&a.topic, a.queue_id);
    let mut offset = match &a.begin {
        Some(t) => admin.search_offset(&addr, topic, q, parse_time(t)?).await?,
        None => admin.min_offset(&addr, topic, q).await?,
    };
    let end = match &a.end {
        Some(t) => admin.search_offset(&addr, topic, q, parse_time(t)?).await?,
        None => admin.max_offset(&addr, topic, q).await?,
    };
    if !a.charset.eq_ignore_ascii_case("UTF-8") && !a.charset.eq_ignore_ascii_case("UTF8") {
        eprintln!("bodies are printed as UTF-8, not {}", a.charset);
    }
    let tags = wanted_tags(&a.expression);
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    while offset < end {
        let (code, next, records) = admin
            .pull(&addr, "TOOLS_CONSUMER", topic, q, offset, 0)
            .await?;
        if code != 0 || next <= offset {
            break;
        }
        for m in records.iter().filter(|m| m.head.queue_offset < end) {
            let tag = m.properties.tags().unwrap_or("");
            if !tags.is_empty() && !tags.contains(tag) {
                continue;
            }
            if !tag.is_empty() {
                *counts.entry(tag.to_owned()).or_default() += 1;
            }
            if a.print {
                let body = if a.print_body {
                    let body = m
                        .uncompressed_body(64 << 20)
                        .unwrap_or_else(|_| m.body.clone());
                    String::from_utf8_lossy(&body).into_owned()
                } else {
                    "NOT PRINT BODY".to_owned()
                };
                crate::outln!(
                    "MSGID: {} {} BODY: {body}",
                    m.msg_id(),
                    message_text(&a.broker_name, m)
                );
            }
        }
        offset = next;
    }
    if a.count_tags {
        let mut by_count: Vec<(String, u64)> = counts.into_iter().collect();
        by_count.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
        for (tag, count) in by_count {
            crate::outln!("Tag: {tag:<30} Count: {count}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_tags_parse() {
        assert_eq!(parse_time("1700000000000").ok(), Some(1_700_000_000_000));
        assert_eq!(
            parse_time("2023-11-14#22:13:20:000").ok(),
            Some(1_700_000_000_000)
        );
        assert!(parse_time("yesterday").is_err());
        assert!(wanted_tags(" * ").is_empty());
        assert_eq!(
            wanted_tags("TagA || TagB").into_iter().collect::<Vec<_>>(),
            ["TagA", "TagB"]
        );
    }
}
