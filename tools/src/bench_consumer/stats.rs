//! What the consumer benchmark counts, and its report lines (RocketMQ's fields: consume TPS,
//! average and maximum born-to-consumer (B2C) and store-to-consumer (S2C) times, failures).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::stats::Latency;

/// Counters shared by the consuming tasks and the reporter.
pub struct ConsumeStats {
    origin: Instant,
    received: AtomicU64,
    failed: AtomicU64,
    b2c_total_ms: AtomicU64,
    s2c_total_ms: AtomicU64,
    /// Since the last report line (RocketMQ resets them per line).
    b2c_max_ms: AtomicU64,
    s2c_max_ms: AtomicU64,
    /// Microseconds since `origin` of the first and the latest receipt.
    first_us: AtomicU64,
    last_us: AtomicU64,
    /// Born-to-received, every message of the run.
    latency: Mutex<Latency>,
}

/// The cumulative counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    pub at: Instant,
    pub received: u64,
    pub failed: u64,
    pub b2c_total_ms: u64,
    pub s2c_total_ms: u64,
}

impl Default for ConsumeStats {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            received: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            b2c_total_ms: AtomicU64::new(0),
            s2c_total_ms: AtomicU64::new(0),
            b2c_max_ms: AtomicU64::new(0),
            s2c_max_ms: AtomicU64::new(0),
            first_us: AtomicU64::new(u64::MAX),
            last_us: AtomicU64::new(0),
            latency: Mutex::new(Latency::default()),
        }
    }
}

impl ConsumeStats {
    /// Records messages received at `now_ms`, given as (born, stored) timestamps in ms; one
    /// histogram lock per call, so callers pass a whole pull at once.
    pub fn record(&self, now_ms: i64, stamps: impl IntoIterator<Item = (i64, i64)>) {
        let (mut count, mut b2c_sum, mut s2c_sum, mut b2c_max, mut s2c_max) = (0, 0, 0, 0, 0);
        {
            let mut latency = self.latency.lock();
            for (born, stored) in stamps {
                let b2c = (now_ms - born).max(0) as u64;
                let s2c = (now_ms - stored).max(0) as u64;
                latency.record(Duration::from_millis(b2c));
                count += 1;
                (b2c_sum, s2c_sum) = (b2c_sum + b2c, s2c_sum + s2c);
                (b2c_max, s2c_max) = (b2c_max.max(b2c), s2c_max.max(s2c));
            }
        }
        if count == 0 {
            return;
        }
        let at = self.origin.elapsed().as_micros() as u64;
        self.first_us.fetch_min(at, Ordering::Relaxed);
        self.last_us.fetch_max(at, Ordering::Relaxed);
        self.b2c_total_ms.fetch_add(b2c_sum, Ordering::Relaxed);
        self.s2c_total_ms.fetch_add(s2c_sum, Ordering::Relaxed);
        self.b2c_max_ms.fetch_max(b2c_max, Ordering::Relaxed);
        self.s2c_max_ms.fetch_max(s2c_max, Ordering::Relaxed);
        self.received.fetch_add(count, Ordering::Relaxed);
    }

