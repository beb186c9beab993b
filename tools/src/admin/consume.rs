//! `printMsg` and `consumeMessage`: a topic's messages read with plain pulls, between two
//! store times. RocketMQ's search by time lands near a time; here the store times of the
//! messages themselves decide, so `-b/-e` (printMsg) and `-s/-e` (consumeMessage) are exact.
#![allow(clippy::print_stdout)] // CLI output

use std::collections::BTreeSet;

use stellmq_client::route::readable_masters;
use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::message::MessageRecord;

use super::print_queue::{message_text, parse_time, wanted_tags};

/// Store-time window `[begin, end]` in milliseconds; either end open.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    begin: Option<i64>,
    end: Option<i64>,
}

impl Window {
    fn parse(begin: Option<&str>, end: Option<&str>) -> Result<Self, ClientError> {
        let w = Window {
            begin: begin.map(parse_time).transpose()?,
            end: end.map(parse_time).transpose()?,
        };
        if let (Some(b), Some(e)) = (w.begin, w.end) {
            if b > e {
                return Err(ClientError::Invalid(format!(
                    "the begin time ({b}) is after the end time ({e})"
                )));
            }
        }
        Ok(w)
    }

    fn holds(&self, store_time: i64) -> bool {
        self.begin.is_none_or(|b| store_time >= b) && self.end.is_none_or(|e| store_time <= e)
    }

    fn past(&self, store_time: i64) -> bool {
        self.end.is_some_and(|e| store_time > e)
    }
}

/// A queue to read: broker address, pulling group, topic, queue id.
struct Queue<'a> {
    addr: &'a str,
    group: &'a str,
    topic: &'a str,
    queue_id: i32,
}

/// One queue read from `from` until its end or a message stored after the window;
/// `visit` gets each message in the window and answers whether to go on.
async fn read_queue(
    admin: &AdminClient,
    q: Queue<'_>,
    from: i64,
    window: Window,
    mut visit: impl FnMut(&MessageRecord) -> bool,
) -> Result<(), ClientError> {
    let Queue {
        addr,
        group,
        topic,
        queue_id,
    } = q;
    let max = admin.max_offset(addr, topic, queue_id).await?;
    let mut offset = match window.begin {
        // The search lands at or before the first message stored at or after `begin`.
        Some(b) => from.max(admin.search_offset(addr, topic, queue_id, b).await?),
        None => from,
    };
    while offset < max {
        let (code, next, records) = admin.pull(addr, group, topic, queue_id, offset, 0).await?;
        if code != 0 || next <= offset {
            return Ok(());
        }
        for m in &records {
            if window.past(m.head.store_timestamp) {
                return Ok(());
            }
            if window.holds(m.head.store_timestamp) && !visit(m) {
                return Ok(());
            }
        }
        offset = next;
    }
    Ok(())
}

/// A body in `charset`: UTF-8 (invalid bytes replaced), ISO-8859-1 or US-ASCII.
fn decode_body(m: &MessageRecord, charset: &str) -> String {
    let body = m
        .uncompressed_body(64 << 20)
        .unwrap_or_else(|_| m.body.clone());
    match charset.to_ascii_uppercase().as_str() {
        "ISO-8859-1" | "LATIN1" | "US-ASCII" => body.iter().map(|&b| char::from(b)).collect(),
        _ => String::from_utf8_lossy(&body).into_owned(),
    }
}

fn check_charset(charset: &str) -> Result<(), ClientError> {
    match charset.to_ascii_uppercase().as_str() {
        "UTF-8" | "UTF8" | "ISO-8859-1" | "LATIN1" | "US-ASCII" => Ok(()),
        _ => Err(ClientError::Invalid(format!(
            "charset {charset} is not supported: use UTF-8, ISO-8859-1 or US-ASCII"
        ))),
    }
}

fn tag_matches(tags: &BTreeSet<String>, m: &MessageRecord) -> bool {
    tags.is_empty() || tags.contains(m.properties.tags().unwrap_or(""))
}

#[derive(clap::Args, Debug)]
pub struct PrintMsg {
    #[arg(short = 't', long = "topic")]
    topic: String,
    /// CharsetName(eg: UTF-8, ISO-8859-1).
    #[arg(short = 'c', long = "charsetName", default_value = "UTF-8")]
    charset: String,
    /// Subscribe Expression(eg: TagA || TagB).
    #[arg(short = 's', long = "subExpression", default_value = "*")]
    expression: String,
    /// Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]: messages stored at or after it.
    #[arg(short = 'b', long = "beginTimestamp")]
    begin: Option<String>,
    /// End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]: messages stored at or before it.
    #[arg(short = 'e', long = "endTimestamp")]
    end: Option<String>,
    /// print body (true|false; default true).
    #[arg(short = 'd', long = "printBody", default_value_t = true, action = clap::ArgAction::Set)]
    print_body: bool,
}

