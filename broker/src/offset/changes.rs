//! The order in which consumer offsets changed, so that a slave copies only what changed
//! since its last copy (a StellMQ extension of GET_ALL_CONSUMER_OFFSET; a RocketMQ master or
//! slave simply copies the whole table).
//!
//! Every change of a `topic@group` key takes the next number of this process's counter. A
//! slave keeps the mark (`<epoch>:<counter>`) of its last copy and asks for what changed
//! after it; a mark of another epoch (the master restarted, or another broker is master now)
//! or one older than what is remembered gets the whole table.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

/// Removed keys remembered beyond the table's own (older removals are forgotten, and a
/// slave behind them copies the whole table).
const MAX_REMOVALS: usize = 100_000;

/// Where a copy of the offsets stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub epoch: u64,
    pub counter: u64,
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.epoch, self.counter)
    }
}

impl FromStr for Mark {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        let (epoch, counter) = text.split_once(':').ok_or(())?;
        Ok(Self {
            epoch: epoch.parse().map_err(|_| ())?,
            counter: counter.parse().map_err(|_| ())?,
        })
    }
}

/// The keys changed since a mark: their current queues are looked up by the caller; a key
/// no longer in the table was removed.
pub struct Since {
    pub keys: Vec<String>,
    pub now: Mark,
}

pub struct Changes {
    epoch: u64,
    counter: u64,
    /// Each key's last change.
    at: HashMap<String, u64>,
    /// The keys by their last change.
    order: BTreeMap<u64, String>,
    /// Changes at or below this are forgotten.
    floor: u64,
}

impl Changes {
    pub fn new() -> Self {
        Self {
            epoch: rand::random::<u64>() >> 1,
            counter: 0,
            at: HashMap::new(),
            order: BTreeMap::new(),
            floor: 0,
        }
    }

    pub fn mark(&self) -> Mark {
        Mark {
            epoch: self.epoch,
            counter: self.counter,
        }
    }

    /// `key` changed (or was removed) now.
    pub fn note(&mut self, key: &str) {
        self.counter += 1;
        // A key seen before moves to the end, reusing its string (offsets are committed on
        // every pull: no allocation for a group that keeps committing).
        let moved = match self.at.get_mut(key) {
            Some(last) => {
                let moved = self.order.remove(last);
                *last = self.counter;
                moved
            }
            None => {
                self.at.insert(key.to_owned(), self.counter);
                None
            }
        };
        let key = moved.unwrap_or_else(|| key.to_owned());
        self.order.insert(self.counter, key);
    }

    /// The keys changed after `mark`, or `None` when it is of another epoch or older than
    /// what is remembered (copy everything then).
    pub fn since(&self, mark: Mark) -> Option<Since> {
        if mark.epoch != self.epoch || mark.counter < self.floor || mark.counter > self.counter {
            return None;
        }
        let keys = self
            .order
            .range(mark.counter + 1..)
            .map(|(_, key)| key.clone())
            .collect();
        Some(Since {
            keys,
            now: self.mark(),
        })
    }

    /// Forgets the oldest removals beyond [`MAX_REMOVALS`]; `live` says which keys are in
    /// the table.
    pub fn forget_old_removals(&mut self, table_len: usize, live: impl Fn(&str) -> bool) {
        let mut excess = self.order.len().saturating_sub(table_len + MAX_REMOVALS);
        if excess == 0 {
            return;
        }
        let forgotten: Vec<(u64, String)> = self
            .order
            .iter()
            .filter(|(_, key)| !live(key))
            .take_while(|_| {
                let more = excess > 0;
                excess = excess.saturating_sub(1);
                more
            })
            .map(|(at, key)| (*at, key.clone()))
            .collect();
        for (at, key) in forgotten {
            self.order.remove(&at);
            self.at.remove(&key);
            self.floor = self.floor.max(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_sees_only_later_changes_once_each() {
        let mut changes = Changes::new();
        changes.note("a@g");
        let first = changes.mark();
        changes.note("b@g");
        changes.note("a@g");
        changes.note("b@g");
        let since = changes.since(first).expect("a delta");
        assert_eq!(since.keys, ["a@g", "b@g"]);
        assert_eq!(since.now.counter, 4);
        assert!(changes.since(since.now).expect("a delta").keys.is_empty());
        assert_eq!(first.to_string().parse::<Mark>(), Ok(first));
    }

    #[test]
    fn another_epoch_or_a_forgotten_past_copies_everything() {
        let mut changes = Changes::new();
        changes.note("a@g");
        let mark = changes.mark();
        let elsewhere = Mark {
            epoch: mark.epoch + 1,
            ..mark
        };
        assert!(changes.since(elsewhere).is_none());
        let ahead = Mark {
            counter: 99,
            ..mark
        };
        assert!(changes.since(ahead).is_none(), "a mark from the future");
        let start = Mark { counter: 0, ..mark };
        // More removals than remembered: the oldest go, and a mark before them is refused.
        for i in 0..MAX_REMOVALS + 10 {
            changes.note(&format!("gone{i}@g"));
        }
        changes.forget_old_removals(1, |key| key == "a@g");
        assert!(changes.since(start).is_none());
        assert!(changes.since(changes.mark()).is_some());
        assert_eq!(changes.order.len(), MAX_REMOVALS + 1);
    }
}
