//! Role switches at runtime (RocketMQ 5's `ReplicasManager.changeToMaster` /
//! `changeToSlave`), the API the controller client loop drives.
//!
//! Both switches are serialized, idempotent for the epoch the broker already switched to and
//! ignore older epochs ([`RoleChange`]), as RocketMQ's `newMasterEpoch > masterEpoch` rule
//! does.
//!
//! **To master** ([`RoleSwitcher::change_to_master`]): stop replicating (and wait until no
//! master's byte can arrive), wait until everything replicated is dispatched, record
//! `(epoch, CommitLog max offset)` in the epoch file (entries of that epoch or later are
//! dropped first), let the store take local writes, start the term on the HA port (slaves
//! of this epoch are admitted; the SyncStateSet is the one given), set the role (brokerId 0,
//! as RocketMQ's `MixAll.MASTER_ID`), stop the slave-only services and start the master-only
//! ones (delay levels, timers, POP revive, transaction checks) from their persisted
//! progress, and register with the name servers.
//!
//! **To slave** ([`RoleSwitcher::change_to_slave`]): set the role (the broker's own id; sends
//! are answered SERVICE_NOT_AVAILABLE from then on), make the store a replica (refusing local
//! writes), end the master term (its slaves are disconnected), stop the master-only
//! services, start the metadata sync from the new master, replicate from the new master's HA
//! address (the handshake cuts the log back to the last consistent point first), and
//! register with the name servers.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stellmq_store::epoch::{EpochFile, EpochFileError, EpochList};
use stellmq_store::MessageStore;
use tokio::sync::{watch, Mutex as AsyncMutex};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::role::{RuntimeRole, MASTER_ID};
use crate::ha::sync_state::SyncStateSet;
use crate::ha::{HaMaster, HaSlave};
use crate::registration::Registrar;

/// What a switch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleChange {
    /// The broker switched.
    Changed,
    /// The broker already had this role in this epoch: nothing done.
    Unchanged,
    /// The epoch is older than the one the broker switched to last: ignored.
    Stale { current: i32 },
}

/// Why a switch failed; the broker keeps its former role (possibly without serving, see the
/// message), and the controller loop should retry or report.
#[derive(Debug, thiserror::Error)]
pub enum RoleChangeError {
    #[error("the epoch file: {0}")]
    Epochs(#[from] EpochFileError),
    #[error("epoch {epoch} is older than the epoch file's last epoch {last}")]
    EpochBehindFile { epoch: i32, last: i32 },
    #[error("a blocking step failed: {0}")]
    Join(String),
}

/// Starts the services of one role; they run until the token is cancelled.
pub type ServiceStarter = Box<dyn Fn(CancellationToken) -> Vec<JoinHandle<()>> + Send + Sync>;

/// The role-specific background services.
pub struct RoleServices {
    /// Delay levels, timers, POP revive, transaction checks.
    pub master: ServiceStarter,
    /// Metadata sync from the master.
    pub slave: ServiceStarter,
}

/// The broker's role as the controller last set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSnapshot {
    /// 0 = master; -1 = no role yet.
    pub broker_id: i64,
    pub master_epoch: i32,
    pub is_master: bool,
    /// Slaves: the master's main address.
    pub master_addr: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Master,
    Slave,
}

struct Current {
    kind: Option<Kind>,
    master_addr: Option<String>,
    services: Option<(CancellationToken, Vec<JoinHandle<()>>)>,
}

/// Everything a role switch touches; cheap to share behind an `Arc`.
pub struct RoleSwitcher {
    role: Arc<RuntimeRole>,
    store: Arc<MessageStore>,
    epochs: Arc<EpochFile>,
    ha_master: Arc<HaMaster>,
    ha_slave: Arc<HaSlave>,
    registrar: Arc<Registrar>,
    services: RoleServices,
    /// The id the controller gave this broker (its SyncStateSet member id).
    controller_id: AtomicI64,
    current: AsyncMutex<Current>,
    stop: CancellationToken,
}

