//! The ACL 2.0 check of servers that keep no users of their own and serve every cluster
//! (the name server, the controller): a request they guard must be signed by an enabled
//! super user. `initAuthenticationUser` and `innerClientAuthenticationCredentials` are
//! super users there; other users are read from the brokers ([`RemoteSubjects`]).

use std::sync::Arc;
use std::time::Duration;

use stellmq_protocol::signature::{self, Coverage, SessionCredentials, ACCESS_KEY, SIGNATURE};
use stellmq_protocol::RemotingCommand;
use stellmq_remoting::net::{ClientConfig, RemotingClient};

use super::info::UserInfo;
use super::model::{UserStatus, UserType};
use super::registry::{AuthRegistry, InMemory};
use super::remote::{AskBroker, RemoteSubjects, Subject};
use crate::refusal_log::RefusalLog;

/// How long users read from the brokers are used.
pub const SUBJECT_TTL: Duration = Duration::from_secs(10);
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// The server's connections to brokers, signed with its inner credentials.
struct Brokers(RemotingClient);

impl AskBroker for Brokers {
    async fn ask(&self, addr: &str, request: RemotingCommand) -> Result<RemotingCommand, String> {
        self.0
            .invoke(addr, request, CALL_TIMEOUT)
            .await
            .map_err(|e| e.to_string())
    }
}

pub struct SuperUserGate {
    /// The configured super users.
    local: AuthRegistry,
    remote: RemoteSubjects,
    brokers: Brokers,
    refusals: RefusalLog,
    /// What the server is, for refusals: "the name server", "the controller".
    what: &'static str,
}

impl SuperUserGate {
    /// `init_user` is `{"username":..,"password":..}` (or empty); `inner` the server's own
    /// credentials, which also sign its lookups of users on the brokers.
    pub fn new(
        what: &'static str,
        init_user: &str,
        inner: Option<SessionCredentials>,
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
            let name = name.trim().to_owned();
            let info = UserInfo {
                username: Some(name.clone()),
                password,
                user_type: Some("Super".to_owned()),
                user_status: None,
            };
            if local.user(&name).is_none() {
                local.create_user(&name, &info).map_err(|e| e.to_string())?;
            }
        }
        let brokers = Brokers(RemotingClient::new(ClientConfig {
            credentials: inner,
            ..ClientConfig::default()
        }));
        Ok(Self {
            local,
            remote: RemoteSubjects::new(SUBJECT_TTL),
            brokers,
            refusals: RefusalLog::default(),
            what,
        })
    }

    async fn subject(
        &self,
        masters: impl FnOnce() -> Vec<String>,
        username: &str,
    ) -> Result<Option<Arc<Subject>>, String> {
        if let Some(user) = self.local.user(username) {
            return Ok(Some(Arc::new(Subject {
                user: (*user).clone(),
                acl: None,
            })));
        }
        if let Some(known) = self.remote.cached(username) {
            return Ok(known);
        }
        self.remote.load(&self.brokers, &masters(), username).await
    }

    /// Whether `request` is signed by an enabled super user; the refusal is RocketMQ's text
    /// (and logged, a few lines a second at most).
    /// `masters` lists the brokers to read unknown users from (asked only when needed).
    pub async fn check(
        &self,
        masters: impl FnOnce() -> Vec<String>,
        peer: std::net::SocketAddr,
        request: &RemotingCommand,
    ) -> Result<(), String> {
        let checked = self.check_quietly(masters, request).await;
        if let Err(reason) = &checked {
            if let Some(unlogged) = self.refusals.admit() {
                tracing::warn!(%peer, code = request.code, %reason, unlogged, server = self.what, "[AUTH] request refused by ACL 2.0");
            }
        }
        checked
    }

    async fn check_quietly(
        &self,
        masters: impl FnOnce() -> Vec<String>,
        request: &RemotingCommand,
    ) -> Result<(), String> {
        let Some(username) = request.ext_fields.get_non_empty(ACCESS_KEY) else {
            return Err("username cannot be null.".to_owned());
        };
        let subject = self
            .subject(masters, username)
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
        let body = &request.body;
        if !signature::verify(
            &subject.user.password,
            &request.ext_fields,
            body,
            coverage,
            claimed,
        ) {
            return Err("check signature failed.".to_owned());
        }
        if subject.user.user_type != UserType::Super {
            return Err(format!(
                "User:{username} has no permission to change {}: only super users may",
                self.what
            ));
        }
        Ok(())
    }
}