pub async fn print_msg(admin: &AdminClient, a: PrintMsg) -> Result<(), ClientError> {
    check_charset(&a.charset)?;
    let window = Window::parse(a.begin.as_deref(), a.end.as_deref())?;
    let tags = wanted_tags(&a.expression);
    let route = admin.topic_route(&a.topic).await?;
    for (broker, addr, queues) in readable_masters(&route) {
        for queue_id in 0..queues {
            let min = admin.min_offset(addr, &a.topic, queue_id).await?;
            let name = &broker.broker_name;
            crate::outln!(
                "MessageQueue [topic={}, brokerName={name}, queueId={queue_id}]",
                a.topic
            );
            let q = Queue {
                addr,
                group: "TOOLS_CONSUMER",
                topic: &a.topic,
                queue_id,
            };
            read_queue(admin, q, min, window, |m| {
                if tag_matches(&tags, m) {
                    let body = if a.print_body {
                        decode_body(m, &a.charset)
                    } else {
                        "NOT PRINT BODY".to_owned()
                    };
                    crate::outln!(
                        "MSGID: {} {} BODY: {body}",
                        m.msg_id(),
                        message_text(name, m)
                    );
                }
                true
            })
            .await?;
            crate::outln!("--------------------------------------------------------");
        }
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct ConsumeMessage {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'b', long = "brokerName")]
    broker_name: Option<String>,
    /// Queue Id (with -b).
    #[arg(short = 'i', long = "queueId", requires = "broker_name")]
    queue_id: Option<i32>,
    /// Queue offset (with -i).
    #[arg(short = 'o', long = "offset", requires = "queue_id")]
    offset: Option<i64>,
    #[arg(short = 'g', long = "consumerGroup", default_value = "TOOLS_CONSUMER")]
    group: String,
    /// Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]: messages stored at or after it.
    #[arg(short = 's', long = "beginTimestamp")]
    begin: Option<String>,
    /// End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]: messages stored at or before it.
    #[arg(short = 'e', long = "endTimestamp")]
    end: Option<String>,
    /// Number of message to be consumed.
    #[arg(short = 'c', long = "MessageNumber", default_value_t = 128)]
    count: usize,
}

pub async fn consume_message(admin: &AdminClient, a: ConsumeMessage) -> Result<(), ClientError> {
    if a.count == 0 {
        return Err(ClientError::Invalid(
            "Please input a positive messageNumber!".into(),
        ));
    }
    let window = Window::parse(a.begin.as_deref(), a.end.as_deref())?;
    let now = stellmq_client::admin::now_ms();
    if window.begin.is_some_and(|b| b > now) || window.end.is_some_and(|e| e > now) {
        return Err(ClientError::Invalid(
            "Please set the begin and end timestamps before now!".into(),
        ));
    }
    let route = admin.topic_route(&a.topic).await?;
    let mut printed = 0;
    for (_, addr, queues) in readable_masters(&route)
        .filter(|(b, _, _)| a.broker_name.as_ref().is_none_or(|n| *n == b.broker_name))
    {
        for queue_id in (0..queues).filter(|q| a.queue_id.is_none_or(|want| want == *q)) {
            if printed >= a.count {
                return Ok(());
            }
            let from = match a.offset {
                Some(o) => o,
                None => admin.min_offset(addr, &a.topic, queue_id).await?,
            };
            let q = Queue {
                addr,
                group: &a.group,
                topic: &a.topic,
                queue_id,
            };
            read_queue(admin, q, from, window, |m| {
                crate::outln!(
                    "Consume ok, msgId: {}, queueId: {}, queueOffset: {}, storeTime: {}, body: {}",
                    m.msg_id(),
                    m.head.queue_id,
                    m.head.queue_offset,
                    m.head.store_timestamp,
                    decode_body(m, "UTF-8")
                );
                printed += 1;
                printed < a.count
            })
            .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_inclusive_and_checked() {
        let w = Window::parse(Some("100"), Some("200")).unwrap_or_default();
        assert!(w.holds(100) && w.holds(200) && !w.holds(99) && !w.holds(201));
        assert!(w.past(201) && !w.past(200));
        assert!(Window::parse(Some("300"), Some("200")).is_err());
        assert!(Window::parse(Some("soon"), None).is_err());
        assert!(check_charset("GBK").is_err() && check_charset("utf-8").is_ok());
    }
}
