//! The name server's side of ACL 2.0: with authenticationEnabled or authorizationEnabled,
//! its changes (topic and broker-permission edits, KV config, configuration updates) must
//! be signed by an enabled super user; route queries and broker registration stay open, as
//! with the plain ACL. The name server serves every cluster and keeps no users of its own:
//! `initAuthenticationUser` and `innerClientAuthenticationCredentials` are super users
//! here, and other users are read from the registered masters (signed with the inner
//! credentials) and cached for 10 s.

use std::sync::Arc;
use std::time::Duration;

use stellmq_acl::auth::info::UserInfo;
use stellmq_acl::auth::{
    AskBroker, AuthRegistry, InMemory, RemoteSubjects, Subject, UserStatus, UserType,
};
use stellmq_acl::refusal_log::RefusalLog;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::signature::{
    self, Coverage, SessionCredentials, ACCESS_KEY, SIGNATURE,
};
use stellmq_remoting::protocol::RemotingCommand;

use crate::route::RouteInfoManager;

const SUBJECT_TTL: Duration = Duration::from_secs(10);
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

pub struct NamesrvAuth {
    /// The configured super users.
    local: AuthRegistry,
    remote: RemoteSubjects,
    client: BrokerClient,
    routes: Arc<RouteInfoManager>,
    pub(crate) refusals: RefusalLog,
}

struct BrokerClient(RemotingClient);

impl AskBroker for BrokerClient {
    async fn ask(&self, addr: &str, request: RemotingCommand) -> Result<RemotingCommand, String> {
        self.0
            .invoke(addr, request, CALL_TIMEOUT)
            .await
            .map_err(|e| e.to_string())
    }
}

impl NamesrvAuth {
    /// `init_user` is `{"username":..,"password":..}`; `inner` signs the lookups.
    pub fn new(
        init_user: &str,
        inner: Option<SessionCredentials>,
        routes: Arc<RouteInfoManager>,
    ) -> Result<Self, String> {
        let local = AuthRegistry::new(Vec::new(), Vec::new(), Box::new(InMemory));
        let mut supers = Vec::new();
        if !init_user.trim().is_empty() {
            let info: UserInfo = serde_json::from_str(init_user.trim()).map_err(|_| {
                r#"initAuthenticationUser: expected {"username":"...","password":"..."}"#.to_owned()
            })?;
            supers.push((info.username.unwrap_or_default(), info.password));
        }
        if let Some(inner) = &inner {
            supers.push((inner.access_key.clone(), Some(inner.secret_key.clone())));
        }
        for (name, password) in supers {
            let info = UserInfo {
                username: Some(name.clone()),
                password,
                user_type: Some("Super".to_owned()),
                user_status: None,
            };
            if local.user(name.trim()).is_none() {
                local
                    .create_user(name.trim(), &info)
                    .map_err(|e| e.to_string())?;
            }
        }
        let client = RemotingClient::new(ClientConfig {
            credentials: inner,
            ..ClientConfig::default()
        });
        Ok(Self {
            local,
            remote: RemoteSubjects::new(SUBJECT_TTL),
            client: BrokerClient(client),
            routes,
            refusals: RefusalLog::default(),
        })
    }

    async fn subject(&self, username: &str) -> Result<Option<Arc<Subject>>, String> {
        if let Some(user) = self.local.user(username) {
            return Ok(Some(Arc::new(Subject {
                user: (*user).clone(),
                acl: None,
            })));
        }
        if let Some(known) = self.remote.cached(username) {
            return Ok(known);
        }
        let info = self.routes.cluster_info();
        let masters: Vec<String> = info
            .broker_addr_table
            .values()
            .filter_map(|b| b.master_addr().map(str::to_owned))
            .collect();
        self.remote.load(&self.client, &masters, username).await
    }

    /// Whether the change `request` is signed by an enabled super user; the refusal is
    /// RocketMQ's text.
    pub async fn check_change(&self, request: &RemotingCommand) -> Result<(), String> {
        let Some(username) = request.ext_fields.get_non_empty(ACCESS_KEY) else {
            return Err("username cannot be null.".to_owned());
        };
        let subject = self
            .subject(username)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "[AUTH] users cannot be read from the brokers");
                "Authentication failed. Please verify the credentials and try again.".to_owned()
            })?
            .ok_or_else(|| format!("User:{username} is not found."))?;
        if subject.user.user_status == UserStatus::Disable {
            return Err(format!("User:{username} is disabled."));
        }
        let claimed = request.ext_fields.get(SIGNATURE).unwrap_or("");
        let coverage = Coverage::for_version(request.version);
        if !signature::verify(
            &subject.user.password,
            &request.ext_fields,
            &request.body,
            coverage,
            claimed,
        ) {
            return Err("check signature failed.".to_owned());
        }
        if subject.user.user_type != UserType::Super {
            return Err(format!(
                "User:{username} has no permission to change the name server: only super users may"
            ));
        }
        Ok(())
    }

    pub async fn shutdown(&self) {
        self.client.0.shutdown().await;
    }
}
