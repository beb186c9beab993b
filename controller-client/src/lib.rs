//! A client of a RocketMQ 5 controller group: a `;`-separated controller list, requests sent
//! to the Raft leader, the leader re-discovered when a controller answers
//! CONTROLLER_NOT_LEADER or cannot be reached.
//!
//! Leader discovery asks each controller CONTROLLER_GET_METADATA_INFO: the leader answers
//! `isLeader=true`; a follower names the leader in `controllerLeaderAddress`.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use thiserror::Error;

use stellmq_remoting::net::{RemotingClient, RemotingError};
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::{BrokerReplicasInfo, SyncStateSet};
use stellmq_remoting::protocol::error::{BodyError, HeaderError};
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

/// How many times a request is sent before giving up (a Raft election takes 1-2 s).
const MAX_ATTEMPTS: usize = 12;

/// The pause before retrying where no leader is known yet.
const RETRY_PAUSE: Duration = Duration::from_millis(300);

/// The `extFields` key a non-leader puts the leader's address under in CONTROLLER_NOT_LEADER.
pub const LEADER_ADDRESS_FIELD: &str = "controllerLeaderAddress";

#[derive(Debug, Error)]
pub enum ControllerClientError {
    #[error("the controller address list '{0}' holds no address")]
    NoAddresses(String),
    #[error("no controller of [{0}] knows a leader")]
    NoLeader(String),
    #[error("{addr} answered {code} ({}): {remark}", ResponseCode::from_i32(*.code).map_or("UNKNOWN", |c| c.name()))]
    Remote {
        addr: String,
        code: i32,
        remark: String,
    },
    #[error(transparent)]
    Remoting(#[from] RemotingError),
    #[error("bad response header: {0}")]
    Header(#[from] HeaderError),
    #[error("bad response body: {0}")]
    Body(#[from] BodyError),
}

impl ControllerClientError {
    /// The controller's response code, for [`ControllerClientError::Remote`].
    pub fn remote_code(&self) -> Option<i32> {
        match self {
            ControllerClientError::Remote { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// A response of the leader with its address.
#[derive(Debug)]
pub struct ControllerResponse {
    pub addr: String,
    pub command: RemotingCommand,
}

impl ControllerResponse {
    /// The response header, typed.
    pub fn header<H: CommandHeader>(&self) -> Result<H, HeaderError> {
        H::from_ext_fields(&self.command.ext_fields)
    }

    /// The response code, typed (`None` for a code this build does not know).
    pub fn code(&self) -> Option<ResponseCode> {
        self.command.response_code()
    }

    fn ok(self) -> Result<Self, ControllerClientError> {
        if self.command.code == ResponseCode::SUCCESS.as_i32() {
            Ok(self)
        } else {
            Err(ControllerClientError::Remote {
                code: self.command.code,
                remark: self.command.remark_str().to_owned(),
                addr: self.addr,
            })
        }
    }
}

/// Splits a `;`-separated (or `,`-separated) controller list.
pub fn parse_controller_addrs(list: &str) -> Vec<String> {
    list.split([';', ','])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Requests to a controller group's leader.
pub struct ControllerClient {
    client: Arc<RemotingClient>,
    addrs: Vec<String>,
    leader: Mutex<Option<String>>,
    timeout: Duration,
}

impl ControllerClient {
    /// A client of the controllers in `addr_list` (`host:port;host:port`), sending over
    /// `client`'s connections with `timeout` per attempt.
    pub fn new(
        client: Arc<RemotingClient>,
        addr_list: &str,
        timeout: Duration,
    ) -> Result<Self, ControllerClientError> {
        let addrs = parse_controller_addrs(addr_list);
        if addrs.is_empty() {
            return Err(ControllerClientError::NoAddresses(addr_list.to_owned()));
        }
        Ok(Self {
            client,
            addrs,
            leader: Mutex::new(None),
            timeout,
        })
    }

    /// The controller addresses this client knows.
    pub fn addrs(&self) -> &[String] {
        &self.addrs
    }

    /// The leader last seen, if any.
    pub fn cached_leader(&self) -> Option<String> {
        self.leader.lock().clone()
    }

    /// CONTROLLER_GET_METADATA_INFO of one controller.
    pub async fn metadata_of(
        &self,
        addr: &str,
    ) -> Result<GetMetaDataResponseHeader, ControllerClientError> {
        let request =
            RemotingCommand::request(RequestCode::CONTROLLER_GET_METADATA_INFO, ExtFields::new());
        let response = self.client.invoke(addr, request, self.timeout).await?;
        let response = ControllerResponse {
            addr: addr.to_owned(),
            command: response,
        }
        .ok()?;
        Ok(response.header()?)
    }

    /// Finds the leader by asking each controller in turn.
    pub async fn discover_leader(&self) -> Result<String, ControllerClientError> {
        for addr in &self.addrs {
            match self.metadata_of(addr).await {
                Ok(meta) if meta.is_leader => return Ok(self.remember(addr.clone())),
                Ok(meta) => {
                    if let Some(leader) = meta.controller_leader_address.filter(|a| !a.is_empty()) {
                        return Ok(self.remember(leader));
                    }
                }
                Err(e) => {
                    tracing::debug!(controller = %addr, error = %e, "controller metadata unavailable")
                }
            }
        }
        Err(ControllerClientError::NoLeader(self.addrs.join(";")))
    }

    fn remember(&self, leader: String) -> String {
        *self.leader.lock() = Some(leader.clone());
        leader
    }

    async fn leader(&self) -> Result<String, ControllerClientError> {
        match self.cached_leader() {
            Some(leader) => Ok(leader),
            None => self.discover_leader().await,
        }
    }

    /// Sends `request` to the leader, following leader changes; any response code but
    /// CONTROLLER_NOT_LEADER is returned as is.
    pub async fn invoke(
        &self,
        request: RemotingCommand,
    ) -> Result<ControllerResponse, ControllerClientError> {
        let mut last_error = None;
        for _ in 0..MAX_ATTEMPTS {
            let addr = match self.leader().await {
                Ok(addr) => addr,
                Err(e) => {
                    last_error = Some(e);
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
            };
            match self
                .client
                .invoke(&addr, request.clone(), self.timeout)
                .await
            {
                Ok(response) if response.code == ResponseCode::CONTROLLER_NOT_LEADER.as_i32() => {
                    let named = response
                        .ext_fields
                        .get_non_empty(LEADER_ADDRESS_FIELD)
                        .filter(|named| *named != addr)
                        .map(str::to_owned);
                    if named.is_none() {
                        tokio::time::sleep(RETRY_PAUSE).await;
                    }
                    *self.leader.lock() = named;
                    last_error = Some(ControllerClientError::Remote {
                        addr,
                        code: response.code,
                        remark: response.remark_str().to_owned(),
                    });
                }
                Ok(command) => return Ok(ControllerResponse { addr, command }),
                Err(e) => {
                    *self.leader.lock() = None;
                    last_error = Some(e.into());
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
        Err(last_error.unwrap_or_else(|| ControllerClientError::NoLeader(self.addrs.join(";"))))
    }

    /// Like [`Self::invoke`], but a response code other than SUCCESS is an error.
    pub async fn invoke_ok(
        &self,
        request: RemotingCommand,
    ) -> Result<ControllerResponse, ControllerClientError> {
        self.invoke(request).await?.ok()
    }

    async fn call<H: CommandHeader>(
        &self,
        code: RequestCode,
        header: &H,
    ) -> Result<ControllerResponse, ControllerClientError> {
        self.invoke_ok(RemotingCommand::request(code, header.to_ext_fields()))
            .await
    }

    /// CONTROLLER_GET_NEXT_BROKER_ID.
    pub async fn get_next_broker_id(
        &self,
        cluster_name: &str,
        broker_name: &str,
    ) -> Result<i64, ControllerClientError> {
        let header = GetNextBrokerIdRequestHeader {
            cluster_name: Some(cluster_name.to_owned()),
            broker_name: broker_name.to_owned(),
        };
        let response = self
            .call(RequestCode::CONTROLLER_GET_NEXT_BROKER_ID, &header)
            .await?;
        let header: GetNextBrokerIdResponseHeader = response.header()?;
        Ok(header.next_broker_id.unwrap_or(1))
    }

    /// CONTROLLER_APPLY_BROKER_ID.
    pub async fn apply_broker_id(
        &self,
        header: &ApplyBrokerIdRequestHeader,
    ) -> Result<(), ControllerClientError> {
        self.call(RequestCode::CONTROLLER_APPLY_BROKER_ID, header)
            .await
            .map(drop)
    }

    /// CONTROLLER_REGISTER_BROKER: the master (if alive) and the SyncStateSet.
    pub async fn register_broker(
        &self,
        header: &RegisterBrokerToControllerRequestHeader,
    ) -> Result<(RegisterBrokerToControllerResponseHeader, SyncStateSet), ControllerClientError>
    {
        let response = self
            .call(RequestCode::CONTROLLER_REGISTER_BROKER, header)
            .await?;
        let set = fastjson::decode(&response.command.body)?;
        Ok((response.header()?, set))
    }

    /// CONTROLLER_ELECT_MASTER; returned whatever its code (CONTROLLER_MASTER_STILL_EXIST
    /// carries the current master).
    pub async fn elect_master(
        &self,
        header: &ElectMasterRequestHeader,
    ) -> Result<ControllerResponse, ControllerClientError> {
        self.invoke(RemotingCommand::request(
            RequestCode::CONTROLLER_ELECT_MASTER,
            header.to_ext_fields(),
        ))
        .await
    }

    /// CONTROLLER_ALTER_SYNC_STATE_SET: the new SyncStateSet epoch.
    pub async fn alter_sync_state_set(
        &self,
        header: &AlterSyncStateSetRequestHeader,
        set: &SyncStateSet,
    ) -> Result<i32, ControllerClientError> {
        let request = RemotingCommand::request(
            RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
            header.to_ext_fields(),
        )
        .with_body(fastjson::encode(set));
        let response = self.invoke_ok(request).await?;
        let header: AlterSyncStateSetResponseHeader = response.header()?;
        Ok(header.new_sync_state_set_epoch)
    }

    /// CONTROLLER_GET_REPLICA_INFO: the master and the SyncStateSet.
    pub async fn get_replica_info(
        &self,
        broker_name: &str,
    ) -> Result<(GetReplicaInfoResponseHeader, SyncStateSet), ControllerClientError> {
        let header = GetReplicaInfoRequestHeader {
            broker_name: broker_name.to_owned(),
        };
        let response = self
            .call(RequestCode::CONTROLLER_GET_REPLICA_INFO, &header)
            .await?;
        let set = fastjson::decode(&response.command.body)?;
        Ok((response.header()?, set))
    }

    /// CONTROLLER_GET_SYNC_STATE_DATA for `broker_names`.
    pub async fn get_sync_state_data(
        &self,
        broker_names: &[String],
    ) -> Result<BrokerReplicasInfo, ControllerClientError> {
        let request = RemotingCommand::request(
            RequestCode::CONTROLLER_GET_SYNC_STATE_DATA,
            ExtFields::new(),
        )
        .with_body(fastjson::encode(&broker_names));
        let response = self.invoke_ok(request).await?;
        Ok(fastjson::decode(&response.command.body)?)
    }

    /// BROKER_HEARTBEAT to the leader.
    pub async fn heartbeat(
        &self,
        header: &BrokerHeartbeatRequestHeader,
    ) -> Result<(), ControllerClientError> {
        self.call(RequestCode::BROKER_HEARTBEAT, header)
            .await
            .map(drop)
    }

    /// CLEAN_BROKER_DATA.
    pub async fn clean_broker_data(
        &self,
        header: &CleanControllerBrokerDataRequestHeader,
    ) -> Result<(), ControllerClientError> {
        self.call(RequestCode::CLEAN_BROKER_DATA, header)
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_lists_split_on_semicolons() {
        assert_eq!(
            parse_controller_addrs(" 127.0.0.1:9878;127.0.0.1:9868 ;"),
            vec!["127.0.0.1:9878".to_owned(), "127.0.0.1:9868".to_owned()]
        );
        assert!(parse_controller_addrs(" ; ").is_empty());
    }
}
