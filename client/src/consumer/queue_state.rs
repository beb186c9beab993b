//! Progress of one assigned queue: the next offset to pull, the offsets handed to the
//! application and not yet finished, and a token that stops its pull loop when a rebalance
//! takes the queue away. The consumed offset of a queue is the smallest unfinished offset (or
//! the next pull offset when none is in flight), so a crash never skips a message.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::MessageQueue;
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
