//! The epoch entries and their rules, as RocketMQ 5's `EpochFileCache` keeps them in memory.

/// One master term: `epoch` wrote the CommitLog from `start_offset` to `end_offset`
/// (exclusive). The last entry's end is open ([`OPEN_END`]) until
/// [`EpochList::set_last_end`] sets it to the log's max offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
    pub end_offset: i64,
}

/// The end of the last entry before it is known (Java's `Long.MAX_VALUE`).
pub const OPEN_END: i64 = i64::MAX;

impl EpochEntry {
    pub fn new(epoch: i32, start_offset: i64) -> Self {
        Self {
            epoch,
            start_offset,
            end_offset: OPEN_END,
        }
    }
}

/// Why an entry was not appended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EpochListError {
    #[error("epoch {epoch} is not above the last epoch {last}")]
    StaleEpoch { epoch: i32, last: i32 },
    #[error("start offset {start} of epoch {epoch} is below the last entry's start {last_start}")]
    StartBehind {
        epoch: i32,
        start: i64,
        last_start: i64,
    },
}

/// Entries in ascending epoch (and start offset) order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpochList {
    entries: Vec<EpochEntry>,
}

impl EpochList {
    /// A list from `(epoch, startOffset)` pairs as read from a file or a peer; ends are
    /// chained (each entry ends where the next starts, the last is open). Pairs out of
    /// order are sorted by epoch; a repeated epoch keeps its last pair.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (i32, i64)>) -> Self {
        let mut entries: Vec<EpochEntry> = Vec::new();
        let mut sorted: Vec<(i32, i64)> = pairs.into_iter().collect();
        sorted.sort_by_key(|(epoch, _)| *epoch);
        for (epoch, start) in sorted {
            if entries.last().is_some_and(|e| e.epoch == epoch) {
                entries.pop();
            }
            entries.push(EpochEntry::new(epoch, start));
        }
        let mut list = Self { entries };
        list.chain_ends();
        list
    }

    /// Entries with the ends given (a peer's list as it sent them).
    pub fn from_entries(mut entries: Vec<EpochEntry>) -> Self {
        entries.sort_by_key(|e| e.epoch);
        entries.dedup_by_key(|e| e.epoch);
        Self { entries }
    }

    fn chain_ends(&mut self) {
        let starts: Vec<i64> = self
            .entries
            .iter()
            .skip(1)
            .map(|e| e.start_offset)
            .collect();
        for (entry, next_start) in self.entries.iter_mut().zip(starts) {
            entry.end_offset = next_start;
        }
        if let Some(last) = self.entries.last_mut() {
            last.end_offset = OPEN_END;
        }
    }

    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn first(&self) -> Option<EpochEntry> {
        self.entries.first().copied()
    }

    pub fn last(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// The last epoch, -1 when there is none (as RocketMQ's `lastEpoch`).
    pub fn last_epoch(&self) -> i32 {
        self.entries.last().map_or(-1, |e| e.epoch)
    }

    pub fn get(&self, epoch: i32) -> Option<EpochEntry> {
        self.entries.iter().find(|e| e.epoch == epoch).copied()
    }

    /// The entry whose range holds `offset`.
    pub fn find_by_offset(&self, offset: i64) -> Option<EpochEntry> {
        self.entries
            .iter()
            .find(|e| e.start_offset <= offset && offset < e.end_offset)
            .copied()
    }

    /// Appends a new term. `Ok(false)` (nothing changes) when the new term starts where the
    /// last one does: the last term wrote nothing, and RocketMQ then keeps the older entry
    /// so that the lists of brokers that saw it still match.
    pub fn append(&mut self, epoch: i32, start_offset: i64) -> Result<bool, EpochListError> {
        if let Some(last) = self.entries.last_mut() {
            if epoch <= last.epoch {
                return Err(EpochListError::StaleEpoch {
                    epoch,
                    last: last.epoch,
                });
            }
            if start_offset < last.start_offset {
                return Err(EpochListError::StartBehind {
                    epoch,
                    start: start_offset,
                    last_start: last.start_offset,
                });
            }
            if start_offset == last.start_offset {
                return Ok(false);
            }
            last.end_offset = start_offset;
        }
        self.entries.push(EpochEntry::new(epoch, start_offset));
        Ok(true)
    }

    /// Sets the last entry's end (the log's max offset), unless that is below its start.
    pub fn set_last_end(&mut self, end_offset: i64) {
        if let Some(last) = self.entries.last_mut() {
            if last.start_offset <= end_offset {
                last.end_offset = end_offset;
            }
        }
    }

    /// Removes the entries that start at or beyond `offset` (the log was cut there); the
    /// last one left ends open. True when something was removed.
    pub fn truncate_suffix_by_offset(&mut self, offset: i64) -> bool {
        self.truncate_suffix(|e| e.start_offset >= offset)
    }

    /// Removes the entries of `epoch` and later.
    pub fn truncate_suffix_by_epoch(&mut self, epoch: i32) -> bool {
        self.truncate_suffix(|e| e.epoch >= epoch)
    }

    fn truncate_suffix(&mut self, remove: impl Fn(&EpochEntry) -> bool) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| !remove(e));
        if let Some(last) = self.entries.last_mut() {
            last.end_offset = OPEN_END;
        }
        self.entries.len() != before
    }

    /// Removes the entries wholly below `offset` (retention deleted their bytes).
    pub fn truncate_prefix_by_offset(&mut self, offset: i64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.end_offset > offset);
        self.entries.len() != before
    }

    /// The last offset up to which this log and `other`'s hold the same bytes: walking this
    /// list from the newest term back, the first term both have with the same start; the
    /// smaller of the two ends. `None` when they share no term (RocketMQ's -1).
    ///
    /// Both lists' last entries should have their ends set ([`Self::set_last_end`]) to their
    /// logs' max offsets first.
    pub fn find_consistent_point(&self, other: &EpochList) -> Option<i64> {
        self.entries.iter().rev().find_map(|local| {
            other
                .get(local.epoch)
                .filter(|theirs| theirs.start_offset == local.start_offset)
                .map(|theirs| theirs.end_offset.min(local.end_offset))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(i32, i64)], end: i64) -> EpochList {
        let mut l = EpochList::from_pairs(pairs.iter().copied());
        l.set_last_end(end);
        l
    }

    #[test]
    fn ends_chain_and_the_last_is_the_log_end() {
        let l = list(&[(1, 0), (2, 100), (4, 250)], 300);
        let ends: Vec<i64> = l.entries().iter().map(|e| e.end_offset).collect();
        assert_eq!(ends, [100, 250, 300]);
        assert_eq!(l.last_epoch(), 4);
        assert_eq!(l.find_by_offset(120).map(|e| e.epoch), Some(2));
        assert_eq!(l.find_by_offset(300), None);
        assert_eq!(EpochList::default().last_epoch(), -1);
    }

    #[test]
    fn append_needs_a_newer_epoch_and_a_later_start() {
        let mut l = EpochList::default();
        assert_eq!(l.append(1, 0), Ok(true));
        assert_eq!(l.append(2, 100), Ok(true));
        assert_eq!(
            l.append(2, 200),
            Err(EpochListError::StaleEpoch { epoch: 2, last: 2 })
        );
        assert_eq!(
            l.append(3, 50),
            Err(EpochListError::StartBehind {
                epoch: 3,
                start: 50,
                last_start: 100
            })
        );
        // A term that wrote nothing keeps the older entry, as RocketMQ does.
        assert_eq!(l.append(3, 100), Ok(false));
        assert_eq!(l.last_epoch(), 2);
        assert_eq!(l.entries()[0].end_offset, 100);
    }

    #[test]
    fn truncation_by_offset_and_epoch_reopens_the_last_end() {
        let mut l = list(&[(1, 0), (2, 100), (3, 200)], 300);
        assert!(l.truncate_suffix_by_offset(150));
        assert_eq!(l.last(), Some(EpochEntry::new(2, 100)));
        assert!(!l.truncate_suffix_by_offset(150));
        assert!(l.truncate_suffix_by_epoch(2));
        assert_eq!(l.last(), Some(EpochEntry::new(1, 0)));
        let mut l = list(&[(1, 0), (2, 100), (3, 200)], 300);
        assert!(l.truncate_prefix_by_offset(100));
        assert_eq!(l.first().map(|e| e.epoch), Some(2));
    }

    #[test]
    fn consistent_point_is_the_smaller_end_of_the_newest_shared_term() {
        // The old master wrote epoch 2 up to 260; the new master (epoch 3) had 2 only to 200.
        let old_master = list(&[(1, 0), (2, 100)], 260);
        let new_master = list(&[(1, 0), (2, 100), (3, 200)], 400);
        assert_eq!(old_master.find_consistent_point(&new_master), Some(200));
        // The same from the other side.
        assert_eq!(new_master.find_consistent_point(&old_master), Some(200));
        // A slave that is simply behind keeps everything it has.
        let behind = list(&[(1, 0), (2, 100)], 150);
        assert_eq!(behind.find_consistent_point(&new_master), Some(150));
        // Same epoch, different start: not the same term; fall back to an older one.
        let forked = list(&[(1, 0), (2, 120)], 300);
        assert_eq!(forked.find_consistent_point(&new_master), Some(100));
        // Nothing shared.
        let alien = list(&[(7, 0)], 10);
        assert_eq!(alien.find_consistent_point(&new_master), None);
        assert_eq!(
            EpochList::default().find_consistent_point(&new_master),
            None
        );
    }

    #[test]
    fn peers_lists_keep_their_ends() {
        let l = EpochList::from_entries(vec![
            EpochEntry {
                epoch: 2,
                start_offset: 100,
                end_offset: 180,
            },
            EpochEntry {
                epoch: 1,
                start_offset: 0,
                end_offset: 100,
            },
        ]);
        assert_eq!(l.entries()[0].epoch, 1);
        assert_eq!(l.last().map(|e| e.end_offset), Some(180));
    }
}
