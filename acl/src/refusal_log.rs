//! How many refusals are logged: a client that keeps sending refused requests must not be
//! able to fill the broker's disk with log lines. At most [`LOGGED_PER_SECOND`] refusals a
//! second are logged; the others are counted and the count goes with the next logged one.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub const LOGGED_PER_SECOND: u32 = 20;

#[derive(Default)]
pub struct RefusalLog {
    second: AtomicU64,
    logged: AtomicU32,
    suppressed: AtomicU64,
}

impl RefusalLog {
    /// `Some(refusals not logged since the last logged one)` when this refusal may be
    /// logged, `None` when it is only counted.
    pub fn admit(&self) -> Option<u64> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.admit_at(now)
    }

    fn admit_at(&self, second: u64) -> Option<u64> {
        // Races between threads only blur the limit by a few lines at a second's turn.
        if self.second.swap(second, Ordering::Relaxed) != second {
            self.logged.store(0, Ordering::Relaxed);
        }
        if self.logged.fetch_add(1, Ordering::Relaxed) < LOGGED_PER_SECOND {
            Some(self.suppressed.swap(0, Ordering::Relaxed))
        } else {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_a_bounded_number_a_second_and_counts_the_rest() {
        let log = RefusalLog::default();
        let admitted = (0..100).filter(|_| log.admit_at(7).is_some()).count();
        assert_eq!(admitted, LOGGED_PER_SECOND as usize);
        assert_eq!(
            log.admit_at(8),
            Some(100 - u64::from(LOGGED_PER_SECOND)),
            "the count goes with the next line"
        );
        assert_eq!(log.admit_at(8), Some(0));
    }
}
