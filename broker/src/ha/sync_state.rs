//! The master's SyncStateSet in controller mode (RocketMQ 5's `AutoSwitchHAService`): the
//! replicas whose logs hold everything the master acknowledged, so the controller may elect
//! any of them.
//!
//! "Caught up" is measured in time, as RocketMQ's last-transfer rule does: while streaming,
//! the master samples its max offset (at most every [`SAMPLE_EVERY`]); a report at or past a
//! sample means the slave was caught up as of that sample's time. So a slave that trails a
//! busy master by milliseconds stays in the set, one that trails by more than
//! `haMaxTimeSlaveNotCatchup` leaves it.
//!
//! The controller owns the set: a master starts its term with the set the controller gave it
//! ([`SyncStateTracker::begin`]) and changes it only when the controller accepted a change
//! ([`SyncStateTracker::apply`], with the set's epoch). What the master *wants* is published
//! on a watch channel ([`SyncStateTracker::wanted`]): a slave joins once it reported the
//! master's max offset (and at least the start of the master's term); a member leaves once
//! it has not caught up for `haMaxTimeSlaveNotCatchup` (a member not connected counts as not
//! caught up since the term began). Until the controller answers, acknowledgements count the
//! union of the accepted and the wanted set, as RocketMQ does, so shrinking never weakens a
//! write before the controller agreed.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;

/// A SyncStateSet and the epoch the controller gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncStateSet {
    /// Controller broker ids (the master's own among them).
    pub members: BTreeSet<i64>,
    pub epoch: i32,
}

/// How often the master's max offset is sampled per slave while it streams.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// Samples kept per slave (older ones are dropped; at [`SAMPLE_EVERY`] this is ~100 s).
const MAX_SAMPLES: usize = 2048;

struct Progress {
    acked: i64,
    caught_up: Instant,
    connections: usize,
    /// (when, the master's max offset then), oldest first.
    samples: VecDeque<(Instant, i64)>,
}

impl Progress {
    fn new() -> Self {
        Self {
            acked: 0,
            caught_up: Instant::now(),
            connections: 0,
            samples: VecDeque::new(),
        }
    }

    /// The slave has `acked`: it was caught up as of the newest sample it covers.
    fn covered(&mut self, acked: i64) {
        while let Some((at, max)) = self.samples.front().copied() {
            if max > acked {
                break;
            }
            self.caught_up = self.caught_up.max(at);
            self.samples.pop_front();
        }
    }
}

struct State {
    local_id: i64,
    applied: SyncStateSet,
    wanted: Option<BTreeSet<i64>>,
    slaves: HashMap<i64, Progress>,
    term_started: Instant,
    term_start_offset: i64,
}

/// The master's view of its SyncStateSet and its slaves' progress.
pub struct SyncStateTracker {
    state: Mutex<State>,
    wanted: watch::Sender<Option<BTreeSet<i64>>>,
    /// Bumped on every report and set change: writers waiting for acknowledgements re-check.
    progress: watch::Sender<u64>,
    max_not_caught_up: Duration,
}

impl SyncStateTracker {
    pub fn new(max_not_caught_up: Duration) -> Self {
        Self {
            state: Mutex::new(State {
                local_id: -1,
                applied: SyncStateSet::default(),
                wanted: None,
                slaves: HashMap::new(),
                term_started: Instant::now(),
                term_start_offset: 0,
            }),
            wanted: watch::Sender::new(None),
            progress: watch::Sender::new(0),
            max_not_caught_up,
        }
    }

    /// A new term: `local_id` is the master's controller id, `set` what the controller gave.
    pub fn begin(&self, local_id: i64, set: SyncStateSet, term_start_offset: i64) {
        let mut s = self.state.lock();
        s.local_id = local_id;
        s.applied = set;
        s.applied.members.insert(local_id);
        s.wanted = None;
        s.term_started = Instant::now();
        s.term_start_offset = term_start_offset;
        let now = Instant::now();
        for p in s.slaves.values_mut() {
            p.caught_up = now;
            // A report of an earlier term may predate a truncation: only this term's count.
            p.acked = 0;
        }
        drop(s);
        self.wanted.send_replace(None);
        self.bump();
    }

    /// The set the controller accepted; ignored unless its epoch is newer. True if applied.
    pub fn apply(&self, set: SyncStateSet) -> bool {
        let mut s = self.state.lock();
        if set.epoch <= s.applied.epoch {
            return false;
        }
        tracing::info!(event = "SYNC_STATE_SET_APPLIED", members = ?set.members, epoch = set.epoch, "SyncStateSet changed");
        if s.wanted.as_ref() == Some(&set.members) {
            s.wanted = None;
        }
        s.applied = set;
        let wanted = s.wanted.clone();
        drop(s);
        self.wanted.send_replace(wanted);
        self.bump();
        true
    }

