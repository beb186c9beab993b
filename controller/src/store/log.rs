//! The Raft log and vote, in one append-only file of CRC-framed JSON records
//! (`<controllerStorePath>/raft/log`): appends are fsynced before they are acknowledged; a
//! purge rewrites the file atomically with what is left.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, RaftLogId, RaftLogReader};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::{blocking, records};
use crate::raft_types::{Entry, LogId, StorageError, TypeConfig, Vote};

#[derive(Serialize, Deserialize)]
enum LogRecord {
    Entry(Entry),
    /// Entries from this index on were removed.
    Truncate(u64),
    Purged(LogId),
    Vote(Vote),
}

#[derive(Default)]
struct LogData {
    entries: BTreeMap<u64, Entry>,
    last_purged: Option<LogId>,
    vote: Option<Vote>,
}

impl LogData {
    fn replay(&mut self, record: LogRecord) {
        match record {
            LogRecord::Entry(entry) => {
                self.entries.insert(entry.get_log_id().index, entry);
            }
            LogRecord::Truncate(since) => {
                self.entries.split_off(&since);
            }
            LogRecord::Purged(log_id) => self.purge(log_id),
            LogRecord::Vote(vote) => self.vote = Some(vote),
        }
    }

    fn purge(&mut self, log_id: LogId) {
        self.entries = self.entries.split_off(&(log_id.index + 1));
        self.last_purged = Some(log_id);
    }

    /// The records that rebuild this state from nothing.
    fn snapshot_records(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::new();
        let mut push = |record: &LogRecord| -> Result<(), serde_json::Error> {
            out.extend(records::encode(&serde_json::to_vec(record)?));
            Ok(())
        };
        if let Some(vote) = self.vote {
            push(&LogRecord::Vote(vote))?;
        }
        if let Some(purged) = self.last_purged {
            push(&LogRecord::Purged(purged))?;
        }
        for entry in self.entries.values() {
            push(&LogRecord::Entry(entry.clone()))?;
        }
        Ok(out)
    }
}

/// The log store; clones share the same log (the clone is the log reader).
#[derive(Clone)]
pub struct LogStore {
    path: Arc<PathBuf>,
    data: Arc<Mutex<LogData>>,
    file: Arc<Mutex<File>>,
}

fn io_error(subject: ErrorSubject<u64>, verb: ErrorVerb, e: std::io::Error) -> StorageError {
    StorageError::from_io_error(subject, verb, e)
}

impl LogStore {
    /// Opens (or creates) the log under `dir`, keeping every intact record and cutting the
    /// file after the last one.
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("log");
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let (payloads, valid) = records::decode_all(&bytes);
        let mut data = LogData::default();
        let mut kept = 0usize;
        for payload in payloads {
            match serde_json::from_slice::<LogRecord>(payload) {
                Ok(record) => {
                    data.replay(record);
                    kept += 1;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "CONTROLLER_LOG_RECORD_UNREADABLE: recovery stops here");
                    break;
                }
            }
        }
        if valid < bytes.len() {
            tracing::warn!(path = %path.display(), kept, dropped_bytes = bytes.len() - valid, "CONTROLLER_LOG_TORN_TAIL_DROPPED");
        }
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        file.set_len(valid as u64)?;
        file.sync_all()?;
        Ok(Self {
            path: Arc::new(path),
            data: Arc::new(Mutex::new(data)),
            file: Arc::new(Mutex::new(file)),
        })
    }

    async fn write(&self, records: Vec<LogRecord>) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        for record in &records {
            let payload = serde_json::to_vec(record).map_err(std::io::Error::other)?;
            if payload.len() > records::MAX_RECORD {
                return Err(std::io::Error::other("log record too large"));
            }
            bytes.extend(records::encode(&payload));
        }
        let file = self.file.clone();
        blocking(move || {
            let mut file = file.lock();
            file.write_all(&bytes)?;
            file.sync_data()
        })
        .await
    }

    async fn rewrite(&self) -> std::io::Result<()> {
        let content = self
            .data
            .lock()
            .snapshot_records()
            .map_err(std::io::Error::other)?;
        let (path, file) = (self.path.clone(), self.file.clone());
        blocking(move || {
            let mut file = file.lock();
            records::write_atomically(&path, &content)?;
            *file = OpenOptions::new().append(true).open(path.as_path())?;
            Ok(())
        })
        .await
    }

    /// Entries currently held (for tests and diagnostics).
    pub fn entry_count(&self) -> usize {
        self.data.lock().entries.len()
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let data = self.data.lock();
        Ok(data.entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let data = self.data.lock();
        let last = data.entries.values().next_back().map(|e| *e.get_log_id());
        Ok(LogState {
            last_purged_log_id: data.last_purged,
            last_log_id: last.or(data.last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        self.write(vec![LogRecord::Vote(*vote)])
            .await
            .map_err(|e| io_error(ErrorSubject::Vote, ErrorVerb::Write, e))?;
        self.data.lock().vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.data.lock().vote)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        {
            let mut data = self.data.lock();
            for entry in &entries {
                data.entries.insert(entry.get_log_id().index, entry.clone());
            }
        }
        let result = self
            .write(entries.into_iter().map(LogRecord::Entry).collect())
            .await;
        let failed = result
            .as_ref()
            .err()
            .map(|e| std::io::Error::new(e.kind(), e.to_string()));
        callback.log_io_completed(result);
        match failed {
            Some(e) => Err(io_error(ErrorSubject::Logs, ErrorVerb::Write, e)),
            None => Ok(()),
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.data.lock().entries.split_off(&log_id.index);
        self.write(vec![LogRecord::Truncate(log_id.index)])
            .await
            .map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Delete, e))
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.data.lock().purge(log_id);
        self.rewrite()
            .await
            .map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Delete, e))
    }
}

#[cfg(test)]
mod tests;
