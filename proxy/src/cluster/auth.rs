//! ACL 2.0 users and their policies as the cluster's brokers hold them: read from a master
//! of the proxy's cluster (AUTH_GET_USER, AUTH_GET_ACL, signed with the inner
//! credentials) and cached for [`SUBJECT_TTL`], unknown users too, so a stream of made-up
//! names costs the brokers one lookup each per TTL at most.

use std::sync::Arc;
use std::time::Duration;

use stellmq_acl::auth::info::{AclInfoExt, UserInfoExt};
use stellmq_acl::auth::{Acl, User};
use stellmq_remoting::protocol::body::auth::{AclInfo, UserInfo};
use stellmq_remoting::protocol::body::{fastjson, ClusterInfo};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use super::{Cluster, ClusterError};

/// How long a user and its policies are used before they are read again.
pub const SUBJECT_TTL: Duration = Duration::from_secs(10);

/// A user and its policies.
#[derive(Debug)]
pub struct Subject {
    pub user: User,
    pub acl: Option<Acl>,
}

impl Cluster {
    /// The user `username` and its policies, `None` when the cluster has no such user.
    pub async fn auth_subject(&self, username: &str) -> Result<Option<Arc<Subject>>, ClusterError> {
        if let Some(known) = self.auth_subjects.get(username) {
            return Ok(known);
        }
        let user: Option<UserInfo> = self
            .ask_masters(RequestCode::AUTH_GET_USER, "username", username)
            .await?;
        let subject = match user.and_then(|u| u.to_new_user(username).ok()) {
            None => None,
            Some(user) => {
                let subject = stellmq_acl::auth::model::user_subject(username);
                let acl: Option<AclInfo> = self
                    .ask_masters(RequestCode::AUTH_GET_ACL, "subject", &subject)
                    .await?;
                let acl = acl.and_then(|a| a.to_acl(&subject).ok());
                Some(Arc::new(Subject { user, acl }))
            }
        };
        self.auth_subjects.put(username, subject.clone());
        Ok(subject)
    }

    /// Asks the masters of the proxy's cluster in turn; the first that answers decides.
    async fn ask_masters<T: serde::de::DeserializeOwned>(
        &self,
        code: RequestCode,
        field: &str,
        value: &str,
    ) -> Result<Option<T>, ClusterError> {
        let mut last_error = None;
        for addr in self.cluster_masters().await? {
            let mut fields = ExtFields::new();
            fields.insert(field, value);
            let request = RemotingCommand::request(code, fields);
            match self.remoting.invoke(&addr, request, self.timeout).await {
                Ok(response) if response.code == ResponseCode::SUCCESS.as_i32() => {
                    if response.body.is_empty() {
                        return Ok(None);
                    }
                    return fastjson::decode(&response.body)
                        .map(Some)
                        .map_err(|e| ClusterError::BadAnswer(format!("{code:?}: {e}")));
                }
                // NO_PERMISSION for an unknown subject's ACL: nothing to use.
                Ok(response)
                    if response.code == ResponseCode::NO_PERMISSION.as_i32()
                        && code == RequestCode::AUTH_GET_ACL =>
                {
                    return Ok(None)
                }
                Ok(response) => {
                    last_error = Some(ClusterError::Remoting(
                        stellmq_remoting::net::RemotingError::Remote {
                            addr: addr.clone(),
                            code: response.code,
                            remark: response.remark_str().to_owned(),
                        },
                    ))
                }
                Err(e) => last_error = Some(e.into()),
            }
        }
        Err(last_error.unwrap_or_else(|| {
            ClusterError::BadAnswer(format!("no master broker in cluster {}", self.cluster_name))
        }))
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
