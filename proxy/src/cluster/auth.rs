//! ACL 2.0 users and their policies as the cluster's brokers hold them: read from a master
//! of the proxy's cluster (AUTH_GET_USER, AUTH_GET_ACL, signed with the inner
//! credentials) and cached for [`SUBJECT_TTL`] ([`RemoteSubjects`]).

use std::sync::Arc;
use std::time::Duration;

use stellmq_acl::auth::{AskBroker, RemoteSubjects, Subject};
use stellmq_remoting::protocol::body::{fastjson, ClusterInfo};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use super::{Cluster, ClusterError};

/// How long a user and its policies are used before they are read again.
pub const SUBJECT_TTL: Duration = Duration::from_secs(10);

pub fn subjects() -> RemoteSubjects {
    RemoteSubjects::new(SUBJECT_TTL)
}

impl AskBroker for Cluster {
    async fn ask(&self, addr: &str, request: RemotingCommand) -> Result<RemotingCommand, String> {
        self.remoting
            .invoke(addr, request, self.timeout)
            .await
            .map_err(|e| e.to_string())
    }
}

impl Cluster {
    /// The user `username` and its policies, `None` when the cluster has no such user.
    pub async fn auth_subject(&self, username: &str) -> Result<Option<Arc<Subject>>, ClusterError> {
        if let Some(known) = self.auth_subjects.cached(username) {
            return Ok(known);
        }
        let masters = self.cluster_masters().await?;
        self.auth_subjects
            .load(self, &masters, username)
            .await
            .map_err(ClusterError::BadAnswer)
    }

    /// The master addresses of the proxy's cluster, from a name server.
    async fn cluster_masters(&self) -> Result<Vec<String>, ClusterError> {
        let mut last_error = None;
        for namesrv in &self.namesrv {
            let request =
                RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, ExtFields::new());
            match self.remoting.invoke(namesrv, request, self.timeout).await {
                Ok(response) if response.code == ResponseCode::SUCCESS.as_i32() => {
                    let info: ClusterInfo = fastjson::decode(&response.body)
                        .map_err(|e| ClusterError::BadAnswer(format!("cluster info: {e}")))?;
                    let names = info
                        .cluster_addr_table
                        .get(&self.cluster_name)
                        .cloned()
                        .unwrap_or_default();
                    return Ok(names
                        .iter()
                        .filter_map(|name| info.broker_addr_table.get(name))
                        .filter_map(|b| b.master_addr().map(str::to_owned))
                        .collect());
                }
                Ok(response) => {
                    last_error = Some(ClusterError::BadAnswer(format!(
                        "cluster info from {namesrv}: {}",
                        response.remark_str()
                    )))
                }
                Err(e) => last_error = Some(e.into()),
            }
        }
        Err(last_error.unwrap_or_else(|| ClusterError::BadAnswer("no name server".into())))
    }
}
