//! Auto-renew (RocketMQ's `DefaultReceiptHandleManager`): push consumers receive with
//! `auto_renew`, and the proxy keeps what they hold invisible until they ack it. Shortly before
//! a handle's invisible time ends, the proxy changes it to the next step (1 min, 3 min, 5 min,
//! 10 min, 30 min, 1 h, ...), up to `renewMaxTimeMillis` after the first delivery. The client
//! keeps its first handle; acks, changes and DLQ moves are made with the latest one. When a
//! client goes away, what it held becomes visible again within a second.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::protocol::message::Clock;

use super::ack::parse_handle;
use crate::cluster::Cluster;

/// The invisible times renewals step through (ms); the last repeats.
const STEPS_MS: &[i64] = &[60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000];

/// The invisible time of the next renewal after `renewals` of them (the last step repeats).
fn step_after(renewals: usize) -> i64 {
    STEPS_MS
        .get(renewals)
        .or(STEPS_MS.last())
        .copied()
        .unwrap_or(60_000)
}
/// Invisible time given to what a departed client held.
const RELEASE_MS: i64 = 1_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    client_id: String,
    group: String,
    /// The handle the client was given (and acks with).
    original: String,
}

struct Held {
    topic: String,
    /// The handle in force now.
    current: String,
    /// When the client received it, on the renewals' clock.
    received_ms: i64,
    renewals: usize,
}

/// Handles renewed for their clients.
pub struct Renewals {
    table: Mutex<HashMap<Key, Held>>,
    max: usize,
    ahead: Duration,
    max_age: Duration,
    /// Handle deadlines and ages are read on this clock (tests move it forward).
    clock: Arc<Clock>,
    /// Renewals made since the start.
    renewed: AtomicU64,
}

/// A renewal to make: who, and the handle to renew.
struct Due {
    key: Key,
    topic: String,
    current: String,
    step_ms: i64,
}

impl Renewals {
    pub fn new(max: usize, ahead: Duration, max_age: Duration, clock: Arc<Clock>) -> Self {
        Self {
            table: Mutex::new(HashMap::new()),
            max,
            ahead,
            max_age,
            clock,
            renewed: AtomicU64::new(0),
        }
    }

    /// Renewals made since the start.
    pub fn renewed(&self) -> u64 {
        self.renewed.load(Ordering::Relaxed)
    }

    /// Renews `handle` for `client_id` until it is acked; false when too many are held (the
    /// message then simply becomes visible again at the end of its invisible time).
    pub fn track(&self, client_id: &str, group: &str, topic: &str, handle: &str) -> bool {
        let mut table = self.table.lock();
        if table.len() >= self.max {
            return false;
        }
        table.insert(
            Key {
                client_id: client_id.to_owned(),
                group: group.to_owned(),
                original: handle.to_owned(),
            },
            Held {
                topic: topic.to_owned(),
                current: handle.to_owned(),
                received_ms: self.clock.now_ms(),
                renewals: 0,
            },
        );
        true
    }

    /// The handle in force for what the client knows as `handle` (its own when not renewed),
    /// no longer renewed.
    pub fn take(&self, client_id: &str, group: &str, handle: &str) -> String {
        let key = Key {
            client_id: client_id.to_owned(),
            group: group.to_owned(),
            original: handle.to_owned(),
        };
        self.table
            .lock()
            .remove(&key)
            .map_or_else(|| handle.to_owned(), |held| held.current)
    }

