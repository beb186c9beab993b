//! POP batches in flight: one checkpoint per POP of one queue, with which of its messages
//! are acked, kept in memory and mirrored in the revive log (see `revive.rs`), which
//! rebuilds it after a restart.
//!
//! The table is bounded (`popMaxInflightCheckpoints`): a POP that would add a checkpoint
//! beyond it is refused. One mutex guards it; nothing is awaited while it is held.

use std::collections::{BTreeSet, HashMap};

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::pop::PopCheckPoint;

/// Identifies a checkpoint as RocketMQ's `genCkUniqueId` does (without the broker name,
/// which is this broker's).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CkKey {
    pub group: String,
    /// The topic read: the POP retry topic for retried messages.
    pub topic: String,
    pub queue_id: i32,
    pub start_offset: i64,
    pub pop_time: i64,
}

/// One batch in flight.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Queue offsets of its messages, ascending (at most 32).
    pub offsets: Vec<i64>,
    /// Bit `i` set: `offsets[i]` is acked (or revived).
    pub acked: u64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    /// Where its record is in the revive queue: while the record is being written, a lower
    /// bound (the queue's end before the write). Progress never passes it.
    pub revive_offset: i64,
}

impl Checkpoint {
    fn all_bits(&self) -> u64 {
        if self.offsets.len() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.offsets.len()) - 1
        }
    }

    pub fn is_done(&self) -> bool {
        self.acked & self.all_bits() == self.all_bits()
    }

    fn index_of(&self, offset: i64) -> Option<usize> {
        self.offsets.iter().position(|o| *o == offset)
    }

    /// Offsets neither acked nor revived.
    pub fn unacked(&self) -> Vec<i64> {
        self.offsets
            .iter()
            .enumerate()
            .filter(|(i, _)| self.acked & (1u64 << i) == 0)
            .map(|(_, o)| *o)
            .collect()
    }
}

/// What an ack found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// Marked now; the caller writes the ack record, then calls [`CheckpointTable::settle`]
    /// (or [`CheckpointTable::unmark`] if the write failed) to its revive queue.
    Marked { revive_qid: i32 },
    /// Acked before: nothing to do.
    AlreadyAcked,
    /// Its invisible time passed: it is (or is about to be) revived.
    Expired,
    /// No checkpoint holds this message (revived and done, never popped, or wrong handle).
    Unknown,
}

/// The table is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFull(pub usize);

#[derive(Default)]
struct Inner {
    map: HashMap<CkKey, Checkpoint>,
    /// (revive time, key): what is due first.
    by_deadline: BTreeSet<(i64, CkKey)>,
}

pub struct CheckpointTable {
    inner: Mutex<Inner>,
    max: usize,
}

impl CheckpointTable {
    pub fn new(max: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            max: max.max(1),
        }
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> usize {
        self.max
    }

    /// Adds a checkpoint of a new POP, within the bound.
    pub fn insert(&self, key: CkKey, ck: Checkpoint) -> Result<(), TableFull> {
        let mut inner = self.inner.lock();
        if inner.map.len() >= self.max && !inner.map.contains_key(&key) {
            return Err(TableFull(self.max));
        }
        Self::put(&mut inner, key, ck);
        Ok(())
    }

    fn put(inner: &mut Inner, key: CkKey, ck: Checkpoint) {
        let deadline = key.pop_time.saturating_add(ck.invisible_time);
        if let Some(old) = inner.map.insert(key.clone(), ck) {
            let old_deadline = key.pop_time.saturating_add(old.invisible_time);
            inner.by_deadline.remove(&(old_deadline, key.clone()));
        }
        inner.by_deadline.insert((deadline, key));
    }

    /// Records where a checkpoint's record landed in its revive queue.
    pub fn set_revive_offset(&self, key: &CkKey, offset: i64) {
        if let Some(ck) = self.inner.lock().map.get_mut(key) {
            ck.revive_offset = offset;
        }
    }

    pub fn remove(&self, key: &CkKey) -> Option<Checkpoint> {
        let mut inner = self.inner.lock();
        let ck = inner.map.remove(key)?;
        let deadline = key.pop_time.saturating_add(ck.invisible_time);
        inner.by_deadline.remove(&(deadline, key.clone()));
        Some(ck)
    }

    pub fn get(&self, key: &CkKey) -> Option<Checkpoint> {
        self.inner.lock().map.get(key).cloned()
    }

    /// Marks `offset` of the checkpoint acked, unless its invisible time passed at `now`.
    pub fn mark(&self, key: &CkKey, offset: i64, now: i64) -> AckOutcome {
        let mut inner = self.inner.lock();
        let Some(ck) = inner.map.get_mut(key) else {
            return AckOutcome::Unknown;
        };
        let Some(i) = ck.index_of(offset) else {
            return AckOutcome::Unknown;
        };
        if ck.acked & (1u64 << i) != 0 {
            return AckOutcome::AlreadyAcked;
        }
        if key.pop_time.saturating_add(ck.invisible_time) <= now {
            return AckOutcome::Expired;
        }
        ck.acked |= 1u64 << i;
        AckOutcome::Marked {
            revive_qid: ck.revive_qid,
        }
    }

    /// Undoes a [`Self::mark`] whose ack record could not be written.
    pub fn unmark(&self, key: &CkKey, offset: i64) {
        if let Some(ck) = self.inner.lock().map.get_mut(key) {
            if let Some(i) = ck.index_of(offset) {
                ck.acked &= !(1u64 << i);
            }
        }
    }

