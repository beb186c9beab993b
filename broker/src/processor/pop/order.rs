//! Orderly (FIFO) POP, as RocketMQ's `ConsumerOrderInfoManager`: per group, topic and queue
//! at most one batch in flight. The next POP of that queue finds nothing until every
//! message of the batch is acked or an unacked one's invisible time passed; then the queue
//! is read again from the group's offset (the first unacked message), so the same messages
//! come back in order, each with its delivery count.
//!
//! The group's offset only moves when acks complete a prefix of the batch. The table lives
//! in memory and is saved to `config/consumerOrderInfo.json` (as RocketMQ saves its own,
//! periodically and at shutdown): after a kill -9 an unacked batch may be delivered again
//! before its invisible time, in order.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrderKey {
    pub topic: String,
    pub group: String,
    pub queue_id: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Batch {
    offsets: Vec<i64>,
    acked: u64,
    pop_time: i64,
    /// When each unacked message becomes visible again.
    #[serde(with = "pairs")]
    visible_at: HashMap<i64, i64>,
    attempt_id: Option<String>,
    /// Deliveries before this one, per offset (only offsets delivered before).
    #[serde(with = "pairs")]
    counts: HashMap<i64, i32>,
}

/// Integer-keyed maps as lists of pairs in the saved file.
mod pairs {
    use std::collections::HashMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<V: Serialize + Copy, S: Serializer>(
        map: &HashMap<i64, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut pairs: Vec<(i64, V)> = map.iter().map(|(k, v)| (*k, *v)).collect();
        pairs.sort_by_key(|(k, _)| *k);
        pairs.serialize(s)
    }

    pub fn deserialize<'de, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<HashMap<i64, V>, D::Error> {
        Ok(Vec::<(i64, V)>::deserialize(d)?.into_iter().collect())
    }
}

/// The saved table (`consumerOrderInfo.json`, StellMQ's layout).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedOrders {
    #[serde(default)]
    batches: Vec<SavedBatch>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SavedBatch {
    topic: String,
    group: String,
    queue_id: i32,
    #[serde(flatten)]
    batch: Batch,
}

impl Batch {
    fn is_acked(&self, i: usize) -> bool {
        i < 64 && self.acked & (1u64 << i) != 0
    }

    /// The group's next offset: the first unacked message, or past the last.
    fn next_offset(&self) -> i64 {
        self.offsets
            .iter()
            .enumerate()
            .find(|(i, _)| !self.is_acked(*i))
            .map(|(_, o)| *o)
            .unwrap_or_else(|| self.offsets.last().map_or(0, |o| o + 1))
    }

    fn is_done(&self) -> bool {
        (0..self.offsets.len()).all(|i| self.is_acked(i))
    }

    /// Whether an unacked message is still invisible at `now`.
    fn blocks(&self, now: i64) -> bool {
        self.offsets
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.is_acked(*i))
            .any(|(_, o)| self.visible_at.get(o).is_some_and(|at| now < *at))
    }
}

/// What an orderly ack did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderAck {
    /// Acked; the group's offset may move to this.
    Next(i64),
    /// The handle is not the batch in flight (expired and popped again, or unknown).
    Stale,
    /// The message's invisible time passed.
    Expired,
}

/// The delivery counts of a batch, for `orderCountInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrderCounts {
    /// (offset, deliveries before this one) for messages delivered before.
    pub per_offset: Vec<(i64, i32)>,
    /// The smallest count of the batch (0 when any message is new).
    pub min: i32,
}

pub struct OrderTable {
    inner: Mutex<HashMap<OrderKey, Batch>>,
    max: usize,
}

impl OrderTable {
    pub fn new(max: usize) -> Self {
        Self {
            inner: Mutex::new(HashMap::new()),
            max: max.max(1),
        }
    }

    /// Whether the queue's batch in flight keeps a POP (with `attempt_id`) from reading it.
    /// A POP retried with the attempt id of the batch is not blocked by it.
    pub fn blocked(&self, key: &OrderKey, attempt_id: Option<&str>, now: i64) -> bool {
        let inner = self.inner.lock();
        let Some(batch) = inner.get(key) else {
            return false;
        };
        if batch.is_done() {
            return false;
        }
        let same_attempt = attempt_id.is_some() && batch.attempt_id.as_deref() == attempt_id;
        !same_attempt && batch.blocks(now)
    }

    /// Forgets every batch of `topic` (a deleted lite topic's).
    pub fn remove_topic(&self, topic: &str) {
        self.inner.lock().retain(|k, _| k.topic != topic);
    }

    /// Whether a new batch fits (the table is bounded).
    pub fn has_room(&self, key: &OrderKey) -> bool {
        let inner = self.inner.lock();
        inner.len() < self.max || inner.contains_key(key)
    }

    /// Records a new batch popped at `pop_time`; returns its delivery counts.
    pub fn update(
        &self,
        key: OrderKey,
        attempt_id: Option<&str>,
        pop_time: i64,
        invisible_time: i64,
        offsets: &[i64],
    ) -> OrderCounts {
        let mut inner = self.inner.lock();
        let previous = inner.remove(&key);
        let counts: HashMap<i64, i32> = match &previous {
            Some(prev) if attempt_id.is_some() && prev.attempt_id.as_deref() == attempt_id => {
                prev.counts.clone()
            }
            Some(prev) => offsets
                .iter()
                .filter(|o| prev.offsets.contains(o))
                .map(|o| (*o, prev.counts.get(o).copied().unwrap_or(0) + 1))
                .collect(),
            None => HashMap::new(),
        };
        let deadline = pop_time.saturating_add(invisible_time);
        let mut per_offset: Vec<(i64, i32)> = counts.iter().map(|(o, c)| (*o, *c)).collect();
        per_offset.sort_unstable();
        let min = if counts.len() == offsets.len() {
            counts.values().copied().min().unwrap_or(0)
        } else {
            0
        };
        inner.insert(
            key,
            Batch {
                offsets: offsets.to_vec(),
                acked: 0,
                pop_time,
                visible_at: offsets.iter().map(|o| (*o, deadline)).collect(),
                attempt_id: attempt_id.map(str::to_owned),
                counts,
            },
        );
        OrderCounts { per_offset, min }
    }

