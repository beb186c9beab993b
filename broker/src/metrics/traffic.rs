//! Messages and bytes in (by topic and message type) and out (by topic and consumer group),
//! counted on the send and pull paths: one read-locked map lookup by `&str` (no allocation,
//! no exclusive lock) and a few relaxed atomic adds per request. A new topic or pair takes
//! the write lock once. The maps are bounded: past the limit, new keys share one
//! `_overflow_` series, so a client inventing names cannot grow them without end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use stellmq_metrics::AtomicHistogram;
use stellmq_remoting::protocol::message::{MessageKind, PropertyLookup};

/// Topics (in) and topic/group pairs (out) counted separately before overflow.
pub const MAX_SERIES: usize = 10_000;
/// The topic (and group) label of what is past [`MAX_SERIES`].
pub const OVERFLOW: &str = "_overflow_";
/// RocketMQ's message size buckets (bytes): 1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB.
static SIZE_BOUNDS: [u64; 6] = [1024, 4096, 512 * 1024, 1 << 20, 2 << 20, 4 << 20];

/// RocketMQ's `TopicMessageType` as the `message_type` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    Normal,
    Fifo,
    Delay,
    Transaction,
    Priority,
    Lite,
}

impl MessageType {
    pub const ALL: [MessageType; 6] = [
        Self::Normal,
        Self::Fifo,
        Self::Delay,
        Self::Transaction,
        Self::Priority,
        Self::Lite,
    ];

    /// As RocketMQ reads it from a send's properties.
    pub fn of(props: &impl PropertyLookup) -> Self {
        match MessageKind::of(props) {
            MessageKind::Normal => Self::Normal,
            MessageKind::Fifo => Self::Fifo,
            MessageKind::Delay => Self::Delay,
            MessageKind::Transaction => Self::Transaction,
            MessageKind::Priority => Self::Priority,
            MessageKind::Lite => Self::Lite,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Fifo => "fifo",
            Self::Delay => "delay",
            Self::Transaction => "transaction",
            Self::Priority => "priority",
            Self::Lite => "lite",
        }
    }
}

/// What came into one topic as one message type.
#[derive(Debug)]
pub struct InCell {
    pub messages: AtomicU64,
    pub bytes: AtomicU64,
    pub size: AtomicHistogram,
}

impl InCell {
    fn new() -> Self {
        Self {
            messages: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            size: AtomicHistogram::new(&SIZE_BOUNDS),
        }
    }
}

/// A topic's incoming counters, one per message type.
#[derive(Debug)]
pub struct TopicIn([InCell; 6]);

impl TopicIn {
    pub fn cell(&self, t: MessageType) -> &InCell {
        let [normal, fifo, delay, transaction, priority, lite] = &self.0;
        match t {
            MessageType::Normal => normal,
            MessageType::Fifo => fifo,
            MessageType::Delay => delay,
            MessageType::Transaction => transaction,
            MessageType::Priority => priority,
            MessageType::Lite => lite,
        }
    }
}

/// What one group read from one topic.
#[derive(Debug, Default)]
pub struct OutCell {
    pub messages: AtomicU64,
    pub bytes: AtomicU64,
}

#[derive(Debug, Default)]
pub struct TrafficMetrics {
    ins: RwLock<HashMap<String, Arc<TopicIn>>>,
    outs: RwLock<HashMap<String, HashMap<String, Arc<OutCell>>>>,
    out_series: AtomicU64,
}

impl TrafficMetrics {
    /// `count` messages of `bytes` stored in `topic` by one request.
    pub fn record_in(&self, topic: &str, t: MessageType, count: u64, bytes: u64) {
        let record = |topic_in: &TopicIn| {
            let cell = topic_in.cell(t);
            cell.messages.fetch_add(count, Ordering::Relaxed);
            cell.bytes.fetch_add(bytes, Ordering::Relaxed);
            cell.size.observe(bytes / count.max(1));
        };
        if let Some(known) = self.ins.read().get(topic) {
            return record(known);
        }
        record(&self.new_topic(topic));
    }