    pub fn len(&self) -> usize {
        self.table.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Renews every handle whose invisible time ends within the renew-ahead time; gives up
    /// on those held longer than the maximum.
    pub async fn renew_due(&self, cluster: &Cluster) {
        for due in self.due() {
            let renewed = match parse_handle(&due.current) {
                Ok((handle, commit_log_offset)) => cluster
                    .change_invisible_time(&due.key.group, &due.topic, &handle, due.step_ms, None)
                    .await
                    .map(|h| match commit_log_offset {
                        Some(offset) => format!("{h} {offset}"),
                        None => h.to_string(),
                    })
                    .map_err(|e| e.to_string()),
                Err(refusal) => Err(refusal.message),
            };
            let mut table = self.table.lock();
            match renewed {
                Ok(current) => {
                    if let Some(held) = table.get_mut(&due.key) {
                        held.current = current;
                        held.renewals += 1;
                    }
                    self.renewed.fetch_add(1, Ordering::Relaxed);
                }
                Err(reason) => {
                    tracing::debug!(group = %due.key.group, %reason, "a held message could not be renewed");
                    table.remove(&due.key);
                }
            }
        }
    }

    /// Makes what `client_id` held visible again soon and stops renewing it.
    pub async fn release_client(&self, cluster: &Cluster, client_id: &str) {
        let held: Vec<(Key, Held)> = {
            let mut table = self.table.lock();
            let keys: Vec<Key> = table
                .keys()
                .filter(|k| k.client_id == client_id)
                .cloned()
                .collect();
            keys.into_iter()
                .filter_map(|k| table.remove(&k).map(|h| (k, h)))
                .collect()
        };
        for (key, held) in held {
            if let Ok((handle, _)) = parse_handle(&held.current) {
                let _ = cluster
                    .change_invisible_time(&key.group, &held.topic, &handle, RELEASE_MS, None)
                    .await;
            }
        }
    }

    fn due(&self) -> Vec<Due> {
        let now = self.clock.now_ms();
        let ahead = self.ahead.as_millis() as i64;
        let max_age = i64::try_from(self.max_age.as_millis()).unwrap_or(i64::MAX);
        let mut table = self.table.lock();
        table.retain(|_, held| now.saturating_sub(held.received_ms) < max_age);
        table
            .iter()
            .filter_map(|(key, held)| {
                let (handle, _) = parse_handle(&held.current).ok()?;
                (handle.deadline() - now <= ahead).then(|| Due {
                    key: key.clone(),
                    topic: held.topic.clone(),
                    current: held.current.clone(),
                    step_ms: step_after(held.renewals),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_keeps_its_handle_and_gets_the_latest() {
        let r = Renewals::new(
            2,
            Duration::from_secs(10),
            Duration::from_secs(60),
            Arc::default(),
        );
        assert!(r.track("c", "g", "t", "h1"));
        assert!(r.track("c", "g", "t", "h2"));
        assert!(!r.track("c", "g", "t", "h3"), "bounded");
        r.table
            .lock()
            .values_mut()
            .for_each(|h| h.current = format!("{}-renewed", h.current));
        assert_eq!(r.take("c", "g", "h1"), "h1-renewed");
        assert_eq!(r.take("c", "g", "h1"), "h1", "taken once");
        assert_eq!(
            r.take("other", "g", "h2"),
            "h2",
            "another client's handle is its own"
        );
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn due_when_the_end_is_near_with_growing_steps() {
        let clock = Arc::new(Clock::default());
        let r = Renewals::new(
            10,
            Duration::from_secs(10),
            Duration::from_secs(3_600),
            clock.clone(),
        );
        let soon = format!("0 {} 5000 1 0 b 0 7 99", clock.now_ms());
        let later = format!("0 {} 600000 1 0 b 0 8 99", clock.now_ms());
        r.track("c", "g", "t", &soon);
        r.track("c", "g", "t", &later);
        let due = r.due();
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].current, soon);
        assert_eq!(due[0].step_ms, 60_000);
        // On the clock moved on, the later one is due too, until the maximum age.
        clock.advance(Duration::from_secs(595));
        assert_eq!(r.due().len(), 2);
        clock.advance(Duration::from_secs(3_100));
        assert!(r.due().is_empty(), "held longer than renewMaxTimeMillis");
        assert!(r.is_empty());
    }
}