    /// Acks `offset` of the batch popped at `pop_time`.
    pub fn ack(&self, key: &OrderKey, offset: i64, pop_time: i64, now: i64) -> OrderAck {
        let mut inner = self.inner.lock();
        let Some(batch) = inner.get_mut(key) else {
            return OrderAck::Stale;
        };
        if batch.pop_time != pop_time {
            return OrderAck::Stale;
        }
        let Some(i) = batch.offsets.iter().position(|o| *o == offset) else {
            return OrderAck::Stale;
        };
        if batch.is_acked(i) {
            return OrderAck::Next(batch.next_offset());
        }
        if batch.visible_at.get(&offset).is_some_and(|at| *at <= now) {
            return OrderAck::Expired;
        }
        if i < 64 {
            batch.acked |= 1u64 << i;
        }
        let next = batch.next_offset();
        if batch.is_done() {
            inner.remove(key);
        }
        OrderAck::Next(next)
    }

    /// Moves one message's visibility to `visible_at`; false when the handle is stale or
    /// already expired.
    pub fn change_invisible(
        &self,
        key: &OrderKey,
        offset: i64,
        pop_time: i64,
        now: i64,
        visible_at: i64,
    ) -> OrderAck {
        let mut inner = self.inner.lock();
        let Some(batch) = inner.get_mut(key) else {
            return OrderAck::Stale;
        };
        if batch.pop_time != pop_time || !batch.offsets.contains(&offset) {
            return OrderAck::Stale;
        }
        match batch.visible_at.get_mut(&offset) {
            Some(at) if *at <= now => OrderAck::Expired,
            Some(at) => {
                *at = visible_at;
                OrderAck::Next(batch.next_offset())
            }
            None => OrderAck::Stale,
        }
    }

    /// What to save.
    pub fn snapshot(&self) -> SavedOrders {
        SavedOrders {
            batches: self
                .inner
                .lock()
                .iter()
                .map(|(k, b)| SavedBatch {
                    topic: k.topic.clone(),
                    group: k.group.clone(),
                    queue_id: k.queue_id,
                    batch: b.clone(),
                })
                .collect(),
        }
    }

    /// Takes back what was saved (at start, within the bound).
    pub fn restore(&self, saved: SavedOrders) {
        let mut inner = self.inner.lock();
        for s in saved.batches.into_iter().take(self.max) {
            if s.batch.offsets.is_empty() || s.batch.offsets.len() > 64 {
                continue;
            }
            let key = OrderKey {
                topic: s.topic,
                group: s.group,
                queue_id: s.queue_id,
            };
            inner.insert(key, s.batch);
        }
    }

    /// Drops the queue's batch (an offset reset).
    pub fn clear(&self, key: &OrderKey) {
        self.inner.lock().remove(key);
    }

    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> OrderKey {
        OrderKey {
            topic: "T".into(),
            group: "g".into(),
            queue_id: 0,
        }
    }

    #[test]
    fn one_batch_in_flight_then_again_with_counts() {
        let t = OrderTable::new(10);
        let c = t.update(key(), None, 100, 50, &[0, 1]);
        assert_eq!(c, OrderCounts::default());
        assert!(t.blocked(&key(), None, 120));
        assert!(!t.blocked(&key(), None, 150), "expired");
        assert_eq!(t.ack(&key(), 0, 100, 120), OrderAck::Next(1));
        assert_eq!(t.ack(&key(), 1, 100, 160), OrderAck::Expired);
        // Popped again from offset 1: one delivery before.
        let c = t.update(key(), None, 160, 50, &[1, 2]);
        assert_eq!(c.per_offset, [(1, 1)]);
        assert_eq!(c.min, 0);
        assert_eq!(t.ack(&key(), 1, 100, 170), OrderAck::Stale, "old pop time");
        assert_eq!(t.ack(&key(), 1, 160, 170), OrderAck::Next(2));
        assert_eq!(t.ack(&key(), 2, 160, 170), OrderAck::Next(3));
        assert!(t.is_empty());
    }

    #[test]
    fn saved_and_restored() {
        let t = OrderTable::new(10);
        t.update(key(), Some("a"), 100, 50, &[4, 5]);
        t.ack(&key(), 4, 100, 110);
        let text = stellmq_remoting::protocol::body::fastjson::encode(&t.snapshot());
        let saved: SavedOrders =
            stellmq_remoting::protocol::body::fastjson::decode(&text).expect("decodes");
        let back = OrderTable::new(10);
        back.restore(saved);
        assert!(back.blocked(&key(), None, 120));
        assert_eq!(back.ack(&key(), 5, 100, 120), OrderAck::Next(6));
    }

    #[test]
    fn same_attempt_is_not_blocked() {
        let t = OrderTable::new(10);
        t.update(key(), Some("a1"), 100, 50, &[0]);
        assert!(!t.blocked(&key(), Some("a1"), 120));
        assert!(t.blocked(&key(), Some("a2"), 120));
        assert_eq!(
            t.change_invisible(&key(), 0, 100, 120, 500),
            OrderAck::Next(0)
        );
        assert!(t.blocked(&key(), None, 400));
    }
}