    /// The set the controller last accepted.
    pub fn applied(&self) -> SyncStateSet {
        self.state.lock().applied.clone()
    }

    /// The set the master asks for, `None` when it wants no change: the controller loop
    /// sends it with ALTER_SYNC_STATE_SET and applies the answer with [`Self::apply`].
    pub fn wanted(&self) -> watch::Receiver<Option<BTreeSet<i64>>> {
        self.wanted.subscribe()
    }

    /// The members acknowledgements count: the accepted set and, while the controller has
    /// not answered, the wanted one.
    pub fn effective(&self) -> BTreeSet<i64> {
        let s = self.state.lock();
        let mut members = s.applied.members.clone();
        if let Some(w) = &s.wanted {
            members.extend(w.iter().copied());
        }
        members
    }

    /// How many replicas (the master included) have `offset`.
    pub fn replicas_with(&self, offset: i64) -> usize {
        1 + self
            .state
            .lock()
            .slaves
            .values()
            .filter(|p| p.connections > 0 && p.acked >= offset)
            .count()
    }

    /// Whether every member but the master has `offset`.
    pub fn all_members_have(&self, offset: i64) -> bool {
        let members = self.effective();
        let s = self.state.lock();
        members.iter().filter(|id| **id != s.local_id).all(|id| {
            s.slaves
                .get(id)
                .is_some_and(|p| p.connections > 0 && p.acked >= offset)
        })
    }

    /// The confirm offset: the lowest offset every member but the master has acknowledged
    /// (a member that has not reported in this term counts as 0, one disconnected with what
    /// it last reported: it may still be elected); `i64::MAX` without other members. What
    /// lies past it may be truncated by a new master, so consumers must not see it.
    pub fn confirm_offset(&self) -> i64 {
        let members = self.effective();
        let s = self.state.lock();
        members
            .iter()
            .filter(|id| **id != s.local_id)
            .map(|id| s.slaves.get(id).map_or(0, |p| p.acked))
            .min()
            .unwrap_or(i64::MAX)
    }

    /// A receiver woken on every report and set change.
    pub fn progress(&self) -> watch::Receiver<u64> {
        self.progress.subscribe()
    }

