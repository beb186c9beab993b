//! Finding messages: by key, by id (an offsetMsgId, or a client's UNIQ_KEY within a topic)
//! and by time range; and a message's trace records. Everything is bounded: result counts
//! and the bodies read.

use stellmq_client::route::readable_masters;
use stellmq_client::trace::{decode, TraceRecord};
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::headers::QueryMessageRequestHeader;
use stellmq_remoting::protocol::message::{id, property, MessageRecord};

use crate::error::ConsoleError;

/// Messages shown at most by one query.
pub const MAX_RESULTS: usize = 64;
/// Messages pulled at most from one queue by a time-range query.
const MAX_PULLS_PER_QUEUE: usize = 8;
/// Bodies are inflated up to this size.
pub const MAX_BODY: usize = 4 << 20;
/// The group time-range queries pull as (no offsets are committed).
const PULL_GROUP: &str = "TOOLS_CONSUMER";

/// A message and the broker it was read from.
#[derive(Debug, Clone)]
pub struct Found {
    pub broker_name: String,
    pub addr: String,
    pub record: MessageRecord,
}

impl Found {
    /// The client's id (UNIQ_KEY) when the producer set one, else the offsetMsgId.
    pub fn msg_id(&self) -> String {
        self.record
            .properties
            .get(property::UNIQ_KEY)
            .map_or_else(|| self.record.offset_msg_id(), str::to_owned)
    }
}

fn key_query(
    topic: &str,
    key: &str,
    unique: bool,
    begin: i64,
    end: i64,
) -> QueryMessageRequestHeader {
    QueryMessageRequestHeader {
        topic: topic.to_owned(),
        key: key.to_owned(),
        max_num: MAX_RESULTS as i32,
        begin_timestamp: begin,
        end_timestamp: end,
        unique_key_query: unique.then_some(true),
    }
}

/// The masters serving `topic`: (broker name, address).
pub async fn masters_of(
    admin: &AdminClient,
    topic: &str,
) -> Result<Vec<(String, String)>, ConsoleError> {
    let route = admin.topic_route(topic).await?;
    Ok(readable_masters(&route)
        .map(|(b, addr, _)| (b.broker_name.clone(), addr.to_owned()))
        .collect())
}

/// Messages of `topic` whose KEYS hold `key` (or whose UNIQ_KEY is `key`), within
/// `[begin, end]`.
pub async fn by_key(
    admin: &AdminClient,
    topic: &str,
    key: &str,
    begin: i64,
    end: i64,
) -> Result<Vec<Found>, ConsoleError> {
    let mut found = Vec::new();
    for (broker_name, addr) in masters_of(admin, topic).await? {
        let hits = admin
            .query_message(&addr, &key_query(topic, key, false, begin, end))
            .await?;
        // The index can collide: keep the messages that really carry the key.
        found.extend(
            hits.into_iter()
                .filter(|m| m.topic == topic && carries(m, key))
                .map(|record| Found {
                    broker_name: broker_name.clone(),
                    addr: addr.clone(),
                    record,
                }),
        );
    }
    found.truncate(MAX_RESULTS);
    Ok(found)
}

fn carries(m: &MessageRecord, key: &str) -> bool {
    m.properties.keys().any(|k| k == key) || m.properties.get(property::UNIQ_KEY) == Some(key)
}

/// The ids a copy of `original` (a retry or a dead letter) is known by: its UNIQ_KEY, or
/// its offsetMsgId, which send-backs record as ORIGIN_MESSAGE_ID.
pub fn ids_of(original: &MessageRecord) -> Vec<String> {
    let mut ids: Vec<String> = original
        .properties
        .get(property::UNIQ_KEY)
        .map(str::to_owned)
        .into_iter()
        .collect();
    ids.push(original.offset_msg_id());
    ids
}

/// The index keys to look copies of `original` up by: its UNIQ_KEY, else its KEYS.
fn index_keys(original: &MessageRecord) -> Vec<String> {
    match original.properties.get(property::UNIQ_KEY) {
        Some(uniq) => vec![uniq.to_owned()],
        None => original
            .properties
            .keys()
            .take(4)
            .map(str::to_owned)
            .collect(),
    }
}

/// Messages of `topic` (a retry or DLQ topic) that are copies of `original`: they carry
/// its UNIQ_KEY, or one of its ids as ORIGIN_MESSAGE_ID. None when `topic` does not exist.
pub async fn copies_of(
    admin: &AdminClient,
    topic: &str,
    original: &MessageRecord,
) -> Result<Vec<Found>, ConsoleError> {
    let Ok(masters) = masters_of(admin, topic).await else {
        return Ok(Vec::new());
    };
    let ids = ids_of(original);
    let is_copy = |m: &MessageRecord| {
        let p = &m.properties;
        ids.iter().any(|id| {
            p.get(property::UNIQ_KEY) == Some(id) || p.get(property::ORIGIN_MESSAGE_ID) == Some(id)
        })
    };
    let mut found: Vec<Found> = Vec::new();
    for (broker_name, addr) in masters {
        for key in index_keys(original) {
            let hits = admin
                .query_message(&addr, &key_query(topic, &key, false, 0, i64::MAX))
                .await?;
            for record in hits.into_iter().filter(|m| m.topic == topic && is_copy(m)) {
                let offset = record.head.physical_offset;
                if !found
                    .iter()
                    .any(|f| f.addr == addr && f.record.head.physical_offset == offset)
                {
                    found.push(Found {
                        broker_name: broker_name.clone(),
                        addr: addr.clone(),
                        record,
                    });
                }
            }
        }
    }
    found.sort_by_key(|f| f.record.head.store_timestamp);
    Ok(found)
}

