//! Which queue a send goes to: round robin over the topic's publish queues, passing over
//! brokers in quarantine (a failed send isolates its broker for `fault_isolation`, a slow one
//! for 5 s) and the broker the previous attempt failed on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::MessageQueue;

use crate::route::PublishInfo;

pub(super) struct QueueSelector {
    next_queue: AtomicUsize,
    /// Quarantined brokers, until when.
    faults: RwLock<HashMap<String, Instant>>,
}

impl QueueSelector {
    /// Starts the round robin at a random queue, so producers do not all begin on the same.
    pub fn new() -> Self {
        Self {
            next_queue: AtomicUsize::new(rand::random::<u16>() as usize),
            faults: RwLock::new(HashMap::new()),
        }
    }

    /// The next queue of a healthy broker other than `avoid`, else the next queue anyway;
    /// `None` when `info` has no queue.
    pub fn choose(&self, info: &PublishInfo, avoid: Option<&str>) -> Option<MessageQueue> {
        let n = info.queues.len();
        let start = self.next_queue.fetch_add(1, Ordering::Relaxed) % n.max(1);
        let in_turn = || info.queues.iter().cycle().skip(start).take(n);
        in_turn()
            .find(|q| Some(q.broker_name.as_str()) != avoid && self.healthy(&q.broker_name))
            .or_else(|| in_turn().next())
            .cloned()
    }

    /// Keeps sends away from `broker` for `for_how_long`.
    pub fn isolate(&self, broker: &str, for_how_long: Duration) {
        self.faults
            .write()
            .insert(broker.to_owned(), Instant::now() + for_how_long);
    }

    fn healthy(&self, broker: &str) -> bool {
        self.faults
            .read()
            .get(broker)
            .is_none_or(|until| Instant::now() >= *until)
    }
}