/// The parts a [`RoleSwitcher`] drives.
pub struct SwitchParts {
    pub role: Arc<RuntimeRole>,
    pub store: Arc<MessageStore>,
    pub epochs: Arc<EpochFile>,
    pub ha_master: Arc<HaMaster>,
    pub ha_slave: Arc<HaSlave>,
    pub registrar: Arc<Registrar>,
    pub services: RoleServices,
    /// The broker's stop: services started by switches end with it.
    pub stop: CancellationToken,
}

impl RoleSwitcher {
    pub fn new(parts: SwitchParts, controller_id: i64) -> Self {
        Self {
            role: parts.role,
            store: parts.store,
            epochs: parts.epochs,
            ha_master: parts.ha_master,
            ha_slave: parts.ha_slave,
            registrar: parts.registrar,
            services: parts.services,
            controller_id: AtomicI64::new(controller_id),
            current: AsyncMutex::new(Current {
                kind: None,
                master_addr: None,
                services: None,
            }),
            stop: parts.stop,
        }
    }

    /// The id the controller assigned this broker (APPLY_BROKER_ID / the identity file):
    /// the id a master puts in its own SyncStateSet.
    pub fn set_controller_broker_id(&self, id: i64) {
        self.controller_id.store(id, Ordering::Release);
    }

    pub fn controller_broker_id(&self) -> i64 {
        self.controller_id.load(Ordering::Acquire)
    }

    /// The master epoch of the last switch (-1 before any).
    pub fn master_epoch(&self) -> i32 {
        self.role.master_epoch()
    }

    pub async fn role(&self) -> RoleSnapshot {
        let current = self.current.lock().await;
        RoleSnapshot {
            broker_id: self.role.broker_id(),
            master_epoch: self.role.master_epoch(),
            is_master: current.kind == Some(Kind::Master),
            master_addr: current.master_addr.clone(),
        }
    }

    /// The epoch history with the last entry ending at the CommitLog's max offset (what
    /// GET_BROKER_EPOCH_CACHE answers).
    pub fn epoch_entries(&self) -> EpochList {
        self.epochs
            .list_ending_at(self.store.commit_log_max_offset())
    }

    pub fn max_offset(&self) -> i64 {
        self.store.commit_log_max_offset()
    }

    /// The SyncStateSet as the controller last accepted it (meaningful on a master).
    pub fn sync_state_set(&self) -> SyncStateSet {
        self.ha_master
            .controlled()
            .map(|c| c.sync.applied())
            .unwrap_or_default()
    }

    /// The SyncStateSet this master wants (`None`: no change wanted). The controller loop
    /// sends it with ALTER_SYNC_STATE_SET and applies the answer with
    /// [`Self::apply_sync_state_set`].
    pub fn wanted_sync_state_set(&self) -> watch::Receiver<Option<BTreeSet<i64>>> {
        match self.ha_master.controlled() {
            Some(c) => c.sync.wanted(),
            None => watch::channel(None).1,
        }
    }

    /// Applies the SyncStateSet the controller accepted (or pushed with a role change
    /// notification); ignored unless its epoch is newer. True when applied.
    pub fn apply_sync_state_set(&self, set: SyncStateSet) -> bool {
        self.ha_master
            .controlled()
            .is_some_and(|c| c.sync.apply(set))
    }

