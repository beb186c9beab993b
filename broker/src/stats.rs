//! Traffic counters by topic and by topic@group with minute, hour and day windows
//! (RocketMQ's BrokerStatsManager), served by VIEW_BROKER_STATS_DATA for `mqadmin statsAll`
//! and dashboards.
//!
//! Each counter keeps samples (every 10 s for the minute window, every 10 min for the hour,
//! every hour for the day); a window compares the live counter with its oldest sample, so
//! figures are meaningful from the first message on.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use stellmq_remoting::protocol::body::{BrokerStatsData, BrokerStatsItem};
use tokio_util::sync::CancellationToken;

use crate::context::now_ms;

pub const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
pub const TOPIC_PUT_SIZE: &str = "TOPIC_PUT_SIZE";
pub const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";
pub const GROUP_GET_SIZE: &str = "GROUP_GET_SIZE";

const STATS_NAMES: [&str; 4] = [
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
];
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// (samples kept, every how many minute samples) per window: minute, hour, day.
const WINDOWS: [(usize, u64); 3] = [(7, 1), (7, 60), (25, 360)];

#[derive(Clone, Copy)]
struct Sample {
    at_ms: i64,
    value: u64,
    times: u64,
}

struct Item {
    value: AtomicU64,
    times: AtomicU64,
    windows: Mutex<[VecDeque<Sample>; 3]>,
}

impl Item {
    fn new() -> Self {
        let start = Sample {
            at_ms: now_ms(),
            value: 0,
            times: 0,
        };
        Self {
            value: AtomicU64::new(0),
            times: AtomicU64::new(0),
            windows: Mutex::new(std::array::from_fn(|_| VecDeque::from([start]))),
        }
    }

    fn add(&self, value: u64, times: u64) {
        self.value.fetch_add(value, Ordering::Relaxed);
        self.times.fetch_add(times, Ordering::Relaxed);
    }

    fn live(&self) -> Sample {
        Sample {
            at_ms: now_ms(),
            value: self.value.load(Ordering::Relaxed),
            times: self.times.load(Ordering::Relaxed),
        }
    }

    fn sample(&self, tick: u64) {
        let now = self.live();
        let mut windows = self.windows.lock();
        for (window, (keep, every)) in windows.iter_mut().zip(WINDOWS) {
            if tick.is_multiple_of(every) {
                window.push_back(now);
                while window.len() > keep {
                    window.pop_front();
                }
            }
        }
    }

    fn data(&self) -> BrokerStatsData {
        let live = self.live();
        let windows = self.windows.lock();
        let item = |w: &VecDeque<Sample>| {
            let first = w.front().copied().unwrap_or(live);
            let sum = live.value.saturating_sub(first.value);
            let times = live.times.saturating_sub(first.times);
            let elapsed = (live.at_ms - first.at_ms).max(1) as f64;
            BrokerStatsItem {
                sum: sum as i64,
                tps: sum as f64 * 1000.0 / elapsed,
                avgpt: if times > 0 {
                    sum as f64 / times as f64
                } else {
                    0.0
                },
            }
        };
        let [minute, hour, day] = &*windows;
        BrokerStatsData {
            stats_minute: item(minute),
            stats_hour: item(hour),
            stats_day: item(day),
        }
    }
}

/// Counters by stats name, then by key (a topic, or `topic@group`).
#[derive(Default)]
pub struct BrokerStats {
    items: RwLock<HashMap<&'static str, HashMap<String, Arc<Item>>>>,
    /// The same traffic with RocketMQ 5's metric labels (Prometheus).
    pub metrics: Arc<crate::metrics::TrafficMetrics>,
}

impl BrokerStats {
    /// Adds `value` over `times` calls to `name`/`key` (`name` one of the constants here).
    pub fn add(&self, name: &'static str, key: &str, value: u64, times: u64) {
        self.add_each(key, &[(name, value, times)]);
    }

    /// [`Self::add`] for several names of one key, under one lock (the write lock only for
    /// a name counting this key for the first time).
    pub fn add_each(&self, key: &str, counts: &[(&'static str, u64, u64)]) {
        let mut first_time = Vec::new();
        {
            let items = self.items.read();
            for &(name, value, times) in counts {
                match items.get(name).and_then(|keys| keys.get(key)) {
                    Some(item) => item.add(value, times),
                    None => first_time.push((name, value, times)),
                }
            }
        }
        if first_time.is_empty() {
            return;
        }
        let mut items = self.items.write();
        for (name, value, times) in first_time {
            items
                .entry(name)
                .or_default()
                .entry(key.to_owned())
                .or_insert_with(|| Arc::new(Item::new()))
                .add(value, times);
        }
    }

    /// The windows of `name`/`key`; None for an unknown name or a key never counted.
    pub fn data(&self, name: &str, key: &str) -> Option<BrokerStatsData> {
        let items = self.items.read();
        items.get(name)?.get(key).map(|item| item.data())
    }

    pub fn is_known_name(name: &str) -> bool {
        STATS_NAMES.contains(&name)
    }

    /// Samples every counter every 10 s until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut tick = 0u64;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(SAMPLE_EVERY) => {}
            }
            tick += 1;
            let items: Vec<Arc<Item>> = self
                .items
                .read()
                .values()
                .flat_map(|keys| keys.values().cloned())
                .collect();
            for item in items {
                item.sample(tick);
            }
        }
    }
}
