//! The `checkpoint` file (protocol.md 6.5): store timestamps up to which the CommitLog, the
//! ConsumeQueues and the index are known flushed. Recovery after a crash starts from the
//! CommitLog file that holds messages older than the smallest of them.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::error::{open_read_write, IoContext, StoreError};

const FILE_SIZE: u64 = 4096;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointValues {
    pub physic_msg_timestamp: i64,
    pub logics_msg_timestamp: i64,
    pub index_msg_timestamp: i64,
}

impl CheckpointValues {
    /// The timestamp recovery must start before (Java: min of physic and logics).
    pub fn min_timestamp(&self) -> i64 {
        self.physic_msg_timestamp.min(self.logics_msg_timestamp)
    }
}

pub struct Checkpoint {
    path: PathBuf,
    file: File,
    values: Mutex<CheckpointValues>,
}

impl Checkpoint {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let file = open_read_write(path)?;
        if file.metadata().at(path)?.len() < FILE_SIZE {
            file.set_len(FILE_SIZE).at(path)?;
        }
        let mut raw = [[0u8; 8]; 3];
        file.read_exact_at(raw.as_flattened_mut(), 0).at(path)?;
        let [physic, logics, index] = raw.map(i64::from_be_bytes);
        let values = CheckpointValues {
            physic_msg_timestamp: physic,
            logics_msg_timestamp: logics,
            index_msg_timestamp: index,
        };
        Ok(Self {
            path: path.to_owned(),
            file,
            values: Mutex::new(values),
        })
    }

    pub fn values(&self) -> CheckpointValues {
        *self.values.lock()
    }

    pub fn update(&self, change: impl FnOnce(&mut CheckpointValues)) {
        change(&mut self.values.lock());
    }

    /// Writes the values and syncs the file.
    pub fn flush(&self) -> Result<(), StoreError> {
        let v = self.values();
        let mut raw = [0u8; 24];
        raw[0..8].copy_from_slice(&v.physic_msg_timestamp.to_be_bytes());
        raw[8..16].copy_from_slice(&v.logics_msg_timestamp.to_be_bytes());
        raw[16..24].copy_from_slice(&v.index_msg_timestamp.to_be_bytes());
        self.file.write_all_at(&raw, 0).at(&self.path)?;
        self.file.sync_data().at(&self.path)
    }
}
