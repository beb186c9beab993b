//! Snapshots: the whole controller state as JSON with its Raft metadata, in
//! `<controllerStorePath>/raft/snapshot.json`, replaced atomically (temp file + rename).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{blocking, records};
use crate::raft_types::SnapshotMeta;
use crate::state::ControllerState;

/// What a snapshot file holds and a snapshot transfer carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SnapshotFile {
    pub meta: SnapshotMeta,
    pub state: ControllerState,
}

impl SnapshotFile {
    pub fn to_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// Where the current snapshot lives.
#[derive(Debug, Clone)]
pub struct SnapshotStore {
    path: PathBuf,
}

impl SnapshotStore {
    pub fn new(dir: &Path) -> Self {
        Self {
            path: dir.join("snapshot.json"),
        }
    }

    /// The saved snapshot; `None` if there is none. A file that cannot be read is an error:
    /// starting from an empty state would silently forget broker sets.
    pub fn load(&self) -> std::io::Result<Option<SnapshotFile>> {
        match std::fs::read(&self.path) {
            Ok(bytes) => SnapshotFile::from_bytes(&bytes)
                .map(Some)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", self.path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Replaces the saved snapshot with `bytes` (a serialized [`SnapshotFile`]).
    pub async fn save(&self, bytes: Vec<u8>) -> std::io::Result<()> {
        let path = self.path.clone();
        blocking(move || records::write_atomically(&path, &bytes)).await
    }
}
