//! The controller client loop of a broker in controller mode (RocketMQ 5's
//! `ReplicasManager`): it obtains the broker's id, registers with the controllers, sends
//! heartbeats, follows the controllers' view of its broker set and switches the broker's
//! role through the [`RoleSwitcher`].
//!
//! * Start: get (or apply for) the broker id ([`super::register`]), register the address,
//!   send a first heartbeat; then take the role the controller names, or, when the set has no
//!   master, ask the controller to elect one (CONTROLLER_ELECT_MASTER). Retried every
//!   [`RETRY`] until it works.
//! * Every `brokerHeartbeatInterval`: BROKER_HEARTBEAT to every controller (so a new leader
//!   already knows who is alive) with the last epoch, the CommitLog max offset and
//!   `brokerElectionPriority`.
//! * Every `syncBrokerMetadataPeriod`: CONTROLLER_GET_REPLICA_INFO. A newer master epoch
//!   switches the role; no master triggers an election; the same epoch on a master updates the
//!   SyncStateSet. A controller that forgot the broker (CONTROLLER_BROKER_METADATA_NOT_EXIST,
//!   e.g. after cleanBrokerMetadata) gets the registration again.
//! * NOTIFY_BROKER_ROLE_CHANGED from the controller is applied at once.
//! * A master reports the SyncStateSet it wants (CONTROLLER_ALTER_SYNC_STATE_SET) and applies
//!   the set the controller accepted, checked every [`SYNC_STATE_CHECK`].
//!
//! A slave needs its new master's HA address, which the controller does not know: it reads
//! `brokerIP2` and `haListenPort` from the master's GET_BROKER_CONFIG.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_controller_client::ControllerClient;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::ElectMasterResponseBody;
use stellmq_remoting::protocol::body::SyncStateSet as SyncStateSetBody;
use stellmq_remoting::protocol::headers::{
    AlterSyncStateSetRequestHeader, BrokerHeartbeatRequestHeader, CommandHeader,
    ElectMasterRequestHeader, ElectMasterResponseHeader,
};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::metadata::IdentityFiles;
use super::register::{obtain_broker_id, register_address, Applicant, RegisterError};
use super::RoleSwitcher;
use crate::config::BrokerConfig;
use crate::ha::sync_state::SyncStateSet;

/// Between failed start attempts.
pub const RETRY: Duration = Duration::from_secs(2);
/// How often a master compares the SyncStateSet it wants with the accepted one.
pub const SYNC_STATE_CHECK: Duration = Duration::from_millis(500);
/// Role notifications waiting to be applied; more are dropped (the periodic sync catches up).
const NOTICE_QUEUE: usize = 16;

/// A master as the controller names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterView {
    pub master_id: i64,
    pub master_addr: String,
    pub master_epoch: i32,
    pub sync_state_set: BTreeSet<i64>,
    pub sync_state_set_epoch: i32,
}

/// NOTIFY_BROKER_ROLE_CHANGED as received.
pub type RoleNotice = MasterView;

/// The sending half the NOTIFY_BROKER_ROLE_CHANGED processor uses.
pub type NoticeSender = mpsc::Sender<RoleNotice>;

/// Settings of the loop, from the broker config.
#[derive(Debug, Clone)]
pub struct LoopSettings {
    pub controller_addr: String,
    pub heartbeat_interval: Duration,
    pub heartbeat_timeout_ms: i64,
    pub sync_period: Duration,
    pub election_priority: i32,
    pub request_timeout: Duration,
}

impl LoopSettings {
    pub fn from_config(bc: &BrokerConfig) -> Self {
        Self {
            controller_addr: bc.controller_addr.clone(),
            heartbeat_interval: Duration::from_millis(bc.broker_heartbeat_interval.max(100)),
            heartbeat_timeout_ms: bc.controller_heart_beat_timeout_mills as i64,
            sync_period: Duration::from_millis(bc.sync_broker_metadata_period.max(100)),
            election_priority: bc.broker_election_priority,
            request_timeout: Duration::from_secs(3),
        }
    }
}