    /// Counts a message the listener failed (RECONSUME_LATER).
    pub fn fail(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            at: Instant::now(),
            received: self.received(),
            failed: self.failed.load(Ordering::Relaxed),
            b2c_total_ms: self.b2c_total_ms.load(Ordering::Relaxed),
            s2c_total_ms: self.s2c_total_ms.load(Ordering::Relaxed),
        }
    }

    /// The time from the first receipt to the latest one (zero before two receipts).
    pub fn active_span(&self) -> Duration {
        let (first, last) = (
            self.first_us.load(Ordering::Relaxed),
            self.last_us.load(Ordering::Relaxed),
        );
        Duration::from_micros(last.saturating_sub(first))
    }

    /// RocketMQ's periodic line between two snapshots (the maxima since the previous line),
    /// then the run's born-to-received percentiles.
    pub fn report_line(&self, now_ms: i64, prev: &Snapshot, cur: &Snapshot) -> String {
        let secs = cur.at.duration_since(prev.at).as_secs_f64().max(1e-3);
        let count = cur.received - prev.received;
        let avg = |total: u64| total as f64 / count.max(1) as f64;
        format!(
            "Current Time: {now_ms} | Consume TPS: {:.0} | AVG(B2C) RT(ms): {:7.3} | AVG(S2C) RT(ms): {:7.3} | MAX(B2C) RT(ms): {} | MAX(S2C) RT(ms): {} | Consume Fail: {} | {}",
            count as f64 / secs,
            avg(cur.b2c_total_ms - prev.b2c_total_ms),
            avg(cur.s2c_total_ms - prev.s2c_total_ms),
            self.b2c_max_ms.swap(0, Ordering::Relaxed),
            self.s2c_max_ms.swap(0, Ordering::Relaxed),
            cur.failed - prev.failed,
            self.latency.lock().summary(),
        )
    }

    /// The final line: totals, TPS over the span from the first receipt to the last (so a
    /// wait for the first message or for the end of the run does not dilute it), and the
    /// run's born-to-received percentiles.
    pub fn complete_line(&self, elapsed: Duration) -> String {
        let total = self.received();
        let span = self.active_span();
        let secs = if total > 1 && !span.is_zero() {
            span.as_secs_f64()
        } else {
            elapsed.as_secs_f64().max(1e-3)
        };
        format!(
            "[Complete] Consume Total: {total} Consume TPS: {:.0} Active(s): {:.3} Elapsed(s): {:.3} Consume Fail: {} | born-to-received {}",
            total as f64 / secs,
            span.as_secs_f64(),
            elapsed.as_secs_f64(),
            self.failed.load(Ordering::Relaxed),
            self.latency.lock().summary(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_latencies_and_lines() {
        let stats = ConsumeStats::default();
        let start = stats.snapshot();
        stats.record(10_000, [(9_990, 9_995), (9_970, 9_980)]);
        stats.record(10_000, std::iter::empty());
        stats.fail();
        let cur = stats.snapshot();
        assert_eq!((cur.received, cur.failed), (2, 1));
        assert_eq!((cur.b2c_total_ms, cur.s2c_total_ms), (40, 25));
        let line = stats.report_line(10_000, &start, &cur);
        assert!(
            line.starts_with("Current Time: 10000 | Consume TPS: "),
            "{line}"
        );
        assert!(line.contains("AVG(B2C) RT(ms):  20.000"), "{line}");
        assert!(line.contains("AVG(S2C) RT(ms):  12.500"), "{line}");
        assert!(
            line.contains("MAX(B2C) RT(ms): 30 | MAX(S2C) RT(ms): 20"),
            "{line}"
        );
        assert!(line.contains("Consume Fail: 1 | p50 "), "{line}");
        // The maxima restart with every line.
        let again = stats.report_line(10_000, &cur, &stats.snapshot());
        assert!(again.contains("MAX(B2C) RT(ms): 0 |"), "{again}");
        let done = stats.complete_line(Duration::from_secs(2));
        assert!(
            done.starts_with("[Complete] Consume Total: 2 Consume TPS: "),
            "{done}"
        );
        assert!(
            done.contains("Consume Fail: 1 | born-to-received p50 "),
            "{done}"
        );
    }

    #[test]
    fn clock_skew_counts_as_zero() {
        let stats = ConsumeStats::default();
        stats.record(100, [(200, 300)]);
        let s = stats.snapshot();
        assert_eq!((s.received, s.b2c_total_ms, s.s2c_total_ms), (1, 0, 0));
        // One receipt: TPS over the whole run.
        let done = stats.complete_line(Duration::from_secs(1));
        assert!(done.contains("Consume TPS: 1 "), "{done}");
    }
}
