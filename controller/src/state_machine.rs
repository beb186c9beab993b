//! The Raft state machine: applies [`Event`]s to the shared [`ControllerState`], builds and
//! installs snapshots. The state lives in memory and is rebuilt on start from the last
//! snapshot plus the log entries after it.

use std::io::Cursor;
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{EntryPayload, ErrorSubject, ErrorVerb, RaftSnapshotBuilder};
use parking_lot::{Mutex, RwLock};

use crate::raft_types::{Entry, LogId, SnapshotMeta, StorageError, StoredMembership, TypeConfig};
use crate::state::{Applied, ControllerState};
use crate::store::snapshot::{SnapshotFile, SnapshotStore};

/// Read access to the replicated state for request processors.
pub type SharedState = Arc<RwLock<ControllerState>>;

struct Applying {
    last_applied: Option<LogId>,
    membership: StoredMembership,
    current: Option<SnapshotFile>,
    snapshots_built: u64,
}

/// The state machine handed to openraft; clones share everything.
#[derive(Clone)]
pub struct StateMachineStore {
    state: SharedState,
    applying: Arc<Mutex<Applying>>,
    snapshots: SnapshotStore,
}

fn snapshot_error(e: impl std::error::Error + Send + Sync + 'static) -> StorageError {
    StorageError::from_io_error(
        ErrorSubject::Snapshot(None),
        ErrorVerb::Write,
        std::io::Error::other(e.to_string()),
    )
}

impl StateMachineStore {
    /// Loads the last snapshot from `snapshots`, if any.
    pub fn open(snapshots: SnapshotStore) -> std::io::Result<Self> {
        let current = snapshots.load()?;
        let (state, last_applied, membership) = match &current {
            Some(file) => (
                file.state.clone(),
                file.meta.last_log_id,
                file.meta.last_membership.clone(),
            ),
            None => (
                ControllerState::default(),
                None,
                StoredMembership::default(),
            ),
        };
        Ok(Self {
            state: Arc::new(RwLock::new(state)),
            applying: Arc::new(Mutex::new(Applying {
                last_applied,
                membership,
                current,
                snapshots_built: 0,
            })),
            snapshots,
        })
    }

    pub fn shared_state(&self) -> SharedState {
        self.state.clone()
    }

    fn snapshot_of(file: &SnapshotFile) -> Result<Snapshot<TypeConfig>, serde_json::Error> {
        Ok(Snapshot {
            meta: file.meta.clone(),
            snapshot: Box::new(Cursor::new(file.to_bytes()?)),
        })
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachineStore {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let file = {
            let mut applying = self.applying.lock();
            applying.snapshots_built += 1;
            let last = applying.last_applied;
            let snapshot_id = match last {
                Some(id) => format!("{}-{}-{}", id.leader_id, id.index, applying.snapshots_built),
                None => format!("none-{}", applying.snapshots_built),
            };
            SnapshotFile {
                meta: SnapshotMeta {
                    last_log_id: last,
                    last_membership: applying.membership.clone(),
                    snapshot_id,
                },
                state: self.state.read().clone(),
            }
        };
        let bytes = file.to_bytes().map_err(snapshot_error)?;
        self.snapshots.save(bytes).await.map_err(snapshot_error)?;
        tracing::info!(snapshot = %file.meta.snapshot_id, "CONTROLLER_SNAPSHOT_SAVED");
        let snapshot = Self::snapshot_of(&file).map_err(snapshot_error)?;
        self.applying.lock().current = Some(file);
        Ok(snapshot)
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let applying = self.applying.lock();
        Ok((applying.last_applied, applying.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut results = Vec::new();
        let mut applying = self.applying.lock();
        let mut state = self.state.write();
        for entry in entries {
            applying.last_applied = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => results.push(Applied::default()),
                EntryPayload::Normal(event) => {
                    let applied = state.apply(&event);
                    tracing::debug!(?event, code = applied.code, "CONTROLLER_EVENT_APPLIED");
                    results.push(applied);
                }
                EntryPayload::Membership(membership) => {
                    applying.membership = StoredMembership::new(Some(entry.log_id), membership);
                    results.push(Applied::default());
                }
            }
        }
        Ok(results)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let bytes = snapshot.into_inner();
        let mut file = SnapshotFile::from_bytes(&bytes).map_err(snapshot_error)?;
        file.meta = meta.clone();
        let bytes = file.to_bytes().map_err(snapshot_error)?;
        self.snapshots.save(bytes).await.map_err(snapshot_error)?;
        let mut applying = self.applying.lock();
        *self.state.write() = file.state.clone();
        applying.last_applied = meta.last_log_id;
        applying.membership = meta.last_membership.clone();
        applying.current = Some(file);
        tracing::info!(snapshot = %meta.snapshot_id, "CONTROLLER_SNAPSHOT_INSTALLED");
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let current = self.applying.lock().current.clone();
        current
            .as_ref()
            .map(Self::snapshot_of)
            .transpose()
            .map_err(snapshot_error)
    }
}
