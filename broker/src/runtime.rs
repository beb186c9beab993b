//! The figures GET_BROKER_RUNTIME_INFO reports as RocketMQ's StoreStatsService and
//! BrokerStats do: TPS over the last 10 s, 60 s and 600 s (one sample of the store's
//! counters a second, 601 kept), and message totals at this and yesterday's midnight (UTC,
//! as `deleteWhen`), plus the lanes' queue sizes.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::net::Lane;
use stellmq_store::MessageStore;
use tokio_util::sync::CancellationToken;

use crate::context::now_ms;

const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// Samples kept: 600 s of history and the one before.
const KEEP: usize = 601;
const DAY_MS: i64 = 24 * 3600 * 1000;

/// The store's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counters {
    pub at_ms: i64,
    pub puts: u64,
    pub found: u64,
    pub miss: u64,
    pub transferred: u64,
}

impl Counters {
    pub fn read(store: &MessageStore) -> Self {
        let s = store.stats();
        Self {
            at_ms: now_ms(),
            puts: s.put_times_total.load(Ordering::Relaxed),
            found: s.get_found_times.load(Ordering::Relaxed),
            miss: s.get_miss_times.load(Ordering::Relaxed),
            transferred: s.get_transferred_messages.load(Ordering::Relaxed),
        }
    }
}

/// Totals of messages put and got at a midnight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Morning {
    pub puts: u64,
    pub gets: u64,
}

#[derive(Debug, Default)]
struct Days {
    /// The UTC day (days since the epoch) `today` belongs to.
    day: i64,
    today: Morning,
    yesterday: Morning,
}

/// The lanes whose queues runtime info reports, with their queue capacities.
pub struct QueueLanes {
    pub send: Arc<Lane>,
    pub pull: Arc<Lane>,
    pub query: Arc<Lane>,
}

#[derive(Default)]
pub struct RuntimeStats {
    samples: Mutex<VecDeque<Counters>>,
    days: Mutex<Days>,
    pub lanes: OnceLock<QueueLanes>,
}

impl RuntimeStats {
    /// Records `now` (the sampler calls it every second; tests call it directly).
    pub fn sample(&self, now: Counters) {
        {
            let mut samples = self.samples.lock();
            samples.push_back(now);
            while samples.len() > KEEP {
                samples.pop_front();
            }
        }
        let day = now.at_ms.div_euclid(DAY_MS);
        let mut days = self.days.lock();
        let current = Morning {
            puts: now.puts,
            gets: now.transferred,
        };
        if days.day == 0 {
            // Started today: nothing is known of earlier days.
            *days = Days {
                day,
                today: Morning::default(),
                yesterday: Morning::default(),
            };
        } else if day > days.day {
            days.yesterday = if day == days.day + 1 {
                days.today
            } else {
                current
            };
            days.today = current;
            days.day = day;
        }
    }

    /// Per-second rate of `f` over the last `secs` seconds, up to `live`.
    pub fn tps(&self, live: Counters, secs: i64, f: fn(&Counters) -> u64) -> f64 {
        let samples = self.samples.lock();
        let since = live.at_ms - secs * 1000;
        let first = samples
            .iter()
            .find(|s| s.at_ms >= since)
            .or(samples.back())
            .copied()
            .unwrap_or(live);
        let elapsed = (live.at_ms - first.at_ms).max(1) as f64;
        f(&live).saturating_sub(f(&first)) as f64 * 1000.0 / elapsed
    }

    /// `"10s 60s 600s"` TPS of `f`, two decimals each, as RocketMQ prints it.
    pub fn tps_windows(&self, live: Counters, f: fn(&Counters) -> u64) -> String {
        let [a, b, c] = [10, 60, 600].map(|secs| self.tps(live, secs, f));
        format!("{a:.2} {b:.2} {c:.2}")
    }

    /// Totals at today's and yesterday's midnight.
    pub fn mornings(&self) -> (Morning, Morning) {
        let days = self.days.lock();
        (days.today, days.yesterday)
    }

    /// Samples the store's counters every second until `stop`.
    pub async fn run(self: Arc<Self>, store: Arc<MessageStore>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => self.sample(Counters::read(&store)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64, puts: u64) -> Counters {
        Counters {
            at_ms: 1_700_000_000_000 + secs * 1000,
            puts,
            ..Default::default()
        }
    }

    #[test]
    fn windows_follow_recent_traffic() {
        let r = RuntimeStats::default();
        for s in 0..=600 {
            // 10 msg/s for 540 s, then 100 msg/s for the last 60 s.
            let puts = if s <= 540 {
                s * 10
            } else {
                5400 + (s - 540) * 100
            };
            r.sample(at(s, puts as u64));
        }
        let live = at(600, 5400 + 6000);
        assert_eq!(r.tps_windows(live, |c| c.puts), "100.00 100.00 19.00");
    }

    #[test]
    fn mornings_move_at_midnight() {
        let r = RuntimeStats::default();
        let day = 1_700_000_000_000i64.div_euclid(DAY_MS) * DAY_MS;
        let sample = |ms: i64, puts: u64| Counters {
            at_ms: ms,
            puts,
            transferred: puts / 2,
            ..Default::default()
        };
        r.sample(sample(day + 1000, 10));
        assert_eq!(r.mornings(), (Morning::default(), Morning::default()));
        r.sample(sample(day + DAY_MS + 5, 100));
        let today = Morning {
            puts: 100,
            gets: 50,
        };
        assert_eq!(r.mornings(), (today, Morning::default()));
        r.sample(sample(day + 2 * DAY_MS + 5, 300));
        assert_eq!(
            r.mornings(),
            (
                Morning {
                    puts: 300,
                    gets: 150
                },
                today
            )
        );
    }
}
