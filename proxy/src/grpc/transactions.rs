//! Transactional halves waiting for their EndTransaction, by (topic, transaction id): recorded
//! when the half is sent or when a broker checks it, kept for a short time, bounded.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::cluster::HalfMessage;

pub struct Transactions {
    inner: Mutex<Inner>,
    ttl: Duration,
    max: usize,
}

#[derive(Default)]
struct Inner {
    halves: HashMap<(String, String), (Instant, HalfMessage)>,
    /// Insertion order, to drop the oldest first.
    order: VecDeque<(String, String)>,
}

impl Transactions {
    pub fn new(ttl: Duration, max: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            ttl,
            max: max.max(1),
        }
    }

    pub fn remember(&self, half: HalfMessage) {
        let key = (half.topic.clone(), half.transaction_id.clone());
        let mut inner = self.inner.lock();
        let ttl = self.ttl;
        while let Some(oldest) = inner.order.front().cloned() {
            let expired = inner
                .halves
                .get(&oldest)
                .is_none_or(|(at, _)| at.elapsed() >= ttl);
            if !expired && inner.halves.len() < self.max {
                break;
            }
            inner.order.pop_front();
            inner.halves.remove(&oldest);
        }
        inner.order.push_back(key.clone());
        inner.halves.insert(key, (Instant::now(), half));
    }

    /// The half of `transaction_id` on `topic`, taken out (an EndTransaction uses it once).
    pub fn take(&self, topic: &str, transaction_id: &str) -> Option<HalfMessage> {
        let mut inner = self.inner.lock();
        let (at, half) = inner
            .halves
            .remove(&(topic.to_owned(), transaction_id.to_owned()))?;
        (at.elapsed() < self.ttl).then_some(half)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half(id: &str) -> HalfMessage {
        HalfMessage {
            broker_addr: "127.0.0.1:10911".into(),
            topic: "T".into(),
            msg_id: "M".into(),
            transaction_id: id.into(),
            commit_log_offset: 1,
            tran_state_table_offset: 2,
        }
    }

    #[test]
    fn kept_once_bounded_and_expiring() {
        let t = Transactions::new(Duration::from_millis(40), 2);
        t.remember(half("a"));
        t.remember(half("b"));
        t.remember(half("c"));
        assert!(t.take("T", "a").is_none(), "the oldest goes first");
        assert!(t.take("T", "b").is_some());
        assert!(t.take("T", "b").is_none(), "used once");
        std::thread::sleep(Duration::from_millis(50));
        assert!(t.take("T", "c").is_none(), "expired");
    }
}