pub struct ReplicasManager {
    controllers: ControllerClient,
    brokers: Arc<RemotingClient>,
    roles: Arc<RoleSwitcher>,
    files: Arc<IdentityFiles>,
    me: Applicant,
    settings: LoopSettings,
    /// The id the controller granted; `None` until registered.
    broker_id: Mutex<Option<i64>>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error(transparent)]
    Register(#[from] RegisterError),
    #[error("controller: {0}")]
    Controller(#[from] stellmq_controller_client::ControllerClientError),
    #[error("the broker set has no master and none could be elected: {0}")]
    NoMaster(String),
    #[error("cannot find the HA address of master {master}: {reason}")]
    MasterHa { master: String, reason: String },
    #[error("role change: {0}")]
    Role(#[from] super::RoleChangeError),
}

impl ReplicasManager {
    pub fn new(
        client: ClientConfig,
        roles: Arc<RoleSwitcher>,
        files: IdentityFiles,
        me: Applicant,
        settings: LoopSettings,
    ) -> Result<Arc<Self>, LoopError> {
        let brokers = Arc::new(RemotingClient::new(client));
        let controllers = ControllerClient::new(
            brokers.clone(),
            &settings.controller_addr,
            settings.request_timeout,
        )?;
        Ok(Arc::new(Self {
            controllers,
            brokers,
            roles,
            files: Arc::new(files),
            me,
            settings,
            broker_id: Mutex::new(None),
        }))
    }

    /// Runs until `stop`; `notices` brings NOTIFY_BROKER_ROLE_CHANGED.
    pub async fn run(
        self: Arc<Self>,
        mut notices: mpsc::Receiver<RoleNotice>,
        stop: CancellationToken,
    ) {
        let started = tokio::select! {
            _ = stop.cancelled() => return,
            id = self.start() => id,
        };
        tracing::info!(broker_id = started, "controller mode: registered");
        let mut heartbeat = tokio::time::interval(self.settings.heartbeat_interval);
        let mut sync = tokio::time::interval(self.settings.sync_period);
        let mut check = tokio::time::interval(SYNC_STATE_CHECK);
        for timer in [&mut heartbeat, &mut sync, &mut check] {
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        }
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = heartbeat.tick() => self.heartbeat(started).await,
                _ = sync.tick() => self.sync_metadata(started).await,
                _ = check.tick() => self.report_sync_state_set(started).await,
                Some(notice) = notices.recv() => {
                    if let Err(e) = self.apply(started, &notice).await {
                        tracing::warn!(error = %e, "cannot apply the controller's role notification");
                    }
                }
            }
        }
    }

    /// Registers and takes a role; retried until it works. Returns the broker id.
    async fn start(&self) -> i64 {
        loop {
            match self.try_start().await {
                Ok(id) => return id,
                Err(e) => {
                    tracing::warn!(error = %e, "controller mode: not registered yet; retrying");
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }

    async fn try_start(&self) -> Result<i64, LoopError> {
        let known = *self.broker_id.lock();
        let id = if let Some(id) = known {
            id
        } else {
            let id = obtain_broker_id(&self.controllers, &self.files, &self.me).await?;
            self.roles.set_controller_broker_id(id);
            *self.broker_id.lock() = Some(id);
            id
        };
        let (header, set) = register_address(&self.controllers, &self.me, id).await?;
        self.heartbeat(id).await;
        let named = match (header.master_broker_id, header.master_address) {
            (Some(master_id), Some(master_addr)) if master_id > 0 && !master_addr.is_empty() => {
                Some(MasterView {
                    master_id,
                    master_addr,
                    master_epoch: header.master_epoch.unwrap_or(0),
                    sync_state_set: set.sync_state_set,
                    sync_state_set_epoch: header
                        .sync_state_set_epoch
                        .unwrap_or(set.sync_state_set_epoch),
                })
            }
            _ => None,
        };
        let view = match named {
            Some(view) => view,
            None => self.elect(id).await?,
        };
        self.apply(id, &view).await?;
        Ok(id)
    }

    /// CONTROLLER_ELECT_MASTER on this broker's behalf (the controller chooses).
    async fn elect(&self, id: i64) -> Result<MasterView, LoopError> {
        let header = ElectMasterRequestHeader {
            cluster_name: Some(self.me.cluster_name.clone()),
            broker_name: self.me.broker_name.clone(),
            broker_id: Some(id),
            designate_elect: Some(false),
            invoke_time: Some(now_ms()),
        };
        let response = self.controllers.elect_master(&header).await?;
        let code = response.command.code;
        let ok = code == ResponseCode::SUCCESS.as_i32()
            || code == ResponseCode::CONTROLLER_MASTER_STILL_EXIST.as_i32();
        if !ok {
            return Err(LoopError::NoMaster(format!(
                "code {code}: {}",
                response.command.remark_str()
            )));
        }
        let header: ElectMasterResponseHeader = response
            .header()
            .map_err(|e| LoopError::NoMaster(e.to_string()))?;
        let body: ElectMasterResponseBody = if response.command.body.is_empty() {
            ElectMasterResponseBody::default()
        } else {
            fastjson::decode(&response.command.body)
                .map_err(|e| LoopError::NoMaster(e.to_string()))?
        };
        match (header.master_broker_id, header.master_address) {
            (Some(master_id), Some(master_addr)) if master_id > 0 && !master_addr.is_empty() => {
                Ok(MasterView {
                    master_id,
                    master_addr,
                    master_epoch: header.master_epoch.unwrap_or(0),
                    sync_state_set: body.sync_state_set,
                    sync_state_set_epoch: header.sync_state_set_epoch.unwrap_or(0),
                })
            }
            _ => Err(LoopError::NoMaster(
                response.command.remark_str().to_owned(),
            )),
        }
    }

    /// Switches to the role `view` gives this broker.
    async fn apply(&self, id: i64, view: &MasterView) -> Result<(), LoopError> {
        let set = SyncStateSet {
            members: view.sync_state_set.clone(),
            epoch: view.sync_state_set_epoch,
        };
        if view.master_id == id {
            self.roles.change_to_master(view.master_epoch, set).await?;
        } else {
            if view.master_epoch == self.roles.master_epoch() {
                return Ok(());
            }
            let ha = self.master_ha_addr(&view.master_addr).await?;
            self.roles
                .change_to_slave(&view.master_addr, &ha, view.master_epoch, id)
                .await?;
        }
        Ok(())
    }

    /// `brokerIP2:haListenPort` of the broker at `master_addr`.
    async fn master_ha_addr(&self, master_addr: &str) -> Result<String, LoopError> {
        let fail = |reason: String| LoopError::MasterHa {
            master: master_addr.to_owned(),
            reason,
        };
        let request = RemotingCommand::request(RequestCode::GET_BROKER_CONFIG, ExtFields::new());
        let response = self
            .brokers
            .invoke(master_addr, request, self.settings.request_timeout)
            .await
            .map_err(|e| fail(e.to_string()))?;
        if response.code != ResponseCode::SUCCESS.as_i32() {
            return Err(fail(response.remark_str().to_owned()));
        }
        let text = std::str::from_utf8(&response.body).map_err(|e| fail(e.to_string()))?;
        let props = stellmq_config::parse_properties(text);
        let port = props
            .get("haListenPort")
            .and_then(|p| p.trim().parse::<u16>().ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| fail("no haListenPort in its config".into()))?;
        let host = props
            .get("brokerIP2")
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .or_else(|| master_addr.rsplit_once(':').map(|(h, _)| h.to_owned()))
            .ok_or_else(|| fail("no brokerIP2 in its config".into()))?;
        Ok(format!("{host}:{port}"))
    }

    async fn heartbeat(&self, id: i64) {
        let max_offset = self.roles.max_offset();
        let header = BrokerHeartbeatRequestHeader {
            cluster_name: self.me.cluster_name.clone(),
            broker_addr: self.me.address.clone(),
            broker_name: self.me.broker_name.clone(),
            broker_id: Some(id),
            epoch: Some(self.roles.epoch_entries().last_epoch().max(0)),
            max_offset: Some(max_offset),
            confirm_offset: Some(max_offset),
            heartbeat_timeout_mills: Some(self.settings.heartbeat_timeout_ms),
            election_priority: Some(self.settings.election_priority),
        };
        // To every controller, as RocketMQ's brokers do: a new leader must already know who is
        // alive. Each is its own task, so a hung controller never delays the loop.
        let request =
            RemotingCommand::request(RequestCode::BROKER_HEARTBEAT, header.to_ext_fields());
        let timeout = self.settings.heartbeat_interval.max(Duration::from_secs(1));
        for addr in self.controllers.addrs() {
            let (brokers, addr, request) = (self.brokers.clone(), addr.clone(), request.clone());
            tokio::spawn(async move {
                match brokers.invoke(&addr, request, timeout).await {
                    Ok(r) if r.code == ResponseCode::SUCCESS.as_i32() => {}
                    Ok(r) => {
                        tracing::debug!(controller = %addr, code = r.code, remark = %r.remark_str(), "heartbeat refused")
                    }
                    Err(e) => tracing::debug!(controller = %addr, error = %e, "heartbeat failed"),
                }
            });
        }
    }

    async fn sync_metadata(&self, id: i64) {
        match self
            .controllers
            .get_replica_info(&self.me.broker_name)
            .await
        {
            Ok((header, set)) => {
                let named = match (header.master_broker_id, header.master_address) {
                    (Some(m), Some(a)) if m > 0 && !a.is_empty() => Some(MasterView {
                        master_id: m,
                        master_addr: a,
                        master_epoch: header.master_epoch.unwrap_or(0),
                        sync_state_set: set.sync_state_set,
                        sync_state_set_epoch: set.sync_state_set_epoch,
                    }),
                    _ => None,
                };
                let result = match named {
                    Some(view) if view.master_epoch > self.roles.master_epoch() => {
                        self.apply(id, &view).await
                    }
                    Some(view) if view.master_id == id => {
                        self.roles.apply_sync_state_set(SyncStateSet {
                            members: view.sync_state_set,
                            epoch: view.sync_state_set_epoch,
                        });
                        Ok(())
                    }
                    Some(_) => Ok(()),
                    None => match self.elect(id).await {
                        Ok(view) => self.apply(id, &view).await,
                        Err(e) => Err(e),
                    },
                };
                if let Err(e) = result {
                    tracing::warn!(error = %e, "controller mode: cannot follow the controller's view");
                }
            }
            Err(e)
                if e.remote_code()
                    == Some(ResponseCode::CONTROLLER_BROKER_METADATA_NOT_EXIST.as_i32()) =>
            {
                tracing::warn!("the controller does not know this broker; registering again");
                if let Err(e) = register_address(&self.controllers, &self.me, id).await {
                    tracing::warn!(error = %e, "registration failed");
                }
            }
            Err(e) => tracing::debug!(error = %e, "replica info unavailable"),
        }
    }

    /// A master asks the controller for the SyncStateSet its replicas' progress allows.
    async fn report_sync_state_set(&self, id: i64) {
        let wanted = self.roles.wanted_sync_state_set().borrow().clone();
        let Some(mut wanted) = wanted else { return };
        wanted.insert(id);
        let applied = self.roles.sync_state_set();
        if applied.members == wanted || !self.roles.role().await.is_master {
            return;
        }
        let header = AlterSyncStateSetRequestHeader {
            broker_name: self.me.broker_name.clone(),
            master_broker_id: id,
            master_epoch: self.roles.master_epoch(),
            invoke_time: Some(now_ms()),
        };
        let body = SyncStateSetBody {
            sync_state_set: wanted.clone(),
            sync_state_set_epoch: applied.epoch,
        };
        match self.controllers.alter_sync_state_set(&header, &body).await {
            Ok(epoch) => {
                tracing::info!(set = ?wanted, epoch, "the controller accepted the SyncStateSet");
                self.roles.apply_sync_state_set(SyncStateSet {
                    members: wanted,
                    epoch,
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, set = ?wanted, "the controller refused the SyncStateSet")
            }
        }
    }
}

/// A channel for NOTIFY_BROKER_ROLE_CHANGED.
pub fn notice_channel() -> (NoticeSender, mpsc::Receiver<RoleNotice>) {
    mpsc::channel(NOTICE_QUEUE)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
