//! Memory set aside for inflating compressed REGISTER_BROKER bodies.
//!
//! Anyone who can reach the name server may register, so a small zlib body must not be
//! able to make it hold a large one: bodies are inflated one section at a time, each
//! section's bytes are taken from one server-wide budget before they are inflated (and
//! given back when the request is answered), and a connection inflates one body at a time.
//! Parallel requests therefore cannot add up past the budget; a request that finds it used
//! up is answered SYSTEM_BUSY and its broker registers again on its next round.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

pub struct InflateBudget {
    /// Bytes not taken by a body being inflated.
    available: Mutex<usize>,
    /// Connections inflating a body now.
    inflating: Mutex<HashSet<u64>>,
}

impl InflateBudget {
    pub fn new(bytes: usize) -> Self {
        Self {
            available: Mutex::new(bytes),
            inflating: Mutex::new(HashSet::new()),
        }
    }

    /// A reservation for inflating one body of connection `channel`; `None` while that
    /// connection inflates another.
    pub fn reserve(self: &Arc<Self>, channel: u64) -> Option<Reservation> {
        self.inflating.lock().insert(channel).then(|| Reservation {
            budget: self.clone(),
            channel,
            held: 0,
        })
    }

    #[cfg(test)]
    pub fn available(&self) -> usize {
        *self.available.lock()
    }
}

/// The budget one body holds; all of it goes back when this is dropped.
pub struct Reservation {
    budget: Arc<InflateBudget>,
    channel: u64,
    held: usize,
}

impl Reservation {
    /// Takes `bytes` more from the budget; false (taking nothing) when it has less left.
    pub fn charge(&mut self, bytes: usize) -> bool {
        let mut available = self.budget.available.lock();
        match available.checked_sub(bytes) {
            Some(left) => {
                *available = left;
                self.held += bytes;
                true
            }
            None => false,
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        *self.budget.available.lock() += self.held;
        self.budget.inflating.lock().remove(&self.channel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_share_the_budget_and_give_it_back() {
        let budget = Arc::new(InflateBudget::new(100));
        let mut a = budget.reserve(1).expect("first body of connection 1");
        let mut b = budget.reserve(2).expect("first body of connection 2");
        assert!(
            budget.reserve(1).is_none(),
            "one body at a time per connection"
        );
        assert!(a.charge(60));
        assert!(!b.charge(50), "only 40 left");
        assert!(b.charge(40));
        assert_eq!(budget.available(), 0);
        drop(a);
        assert_eq!(budget.available(), 60);
        assert!(
            budget.reserve(1).is_some(),
            "connection 1 may inflate again"
        );
        drop(b);
        assert_eq!(budget.available(), 100);
    }
}