    /// Becomes master of `new_epoch` with the SyncStateSet the controller gave (see the
    /// module docs).
    pub async fn change_to_master(
        &self,
        new_epoch: i32,
        sync_state_set: SyncStateSet,
    ) -> Result<RoleChange, RoleChangeError> {
        let mut current = self.current.lock().await;
        if let Some(skip) = self.skip(&current, new_epoch, Kind::Master) {
            if skip == RoleChange::Unchanged {
                self.apply_sync_state_set(sync_state_set);
            }
            return Ok(skip);
        }
        let last = self.epochs.last_epoch();
        if new_epoch < last {
            return Err(RoleChangeError::EpochBehindFile {
                epoch: new_epoch,
                last,
            });
        }
        tracing::info!(
            event = "ROLE_CHANGE_TO_MASTER",
            epoch = new_epoch,
            "becoming master"
        );
        self.ha_slave.stop_following().await;
        let (store, epochs) = (self.store.clone(), self.epochs.clone());
        let start = blocking(move || {
            // Its log is the set's history now: all of it may be consumed.
            store.set_confirm_offset(i64::MAX);
            store.wait_dispatched(Duration::from_secs(60));
            let start = store.commit_log_max_offset();
            // The same epoch again (this broker restarted within its term): the term goes on.
            if epochs.last_epoch() != new_epoch {
                epochs.append(new_epoch, start)?;
            }
            Ok::<_, RoleChangeError>(start)
        })
        .await??;
        self.store.set_replica(false);
        self.ha_master
            .begin_term(new_epoch, self.controller_broker_id(), sync_state_set);
        self.role.set(MASTER_ID, new_epoch);
        self.registrar.set_master_addr(None);
        self.restart_services(&mut current, Kind::Master).await;
        current.kind = Some(Kind::Master);
        current.master_addr = None;
        drop(current);
        self.register_soon();
        tracing::info!(
            event = "ROLE_CHANGED",
            role = "master",
            epoch = new_epoch,
            start_offset = start,
            "broker is master"
        );
        Ok(RoleChange::Changed)
    }

    /// Becomes a slave (`own_broker_id`) of the master at `master_addr` (main port) and
    /// `master_ha_addr` (HA port), elected with `epoch` (see the module docs).
    pub async fn change_to_slave(
        &self,
        master_addr: &str,
        master_ha_addr: &str,
        epoch: i32,
        own_broker_id: i64,
    ) -> Result<RoleChange, RoleChangeError> {
        let mut current = self.current.lock().await;
        if let Some(skip) = self.skip(&current, epoch, Kind::Slave) {
            return Ok(skip);
        }
        tracing::info!(event = "ROLE_CHANGE_TO_SLAVE", epoch, master = %master_addr, "becoming slave");
        self.role.set(own_broker_id, epoch);
        self.store.set_replica(true);
        self.ha_master.end_term();
        self.set_controller_broker_id(own_broker_id);
        self.registrar.set_master_addr(Some(master_addr.to_owned()));
        self.restart_services(&mut current, Kind::Slave).await;
        self.ha_slave.follow(master_ha_addr, epoch, own_broker_id);
        current.kind = Some(Kind::Slave);
        current.master_addr = Some(master_addr.to_owned());
        drop(current);
        self.register_soon();
        tracing::info!(event = "ROLE_CHANGED", role = "slave", epoch, broker_id = own_broker_id, master = %master_addr, "broker is slave");
        Ok(RoleChange::Changed)
    }

    fn skip(&self, current: &Current, epoch: i32, kind: Kind) -> Option<RoleChange> {
        let known = self.role.master_epoch();
        if epoch < known {
            tracing::info!(
                epoch,
                current = known,
                "role change of an older epoch ignored"
            );
            return Some(RoleChange::Stale { current: known });
        }
        if epoch == known {
            if current.kind != Some(kind) {
                tracing::warn!(
                    epoch,
                    ?kind,
                    "role change to another role in the same epoch ignored"
                );
            }
            return Some(RoleChange::Unchanged);
        }
        None
    }

    async fn restart_services(&self, current: &mut Current, kind: Kind) {
        if let Some((token, tasks)) = current.services.take() {
            token.cancel();
            for task in tasks {
                let _ = task.await;
            }
        }
        let token = self.stop.child_token();
        let tasks = match kind {
            Kind::Master => (self.services.master)(token.clone()),
            Kind::Slave => (self.services.slave)(token.clone()),
        };
        current.services = Some((token, tasks));
    }

    fn register_soon(&self) {
        let registrar = self.registrar.clone();
        tokio::spawn(async move {
            registrar.register_all().await;
        });
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, RoleChangeError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RoleChangeError::Join(e.to_string()))
}