/// Every broker address the name servers know, with its broker name.
async fn known_brokers(admin: &AdminClient) -> Result<Vec<(String, String)>, ConsoleError> {
    let info = admin.cluster_info().await?;
    Ok(info
        .broker_addr_table
        .values()
        .flat_map(|b| {
            b.broker_addrs
                .0
                .values()
                .map(|a| (b.broker_name.clone(), a.clone()))
        })
        .collect())
}

/// The message with id `msg_id`: an offsetMsgId of a known broker, or else a UNIQ_KEY
/// looked up in `topic`.
pub async fn by_id(
    admin: &AdminClient,
    msg_id: &str,
    topic: Option<&str>,
) -> Result<Option<Found>, ConsoleError> {
    // Only brokers the name server knows are dialled: an id decodes to any address.
    if let Ok((addr, offset)) = id::decode_offset_msg_id(msg_id) {
        let addr = addr.to_string();
        let known = known_brokers(admin).await?;
        if let Some((broker_name, _)) = known.iter().find(|(_, a)| *a == addr) {
            if let Ok(record) = admin.view_message(&addr, offset).await {
                return Ok(Some(Found {
                    broker_name: broker_name.clone(),
                    addr,
                    record,
                }));
            }
        }
    }
    let Some(topic) = topic else {
        return Ok(None);
    };
    for (broker_name, addr) in masters_of(admin, topic).await? {
        let hits = admin
            .query_message(&addr, &key_query(topic, msg_id, true, 0, i64::MAX))
            .await?;
        if let Some(record) = hits
            .into_iter()
            .find(|m| m.properties.get(property::UNIQ_KEY) == Some(msg_id))
        {
            return Ok(Some(Found {
                broker_name,
                addr,
                record,
            }));
        }
    }
    Ok(None)
}

/// Messages of `topic` stored within `[begin, end]`, read queue by queue.
pub async fn by_time(
    admin: &AdminClient,
    topic: &str,
    begin: i64,
    end: i64,
) -> Result<Vec<Found>, ConsoleError> {
    let route = admin.topic_route(topic).await?;
    let mut found = Vec::new();
    for (broker, addr, queues) in readable_masters(&route) {
        for queue_id in 0..queues {
            let from = admin.search_offset(addr, topic, queue_id, begin).await?;
            let to = admin
                .search_offset(addr, topic, queue_id, end)
                .await?
                .max(from);
            let mut offset = from;
            for _ in 0..MAX_PULLS_PER_QUEUE {
                if offset > to || found.len() >= MAX_RESULTS {
                    break;
                }
                let (_, next, records) = admin
                    .pull(addr, PULL_GROUP, topic, queue_id, offset, 0)
                    .await?;
                found.extend(
                    records
                        .into_iter()
                        .filter(|m| (begin..=end).contains(&m.head.store_timestamp))
                        .map(|record| Found {
                            broker_name: broker.broker_name.clone(),
                            addr: addr.to_owned(),
                            record,
                        }),
                );
                if next <= offset {
                    break;
                }
                offset = next;
            }
        }
    }
    found.sort_by_key(|f| f.record.head.store_timestamp);
    found.truncate(MAX_RESULTS);
    Ok(found)
}

/// The trace records of message `msg_id` in `trace_topic`, oldest first, with the address
/// of the client that wrote each; none when there is no trace topic.
pub async fn trace_of(
    admin: &AdminClient,
    trace_topic: &str,
    msg_id: &str,
) -> Vec<(TraceRecord, String)> {
    let Ok(masters) = masters_of(admin, trace_topic).await else {
        return Vec::new();
    };
    let mut seen = Vec::new();
    for (_, addr) in masters {
        let Ok(hits) = admin
            .query_message(&addr, &key_query(trace_topic, msg_id, false, 0, i64::MAX))
            .await
        else {
            continue;
        };
        for m in hits {
            let Ok(body) = m.uncompressed_body(MAX_BODY) else {
                continue;
            };
            let host = m.head.born_host.to_string();
            seen.extend(
                decode(&String::from_utf8_lossy(&body))
                    .into_iter()
                    .filter(|r| r.msg_id == msg_id)
                    .map(|r| (r, host.clone())),
            );
        }
    }
    seen.sort_by_key(|(r, _)| r.timestamp);
    seen
}