    /// Drops the checkpoint once every message is acked (its ack records are written).
    pub fn settle(&self, key: &CkKey) {
        let done = self
            .inner
            .lock()
            .map
            .get(key)
            .is_some_and(Checkpoint::is_done);
        if done {
            self.remove(key);
        }
    }

    /// Keys of the checkpoints whose revive time is at or before `now`, earliest first, at
    /// most `max`.
    pub fn due(&self, now: i64, max: usize) -> Vec<CkKey> {
        let inner = self.inner.lock();
        inner
            .by_deadline
            .iter()
            .take_while(|(deadline, _)| *deadline <= now)
            .take(max)
            .map(|(_, key)| key.clone())
            .collect()
    }

    /// The smallest revive-queue offset a checkpoint of `revive_qid` still needs.
    pub fn min_revive_offset(&self, revive_qid: i32) -> Option<i64> {
        self.inner
            .lock()
            .map
            .values()
            .filter(|ck| ck.revive_qid == revive_qid)
            .map(|ck| ck.revive_offset)
            .min()
    }

    /// Replays a checkpoint record found at `revive_offset` of its revive queue (no bound:
    /// what was admitted before a restart is tracked after it).
    pub fn replay_checkpoint(&self, record: &PopCheckPoint, revive_qid: i32, revive_offset: i64) {
        let offsets = record.offsets();
        if offsets.is_empty() || offsets.len() > 64 {
            return;
        }
        let key = CkKey {
            group: record.cid.clone(),
            topic: record.topic.clone(),
            queue_id: record.queue_id,
            start_offset: record.start_offset,
            pop_time: record.pop_time,
        };
        let ck = Checkpoint {
            offsets,
            acked: u64::from(record.bit_map as u32),
            invisible_time: record.invisible_time,
            revive_qid,
            revive_offset,
        };
        if ck.is_done() {
            return;
        }
        let mut inner = self.inner.lock();
        Self::put(&mut inner, key, ck);
    }

    /// Replays an ack record: marks its offsets and drops a checkpoint it completes.
    pub fn replay_ack(&self, key: &CkKey, offsets: &[i64]) {
        let mut inner = self.inner.lock();
        let Some(ck) = inner.map.get_mut(key) else {
            return;
        };
        for offset in offsets {
            if let Some(i) = ck.index_of(*offset) {
                ck.acked |= 1u64 << i;
            }
        }
        if ck.is_done() {
            drop(inner);
            self.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start: i64, pop_time: i64) -> CkKey {
        CkKey {
            group: "g".into(),
            topic: "T".into(),
            queue_id: 0,
            start_offset: start,
            pop_time,
        }
    }

    fn ck(offsets: &[i64], invisible: i64) -> Checkpoint {
        Checkpoint {
            offsets: offsets.to_vec(),
            acked: 0,
            invisible_time: invisible,
            revive_qid: 1,
            revive_offset: 7,
        }
    }

    #[test]
    fn acks_expire_and_settle() {
        let t = CheckpointTable::new(2);
        t.insert(key(0, 100), ck(&[0, 1], 50)).expect("room");
        assert_eq!(
            t.mark(&key(0, 100), 1, 120),
            AckOutcome::Marked { revive_qid: 1 }
        );
        assert_eq!(t.mark(&key(0, 100), 1, 120), AckOutcome::AlreadyAcked);
        assert_eq!(t.mark(&key(0, 100), 5, 120), AckOutcome::Unknown);
        assert_eq!(t.mark(&key(0, 100), 0, 150), AckOutcome::Expired);
        assert_eq!(t.mark(&key(9, 100), 0, 120), AckOutcome::Unknown);
        t.settle(&key(0, 100));
        assert_eq!(t.len(), 1, "one message still unacked");
        assert_eq!(t.due(149, 10).len(), 0);
        let due = t.due(150, 10);
        assert_eq!(due.len(), 1);
        assert_eq!(t.get(&due[0]).map(|ck| ck.unacked()), Some(vec![0]));
        assert_eq!(t.min_revive_offset(1), Some(7));
        assert_eq!(
            t.mark(&key(0, 100), 0, 120),
            AckOutcome::Marked { revive_qid: 1 }
        );
        t.settle(&key(0, 100));
        assert!(t.is_empty());
        assert_eq!(t.min_revive_offset(1), None);
    }

    #[test]
    fn bounded() {
        let t = CheckpointTable::new(1);
        t.insert(key(0, 1), ck(&[0], 5)).expect("room");
        assert_eq!(t.insert(key(1, 1), ck(&[1], 5)), Err(TableFull(1)));
    }

    #[test]
    fn replay_rebuilds() {
        let t = CheckpointTable::new(1);
        let record = PopCheckPoint {
            start_offset: 3,
            pop_time: 10,
            invisible_time: 5,
            num: 2,
            topic: "T".into(),
            cid: "g".into(),
            queue_offset_diff: vec![0, 2],
            ..Default::default()
        };
        t.replay_checkpoint(&record, 0, 42);
        let k = CkKey {
            group: "g".into(),
            topic: "T".into(),
            queue_id: 0,
            start_offset: 3,
            pop_time: 10,
        };
        assert_eq!(t.get(&k).map(|c| c.offsets), Some(vec![3, 5]));
        t.replay_ack(&k, &[5]);
        assert_eq!(t.get(&k).map(|c| c.unacked()), Some(vec![3]));
        t.replay_ack(&k, &[3]);
        assert!(t.is_empty());
    }
}
