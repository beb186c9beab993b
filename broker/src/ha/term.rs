//! A controller-mode master's term: the epoch the controller elected it with, the epoch file
//! it answers slaves' handshakes from, and its SyncStateSet. A master whose term ended (it
//! was demoted) admits no slave and has closed the connections of the term.

use std::sync::Arc;

use parking_lot::Mutex;
use stellmq_store::epoch::EpochFile;
use tokio_util::sync::CancellationToken;

use super::sync_state::{SyncStateSet, SyncStateTracker};

/// The current term: its epoch, and a token cancelled when it ends (closing its slaves).
#[derive(Clone)]
pub struct Term {
    pub epoch: i32,
    pub connections: CancellationToken,
}

/// The controller-mode part of [`super::HaMaster`].
pub struct Controlled {
    pub epochs: Arc<EpochFile>,
    term: Mutex<Option<Term>>,
    pub sync: SyncStateTracker,
}

impl Controlled {
    pub fn new(epochs: Arc<EpochFile>, sync: SyncStateTracker) -> Self {
        Self {
            epochs,
            term: Mutex::new(None),
            sync,
        }
    }

    pub fn term(&self) -> Option<Term> {
        self.term.lock().clone()
    }

    /// Starts a term (ending any previous one and closing its connections).
    pub fn begin(&self, epoch: i32, local_id: i64, set: SyncStateSet, start_offset: i64) {
        let previous = self.term.lock().replace(Term {
            epoch,
            connections: CancellationToken::new(),
        });
        if let Some(previous) = previous {
            previous.connections.cancel();
        }
        self.sync.begin(local_id, set, start_offset);
    }

    /// Ends the term: no slave is admitted, connected ones are closed.
    pub fn end(&self) {
        if let Some(term) = self.term.lock().take() {
            term.connections.cancel();
        }
        // Writes waiting for acknowledgements give up now rather than at their timeout.
        self.sync.bump();
    }
}
