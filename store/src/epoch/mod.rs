//! The epoch file of controller mode (RocketMQ 5's `EpochFileCache`): which master term wrote
//! which part of the CommitLog.
//!
//! Every time a broker becomes master, the controller gives it a new, larger epoch, and the
//! broker records `(epoch, startOffset)` with the start being its CommitLog's end at that
//! moment. An entry's end is the next entry's start; the last entry's end is the log's max
//! offset ([`EpochList::set_last_end`]). Two brokers whose lists share an entry (same epoch,
//! same start) wrote the same bytes up to the smaller of the two ends: that is their *last
//! consistent point* ([`EpochList::find_consistent_point`]), the offset a rejoining slave
//! truncates its log to before it replicates from a new master, so no divergent bytes
//! survive a fail-over.
//!
//! * [`EpochList`]: the entries and their rules, no I/O (unit-tested on its own).
//! * [`EpochFile`]: the list persisted in `<storePathRootDir>/epochFileCheckpoint` with its
//!   `.bak`, in RocketMQ's `CheckpointFile` text layout (see [`mod@file`]). Its methods do file
//!   I/O and fsync: call them from a blocking thread (`spawn_blocking`), never on a tokio
//!   worker.

pub mod entries;
pub mod file;

pub use entries::{EpochEntry, EpochList, EpochListError};
pub use file::{EpochFile, EpochFileError, EPOCH_FILE};
