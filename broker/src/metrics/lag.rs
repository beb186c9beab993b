//! Consumer lag at scrape time, for every (topic, group) with committed offsets, online or
//! not: per queue, lag = the queue's max offset minus the committed offset, and its latency
//! = now minus the store time of the first unconsumed message (RocketMQ's
//! ConsumerLagCalculator). StellMQ keeps no separate pull-offset table, so
//! `rocketmq_consumer_inflight_messages` is 0 and `ready` equals `lag`.
//!
//! Cost is bounded: at most [`MAX_PAIRS`] pairs per scrape, each one read of the queues'
//! max offsets and one store timestamp per lagging queue.

use std::collections::BTreeMap;

use stellmq_metrics::is_system_group;
use stellmq_metrics::prometheus_client::encoding::DescriptorEncoder;

use super::collect::BrokerCollector;
use super::encode::{flag, gauges, Labels};
use crate::context::now_ms;

/// (topic, group) pairs read per scrape.
pub const MAX_PAIRS: usize = 5_000;

/// One pair's figures.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Lag {
    pub messages: i64,
    /// Store time of the oldest unconsumed message, 0 when none.
    pub earliest_unconsumed_ms: i64,
}

/// The lag of `group` on `topic` over `queues` queues, from its committed `offsets`.
pub fn lag_of(c: &BrokerCollector, topic: &str, queues: i32, offsets: &BTreeMap<i32, i64>) -> Lag {
    let mut lag = Lag::default();
    let mut earliest = i64::MAX;
    for queue in 0..queues.max(0) {
        let max = c.store.max_offset_in_queue(topic, queue).max(0);
        let committed = offsets.get(&queue).copied().unwrap_or(max).max(0);
        if committed >= max {
            continue;
        }
        lag.messages += max - committed;
        if let Some(at) = c.store.message_store_timestamp(topic, queue, committed) {
            earliest = earliest.min(at);
        }
    }
    if earliest != i64::MAX {
        lag.earliest_unconsumed_ms = earliest;
    }
    lag
}

pub fn encode(
    c: &BrokerCollector,
    encoder: &mut DescriptorEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    let now = now_ms();
    let mut rows = Vec::new();
    for (topic, group, offsets) in c.offsets.pairs(MAX_PAIRS) {
        if topic.starts_with("%RETRY%") || topic.starts_with("%DLQ%") {
            continue;
        }
        let Some(config) = c.topics.get(&topic) else {
            continue;
        };
        let lag = lag_of(c, &topic, config.write_queue_nums, &offsets);
        let system = c.is_system_topic(&topic) || is_system_group(&group);
        let labels: Labels = vec![
            ("consumer_group", group),
            ("topic", topic),
            ("is_retry", flag(false)),
            ("is_system", flag(system)),
        ];
        rows.push((labels, lag));
    }
    let of = |f: fn(&Lag) -> i64| {
        rows.iter()
            .map(move |(labels, lag)| (labels.clone(), f(lag)))
            .collect::<Vec<_>>()
    };
    gauges(
        encoder,
        "rocketmq_consumer_lag_messages",
        "Consumer lag messages",
        of(|l| l.messages),
    )?;
    let latency = rows.iter().map(|(labels, lag)| {
        let ms = match lag.earliest_unconsumed_ms {
            0 => 0,
            at => (now - at).max(0),
        };
        (labels.clone(), ms)
    });
    gauges(
        encoder,
        "rocketmq_consumer_lag_latency",
        "Consumer lag time (milliseconds)",
        latency.collect::<Vec<_>>(),
    )?;
    gauges(
        encoder,
        "rocketmq_consumer_inflight_messages",
        "Consumer inflight messages",
        of(|_| 0),
    )?;
    gauges(
        encoder,
        "rocketmq_consumer_ready_messages",
        "Consumer ready messages",
        of(|l| l.messages),
    )
}
