//! A consumer's pull and consume rates per topic, as RocketMQ's `ConsumerStatsManager` keeps
//! them for the running-info probe: pull and listener round trips, messages pulled, consumed
//! and failed, in 10-second buckets over the last hour. Rates are over the last minute,
//! failures summed over the hour.

use std::collections::HashMap;
use std::time::Instant;

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::ConsumeStatus;

const BUCKET_SECS: u64 = 10;
/// One hour of buckets.
const BUCKETS: usize = 360;
/// The last minute.
const MINUTE_BUCKETS: u64 = 6;

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    pulls: u64,
    pull_rt_ms: u64,
    pulled: u64,
    consumes: u64,
    consume_rt_ms: u64,
    ok: u64,
    failed: u64,
}

impl Counters {
    fn add(&mut self, other: &Counters) {
        self.pulls += other.pulls;
        self.pull_rt_ms += other.pull_rt_ms;
        self.pulled += other.pulled;
        self.consumes += other.consumes;
        self.consume_rt_ms += other.consume_rt_ms;
        self.ok += other.ok;
        self.failed += other.failed;
    }
}

/// One topic's buckets: `(bucket number, counters)` in a ring.
struct TopicStats {
    ring: Vec<(u64, Counters)>,
}

impl TopicStats {
    fn new() -> Self {
        Self {
            ring: vec![(u64::MAX, Counters::default()); BUCKETS],
        }
    }

    fn bucket(&mut self, number: u64) -> Option<&mut Counters> {
        let slot = self.ring.get_mut((number % BUCKETS as u64) as usize)?;
        if slot.0 != number {
            *slot = (number, Counters::default());
        }
        Some(&mut slot.1)
    }

    /// Sum of the buckets numbered `from..=to`.
    fn sum(&self, from: u64, to: u64) -> Counters {
        let mut total = Counters::default();
        for (number, counters) in &self.ring {
            if *number != u64::MAX && *number >= from && *number <= to {
                total.add(counters);
            }
        }
        total
    }
}

/// Per-topic statistics of one consumer.
pub(crate) struct ConsumerStats {
    started: Instant,
    topics: Mutex<HashMap<String, TopicStats>>,
}

impl Default for ConsumerStats {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            topics: Mutex::new(HashMap::new()),
        }
    }
}

impl ConsumerStats {
    fn record(&self, topic: &str, now: Instant, change: impl FnOnce(&mut Counters)) {
        let number = now.duration_since(self.started).as_secs() / BUCKET_SECS;
        let mut topics = self.topics.lock();
        let stats = topics
            .entry(topic.to_owned())
            .or_insert_with(TopicStats::new);
        if let Some(counters) = stats.bucket(number) {
            change(counters);
        }
    }

    /// One pull of `topic` that took `rt_ms` and brought `messages`.
    pub fn pulled(&self, topic: &str, rt_ms: u64, messages: usize) {
        self.record(topic, Instant::now(), |c| {
            c.pulls += 1;
            c.pull_rt_ms += rt_ms;
            c.pulled += messages as u64;
        });
    }

    /// One listener call on messages of `topic` that took `rt_ms`: `ok` consumed, `failed`
    /// to be consumed again.
    pub fn consumed(&self, topic: &str, rt_ms: u64, ok: usize, failed: usize) {
        self.record(topic, Instant::now(), |c| {
            c.consumes += 1;
            c.consume_rt_ms += rt_ms;
            c.ok += ok as u64;
            c.failed += failed as u64;
        });
    }

    /// `topic`'s rates now.
    pub fn status(&self, topic: &str) -> ConsumeStatus {
        self.status_at(topic, Instant::now())
    }

    fn status_at(&self, topic: &str, now: Instant) -> ConsumeStatus {
        let elapsed = now.duration_since(self.started).as_secs();
        let current = elapsed / BUCKET_SECS;
        let topics = self.topics.lock();
        let Some(stats) = topics.get(topic) else {
            return ConsumeStatus::default();
        };
        let minute = stats.sum(current.saturating_sub(MINUTE_BUCKETS - 1), current);
        let hour = stats.sum(current.saturating_sub(BUCKETS as u64 - 1), current);
        let window = elapsed.clamp(1, MINUTE_BUCKETS * BUCKET_SECS) as f64;
        let per_call = |sum: u64, calls: u64| {
            if calls == 0 {
                0.0
            } else {
                sum as f64 / calls as f64
            }
        };
        ConsumeStatus {
            pull_rt: per_call(minute.pull_rt_ms, minute.pulls),
            pull_tps: minute.pulled as f64 / window,
            consume_rt: per_call(minute.consume_rt_ms, minute.consumes),
            consume_ok_tps: minute.ok as f64 / window,
            consume_failed_tps: minute.failed as f64 / window,
            consume_failed_msgs: hour.failed as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rates_cover_the_last_minute_and_failures_the_hour() {
        let stats = ConsumerStats::default();
        let t0 = stats.started;
        stats.record("T", t0, |c| {
            c.failed += 3;
        });
        for i in 0..60u64 {
            let at = t0 + Duration::from_secs(120 + i);
            stats.record("T", at, |c| {
                c.pulls += 1;
                c.pull_rt_ms += 4;
                c.pulled += 2;
                c.consumes += 1;
                c.consume_rt_ms += 10;
                c.ok += 2;
            });
        }
        let s = stats.status_at("T", t0 + Duration::from_secs(179));
        assert_eq!(s.pull_rt, 4.0);
        assert_eq!(s.consume_rt, 10.0);
        assert!((s.pull_tps - 2.0).abs() < 1e-9, "{s:?}");
        assert!((s.consume_ok_tps - 2.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s.consume_failed_tps, 0.0);
        assert_eq!(s.consume_failed_msgs, 3);
        // An hour later everything has aged out.
        let later = stats.status_at("T", t0 + Duration::from_secs(4000));
        assert_eq!(later, ConsumeStatus::default());
        assert_eq!(stats.status("Other"), ConsumeStatus::default());
    }
}