    /// Wakes writers waiting for acknowledgements (they re-check, e.g. that the term is on).
    pub fn bump(&self) {
        self.progress.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub fn connected(&self, slave_id: i64) {
        let mut s = self.state.lock();
        s.slaves
            .entry(slave_id)
            .or_insert_with(Progress::new)
            .connections += 1;
    }

    pub fn disconnected(&self, slave_id: i64) {
        if let Some(p) = self.state.lock().slaves.get_mut(&slave_id) {
            p.connections = p.connections.saturating_sub(1);
        }
        self.bump();
    }

    /// The master streamed to `slave_id` while its log ended at `master_max`: a later report
    /// at or past it means the slave was caught up now.
    pub fn sample(&self, slave_id: i64, master_max: i64) {
        let mut s = self.state.lock();
        let Some(p) = s.slaves.get_mut(&slave_id) else {
            return;
        };
        let now = Instant::now();
        if p.samples
            .back()
            .is_some_and(|(at, _)| now.duration_since(*at) < SAMPLE_EVERY)
        {
            return;
        }
        if p.samples.len() >= MAX_SAMPLES {
            p.samples.pop_front();
        }
        p.samples.push_back((now, master_max));
    }

    /// A slave reported `acked`; the master's log ends at `master_max`.
    pub fn report(&self, slave_id: i64, acked: i64, master_max: i64) {
        let mut s = self.state.lock();
        let start = s.term_start_offset;
        let Some(p) = s.slaves.get_mut(&slave_id) else {
            return;
        };
        p.acked = acked;
        p.covered(acked);
        let caught_up = acked >= master_max;
        if caught_up {
            p.caught_up = Instant::now();
            p.samples.clear();
        }
        let is_member = s.applied.members.contains(&slave_id)
            || s.wanted.as_ref().is_some_and(|w| w.contains(&slave_id));
        let joins = caught_up && acked >= start && !is_member;
        let wanted = joins.then(|| {
            let mut w = s
                .wanted
                .clone()
                .unwrap_or_else(|| s.applied.members.clone());
            w.insert(slave_id);
            tracing::info!(
                event = "SYNC_STATE_SET_EXPAND",
                slave_id,
                acked,
                "slave caught up: asking to add it"
            );
            s.wanted = Some(w.clone());
            w
        });
        drop(s);
        if let Some(w) = wanted {
            self.wanted.send_replace(Some(w));
        }
        self.bump();
    }

    /// Periodic check: members that have not caught up for `haMaxTimeSlaveNotCatchup`
    /// are asked to leave.
    pub fn check_shrink(&self, master_max: i64) {
        let mut s = self.state.lock();
        let now = Instant::now();
        let local = s.local_id;
        let term_started = s.term_started;
        let base = s
            .wanted
            .clone()
            .unwrap_or_else(|| s.applied.members.clone());
        let mut keep = base.clone();
        for id in base.iter().filter(|id| **id != local) {
            let last = match s.slaves.get_mut(id) {
                Some(p) if p.connections > 0 && p.acked >= master_max => {
                    p.caught_up = now;
                    now
                }
                Some(p) => p.caught_up.max(term_started),
                None => term_started,
            };
            if now.duration_since(last) > self.max_not_caught_up {
                tracing::warn!(
                    event = "SYNC_STATE_SET_SHRINK",
                    slave_id = id,
                    "slave has not caught up: asking to remove it"
                );
                keep.remove(id);
            }
        }
        if keep == base {
            return;
        }
        let wanted = (keep != s.applied.members).then_some(keep);
        s.wanted = wanted.clone();
        drop(s);
        self.wanted.send_replace(wanted);
        self.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[i64], epoch: i32) -> SyncStateSet {
        SyncStateSet {
            members: ids.iter().copied().collect(),
            epoch,
        }
    }

    #[test]
    fn a_caught_up_slave_is_wanted_then_applied() {
        let t = SyncStateTracker::new(Duration::from_secs(60));
        t.begin(1, set(&[1], 1), 100);
        t.connected(2);
        t.report(2, 50, 200);
        assert_eq!(*t.wanted().borrow(), None, "behind: not yet");
        t.report(2, 200, 200);
        assert_eq!(*t.wanted().borrow(), Some([1, 2].into()));
        assert_eq!(t.effective(), [1, 2].into());
        assert!(!t.apply(set(&[1, 2], 1)), "same epoch: ignored");
        assert!(t.apply(set(&[1, 2], 2)));
        assert_eq!(*t.wanted().borrow(), None);
        assert!(t.all_members_have(200));
        assert!(!t.all_members_have(201));
        assert_eq!(t.replicas_with(200), 2);
    }

    #[test]
    fn the_confirm_offset_is_what_every_member_has() {
        let t = SyncStateTracker::new(Duration::from_secs(60));
        t.begin(1, set(&[1], 1), 0);
        assert_eq!(t.confirm_offset(), i64::MAX, "the master alone");
        t.begin(1, set(&[1, 2, 3], 2), 0);
        assert_eq!(
            t.confirm_offset(),
            0,
            "members that have not reported hold it"
        );
        t.connected(2);
        t.connected(3);
        t.report(2, 300, 500);
        t.report(3, 200, 500);
        assert_eq!(t.confirm_offset(), 200);
        t.disconnected(3);
        assert_eq!(t.confirm_offset(), 200, "a member gone still holds it");
        assert!(t.apply(set(&[1, 2], 3)));
        assert_eq!(t.confirm_offset(), 300);
        t.begin(1, set(&[1, 2], 4), 500);
        assert_eq!(
            t.confirm_offset(),
            0,
            "a new term counts its own reports only"
        );
    }

    #[test]
    fn a_member_that_falls_behind_is_asked_out_but_still_counts_until_applied() {
        let t = SyncStateTracker::new(Duration::from_millis(20));
        t.begin(1, set(&[1, 2], 3), 0);
        t.connected(2);
        t.report(2, 100, 100);
        t.check_shrink(100);
        assert_eq!(*t.wanted().borrow(), None);
        std::thread::sleep(Duration::from_millis(40));
        t.check_shrink(500);
        assert_eq!(*t.wanted().borrow(), Some([1].into()));
        assert_eq!(t.effective(), [1, 2].into(), "until the controller agrees");
        assert!(t.apply(set(&[1], 4)));
        assert_eq!(t.effective(), [1].into());
        assert!(t.all_members_have(10_000), "no other member");
    }

    #[test]
    fn a_slave_trailing_a_busy_master_by_little_stays_caught_up() {
        let t = SyncStateTracker::new(Duration::from_millis(400));
        t.begin(1, set(&[1, 2], 1), 0);
        t.connected(2);
        // The master keeps writing: the slave never equals the max at report time, but it
        // always has what the master had a moment ago.
        let mut max = 0;
        for _ in 0..8 {
            max += 1000;
            t.sample(2, max);
            std::thread::sleep(SAMPLE_EVERY + Duration::from_millis(5));
            t.report(2, max, max + 500);
            t.check_shrink(max + 500);
        }
        assert_eq!(*t.wanted().borrow(), None, "stays in the set");
        // It stops acknowledging: out after the limit.
        std::thread::sleep(Duration::from_millis(500));
        t.sample(2, max + 5000);
        t.check_shrink(max + 5000);
        assert_eq!(*t.wanted().borrow(), Some([1].into()));
    }
}