    fn new_topic(&self, topic: &str) -> Arc<TopicIn> {
        let mut ins = self.ins.write();
        let key = if ins.len() >= MAX_SERIES && !ins.contains_key(topic) {
            OVERFLOW
        } else {
            topic
        };
        ins.entry(key.to_owned())
            .or_insert_with(|| Arc::new(TopicIn(std::array::from_fn(|_| InCell::new()))))
            .clone()
    }

    /// `count` messages of `bytes` read from `topic` by `group` (RocketMQ leaves retry and
    /// dead-letter topics out).
    pub fn record_out(&self, topic: &str, group: &str, count: u64, bytes: u64) {
        if topic.starts_with("%RETRY%") || topic.starts_with("%DLQ%") {
            return;
        }
        let known = self
            .outs
            .read()
            .get(topic)
            .and_then(|groups| groups.get(group))
            .cloned();
        let cell = known.unwrap_or_else(|| self.new_pair(topic, group));
        cell.messages.fetch_add(count, Ordering::Relaxed);
        cell.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn new_pair(&self, topic: &str, group: &str) -> Arc<OutCell> {
        let mut outs = self.outs.write();
        if let Some(cell) = outs.get(topic).and_then(|g| g.get(group)) {
            return cell.clone();
        }
        let (topic, group) = if self.out_series.load(Ordering::Relaxed) >= MAX_SERIES as u64 {
            (OVERFLOW, OVERFLOW)
        } else {
            (topic, group)
        };
        let groups = outs.entry(topic.to_owned()).or_default();
        if !groups.contains_key(group) {
            self.out_series.fetch_add(1, Ordering::Relaxed);
        }
        groups.entry(group.to_owned()).or_default().clone()
    }

    /// Every topic's incoming counters (for the scrape).
    pub fn ins(&self) -> Vec<(String, Arc<TopicIn>)> {
        let ins = self.ins.read();
        ins.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Every topic/group pair's outgoing counters (for the scrape).
    pub fn outs(&self) -> Vec<(String, String, Arc<OutCell>)> {
        let outs = self.outs.read();
        outs.iter()
            .flat_map(|(t, groups)| {
                groups
                    .iter()
                    .map(move |(g, c)| (t.clone(), g.clone(), c.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_remoting::protocol::message::Properties;

    #[test]
    fn message_type_as_rocketmq_reads_it() {
        let p = |s: &str| Properties::decode(s);
        assert_eq!(MessageType::of(&p("")), MessageType::Normal);
        assert_eq!(
            MessageType::of(&p("TRAN_MSG\u{1}true\u{2}")),
            MessageType::Transaction
        );
        assert_eq!(
            MessageType::of(&p("__SHARDINGKEY\u{1}k\u{2}")),
            MessageType::Fifo
        );
        assert_eq!(MessageType::of(&p("DELAY\u{1}3\u{2}")), MessageType::Delay);
    }

    #[test]
    fn counts_and_bounds() {
        let t = TrafficMetrics::default();
        t.record_in("A", MessageType::Normal, 2, 2000);
        t.record_in("A", MessageType::Normal, 1, 100);
        let ins = t.ins();
        let cell = ins[0].1.cell(MessageType::Normal);
        assert_eq!(cell.messages.load(Ordering::Relaxed), 3);
        assert_eq!(cell.bytes.load(Ordering::Relaxed), 2100);
        assert_eq!(cell.size.snapshot().count, 2);
        t.record_out("%RETRY%g", "g", 1, 1);
        for i in 0..(MAX_SERIES + 5) {
            t.record_out("T", &format!("g{i}"), 1, 10);
        }
        let outs = t.outs();
        assert_eq!(outs.len(), MAX_SERIES + 1);
        let overflow = outs.iter().find(|(topic, _, _)| topic == OVERFLOW);
        assert_eq!(
            overflow.map(|(_, _, c)| c.messages.load(Ordering::Relaxed)),
            Some(5)
        );
    }
}
