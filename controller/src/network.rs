//! Raft RPCs to the other controllers over their remoting port: private StellMQ request
//! codes (42001-42003) with JSON bodies; the answer's body is the JSON of
//! `Result<response, RaftError>`.

use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use stellmq_remoting::net::{RemotingClient, RemotingError};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::peer_auth::PeerAuth;
use crate::raft_types::{NodeId, TypeConfig};

/// Largest Raft RPC body accepted or sent (a snapshot chunk is far smaller).
pub const MAX_RAFT_BODY: usize = 8 * 1024 * 1024;

/// Creates one [`PeerClient`] per target.
#[derive(Clone)]
pub struct Network {
    client: Arc<RemotingClient>,
    /// This controller's node id (signed into every RPC).
    self_id: NodeId,
    auth: Arc<PeerAuth>,
}

impl Network {
    pub fn new(client: Arc<RemotingClient>, self_id: NodeId, auth: Arc<PeerAuth>) -> Self {
        Self {
            client,
            self_id,
            auth,
        }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerClient {
        PeerClient {
            client: self.client.clone(),
            target,
            addr: node.addr.clone(),
            self_id: self.self_id,
            auth: self.auth.clone(),
        }
    }
}

/// Sends Raft RPCs to one controller.
pub struct PeerClient {
    client: Arc<RemotingClient>,
    target: NodeId,
    addr: String,
    self_id: NodeId,
    auth: Arc<PeerAuth>,
}

type RpcResult<T, E> = Result<T, RPCError<NodeId, BasicNode, E>>;

impl PeerClient {
    async fn call<Req, Resp, E>(
        &self,
        code: RequestCode,
        rpc: &Req,
        option: &RPCOption,
    ) -> RpcResult<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let body = serde_json::to_vec(rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let fields = self
            .auth
            .sign(code, self.self_id, crate::peer_auth::now_ms(), &body);
        let request = RemotingCommand::request(code, fields).with_body(body);
        let timeout = option.hard_ttl().max(Duration::from_millis(100));
        let response = self
            .client
            .invoke(&self.addr, request, timeout)
            .await
            .map_err(|e| unreachable_or_network(&e))?;
        if response.code != ResponseCode::SUCCESS.as_i32() {
            let e = std::io::Error::other(format!(
                "{} answered {}: {}",
                self.addr,
                response.code,
                response.remark_str()
            ));
            return Err(RPCError::Network(NetworkError::new(&e)));
        }
        let result: Result<Resp, E> = serde_json::from_slice(&response.body)
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| {
            RPCError::RemoteError(RemoteError::new_with_node(
                self.target,
                BasicNode::new(&self.addr),
                e,
            ))
        })
    }
}

fn unreachable_or_network<E: std::error::Error>(
    e: &RemotingError,
) -> RPCError<NodeId, BasicNode, E> {
    match e {
        RemotingError::Connect { .. }
        | RemotingError::ConnectTimeout { .. }
        | RemotingError::ConnectionClosed { .. } => RPCError::Unreachable(Unreachable::new(e)),
        _ => RPCError::Network(NetworkError::new(e)),
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>, RaftError<NodeId>> {
        self.call(RequestCode::STELLMQ_CONTROLLER_RAFT_APPEND, &rpc, &option)
            .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>> {
        self.call(RequestCode::STELLMQ_CONTROLLER_RAFT_SNAPSHOT, &rpc, &option)
            .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>, RaftError<NodeId>> {
        self.call(RequestCode::STELLMQ_CONTROLLER_RAFT_VOTE, &rpc, &option)
            .await
    }
}
