//! Progress of one assigned queue: the next offset to pull, the offsets handed to the
//! application and not yet finished, and a token that stops its pull loop when a rebalance
//! takes the queue away. The consumed offset of a queue is the smallest unfinished offset (or
//! the next pull offset when none is in flight), so a crash never skips a message. What the
//! running-info probe reports of the queue (`ProcessQueueInfo`) is read here too.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::{MessageQueue, ProcessQueueInfo};
use stellmq_remoting::protocol::message::now_ms;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::routes::MASTER_ID;

pub(crate) struct QueueState {
    pub mq: MessageQueue,
    pub next_pull: AtomicI64,
    /// Unfinished offsets with their body sizes.
    in_flight: Mutex<BTreeMap<i64, usize>>,
    pub dropped: CancellationToken,
    pub locked: AtomicBool,
    /// Interrupts a parked pull so a new position (seek) takes effect at once.
    pub repositioned: Notify,
    /// The broker id the last pull response suggested (`suggestWhichBrokerId`; 0 = master).
    pub suggested_broker: AtomicI64,
    /// When a pull of the queue last came back, a listener last finished one of its
    /// messages, and the broker last locked it (ms since the epoch).
    pub last_pull_ms: AtomicI64,
    pub last_consume_ms: AtomicI64,
    pub last_lock_ms: AtomicI64,
}

impl QueueState {
    /// A queue starting at `offset`, pulled from its master until told otherwise; `dropped`
    /// ends its pull loop.
    pub fn new(mq: MessageQueue, offset: i64, dropped: CancellationToken) -> Self {
        Self {
            mq,
            next_pull: AtomicI64::new(offset),
            in_flight: Mutex::new(BTreeMap::new()),
            dropped,
            locked: AtomicBool::new(false),
            repositioned: Notify::new(),
            suggested_broker: AtomicI64::new(MASTER_ID),
            last_pull_ms: AtomicI64::new(now_ms()),
            last_consume_ms: AtomicI64::new(now_ms()),
            last_lock_ms: AtomicI64::new(0),
        }
    }

    /// The queue as RocketMQ's `ProcessQueueInfo` describes it, with `commit_offset` the
    /// offset the consumer will store.
    pub fn info(&self, commit_offset: i64) -> ProcessQueueInfo {
        let in_flight = self.in_flight.lock();
        let first = in_flight.first_key_value().map_or(0, |(o, _)| *o);
        let last = in_flight.last_key_value().map_or(0, |(o, _)| *o);
        let bytes: usize = in_flight.values().sum();
        ProcessQueueInfo {
            commit_offset,
            cached_msg_min_offset: first,
            cached_msg_max_offset: last,
            cached_msg_count: in_flight.len() as i32,
            cached_msg_size_in_mib: (bytes >> 20) as i32,
            locked: self.locked.load(Ordering::Acquire),
            last_lock_timestamp: self.last_lock_ms.load(Ordering::Acquire),
            droped: self.dropped.is_cancelled(),
            last_pull_timestamp: self.last_pull_ms.load(Ordering::Acquire),
            last_consume_timestamp: self.last_consume_ms.load(Ordering::Acquire),
            ..ProcessQueueInfo::default()
        }
    }

    pub fn in_flight_count(&self) -> usize {
        self.in_flight.lock().len()
    }

    pub fn in_flight_bytes(&self) -> usize {
        self.in_flight.lock().values().sum()
    }

    /// The offset to store: the smallest unfinished message, else the next pull offset.
    pub fn consumed_offset(&self) -> i64 {
        self.in_flight
            .lock()
            .first_key_value()
            .map(|(offset, _)| *offset)
            .unwrap_or_else(|| self.next_pull.load(Ordering::Acquire))
    }

    pub fn begin(&self, offsets: impl IntoIterator<Item = (i64, usize)>) {
        self.in_flight.lock().extend(offsets);
    }

    pub fn finish(&self, offset: i64) {
        self.in_flight.lock().remove(&offset);
    }
}
