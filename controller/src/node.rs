//! One controller: its Raft node, the replicated state, the leader's liveness table, and the
//! write path (decide on the leader, propose, answer once applied).
//!
//! Writes are serialised by `write_lock` so a decision and its proposal see the same state:
//! lock order is `write_lock`, then the state's read lock (held only to decide).

use std::sync::Arc;
use std::time::Duration;

use openraft::ServerState;
use parking_lot::RwLock;
use stellmq_controller_client::LEADER_ADDRESS_FIELD;
use stellmq_remoting::net::{ProcessorError, RemotingClient};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::config::{ControllerConfig, Peer};
use crate::liveness::Liveness;
use crate::raft_types::Raft;
use crate::state::{Applied, ControllerState, Event};
use crate::state_machine::SharedState;

/// A controller node shared by its processors and background tasks.
pub struct ControllerNode {
    pub raft: Raft,
    /// Signs and checks the Raft RPCs (`controllerRaftAuthSecret`).
    pub peer_auth: Arc<crate::peer_auth::PeerAuth>,
    pub state: SharedState,
    pub config: RwLock<ControllerConfig>,
    pub peers: Vec<Peer>,
    pub self_peer: Peer,
    pub liveness: Liveness,
    pub client: Arc<RemotingClient>,
    pub write_lock: tokio::sync::Mutex<()>,
    /// Wakes the leader's scan for dead masters before its interval (a broker's connection
    /// closed).
    pub scan_now: tokio::sync::Notify,
}

impl ControllerNode {
    /// Whether this controller is the Raft leader now.
    pub fn is_leader(&self) -> bool {
        self.raft.metrics().borrow().state == ServerState::Leader
    }

    /// The leader's peer entry, if one is known.
    pub fn leader(&self) -> Option<Peer> {
        let id = self.raft.metrics().borrow().current_leader?;
        self.peers.iter().find(|p| p.node_id == id).cloned()
    }

    /// CONTROLLER_NOT_LEADER naming the leader (remark and `controllerLeaderAddress`).
    pub fn not_leader(&self) -> ProcessorError {
        let leader = self.leader().map(|p| p.addr);
        let remark = match &leader {
            Some(addr) => format!("The controller is not in leader state, the leader is {addr}"),
            None => "The controller is not in leader state, no leader is elected yet".to_owned(),
        };
        ProcessorError::new(ResponseCode::CONTROLLER_NOT_LEADER, remark)
    }

    /// Turns a NOT_LEADER error into its response with the leader's address in a header.
    pub fn error_response(
        &self,
        request: &RemotingCommand,
        error: ProcessorError,
    ) -> RemotingCommand {
        let mut response = request.response_to(error.code, error.remark);
        if error.code == ResponseCode::CONTROLLER_NOT_LEADER {
            if let Some(leader) = self.leader() {
                response
                    .ext_fields
                    .insert(LEADER_ADDRESS_FIELD, leader.addr);
            }
        }
        response
    }

    /// Fails unless this controller leads and its state has applied everything committed
    /// before now (a linearizable read).
    pub async fn read_barrier(&self) -> Result<(), ProcessorError> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        match tokio::time::timeout(Duration::from_secs(3), self.raft.ensure_linearizable()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(self.not_leader()),
            Err(_) => Err(ProcessorError::new(
                ResponseCode::CONTROLLER_JRAFT_INTERNAL_ERROR,
                "no quorum confirmed the leadership within 3s",
            )),
        }
    }

    /// A snapshot of the replicated state's data (clone under the read lock).
    pub fn with_state<T>(&self, read: impl FnOnce(&ControllerState) -> T) -> T {
        read(&self.state.read())
    }

    /// Replicates `event` and returns what applying it answered.
    pub async fn propose(&self, event: Event) -> Result<Applied, ProcessorError> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        match tokio::time::timeout(Duration::from_secs(5), self.raft.client_write(event)).await {
            Ok(Ok(response)) => Ok(response.data),
            Ok(Err(e)) if e.forward_to_leader::<openraft::BasicNode>().is_some() => {
                Err(self.not_leader())
            }
            Ok(Err(e)) => Err(ProcessorError::new(
                ResponseCode::CONTROLLER_JRAFT_INTERNAL_ERROR,
                e.to_string(),
            )),
            Err(_) => Err(ProcessorError::new(
                ResponseCode::CONTROLLER_JRAFT_INTERNAL_ERROR,
                "the event was not committed within 5s",
            )),
        }
    }

    /// Like [`Self::propose`], but a refusal by the state machine is an error.
    pub async fn propose_ok(&self, event: Event) -> Result<(), ProcessorError> {
        let applied = self.propose(event).await?;
        if applied.is_ok() {
            return Ok(());
        }
        let code = ResponseCode::from_i32(applied.code).unwrap_or(ResponseCode::SYSTEM_ERROR);
        Err(ProcessorError::new(code, applied.remark))
    }
}
