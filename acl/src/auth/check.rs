//! The ACL 2.0 check in front of every request, in RocketMQ's order: authentication (the
//! request is signed by an enabled user with its password), then authorization (the user
//! may do what the request needs). Either may be off; request codes on a white list skip
//! that step.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use stellmq_protocol::signature::{self, Coverage, ACCESS_KEY, SIGNATURE};
use stellmq_protocol::RemotingCommand;

use super::decide::authorize;
use super::model::{user_subject, User, UserStatus, UserType};
use super::registry::AuthRegistry;
use super::request::needs;
use crate::refusal_log::RefusalLog;

/// RocketMQ's switches of ACL 2.0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthSettings {
    pub authentication: bool,
    pub authorization: bool,
    /// Request codes that skip authentication (`authenticationWhitelist`).
    pub authentication_whitelist: HashSet<i32>,
    /// Request codes that skip authorization (`authorizationWhitelist`).
    pub authorization_whitelist: HashSet<i32>,
    /// `brokerClusterName`: the `Cluster:` resource of cluster-wide requests.
    pub cluster: String,
}

/// Parses a white list of request codes as RocketMQ does: comma-separated, trimmed; what
/// is not a number names no remoting request and is left out.
pub fn parse_whitelist(text: &str) -> HashSet<i32> {
    text.split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect()
}

pub struct AuthChecker {
    pub settings: AuthSettings,
    pub registry: Arc<AuthRegistry>,
    pub refusals: RefusalLog,
}

impl AuthChecker {
    pub fn new(settings: AuthSettings, registry: Arc<AuthRegistry>) -> AuthChecker {
        AuthChecker {
            settings,
            registry,
            refusals: RefusalLog::default(),
        }
    }

    /// Logs a refusal, within [`crate::refusal_log::LOGGED_PER_SECOND`] lines a second.
    pub fn log_refusal(&self, peer: std::net::SocketAddr, code: i32, reason: &str) {
        if let Some(unlogged) = self.refusals.admit() {
            tracing::warn!(%peer, code, reason, unlogged, "[AUTH] request refused by ACL 2.0");
        }
    }

    pub fn enabled(&self) -> bool {
        self.settings.authentication || self.settings.authorization
    }

    /// Whether the peer may make this request; the refusal text is RocketMQ's.
    pub fn check(&self, peer: IpAddr, request: &RemotingCommand) -> Result<(), String> {
        let settings = &self.settings;
        let code = request.code;
        let authenticate =
            settings.authentication && !settings.authentication_whitelist.contains(&code);
        let authorize_it =
            settings.authorization && !settings.authorization_whitelist.contains(&code);
        if !authenticate && !authorize_it {
            return Ok(());
        }
        let user = self.signer(request)?;
        if authenticate {
            verify_signature(&user, request)?;
        }
        if authorize_it {
            self.authorize(peer, request, &user)?;
        }
        Ok(())
    }

    /// The enabled user a request names in `AccessKey`.
    fn signer(&self, request: &RemotingCommand) -> Result<Arc<User>, String> {
        let Some(username) = request.ext_fields.get_non_empty(ACCESS_KEY) else {
            return Err("username cannot be null.".to_owned());
        };
        let Some(user) = self.registry.user(username) else {
            return Err(format!("User:{username} is not found."));
        };
        if user.user_status == UserStatus::Disable {
            return Err(format!("User:{username} is disabled."));
        }
        Ok(user)
    }

    fn authorize(
        &self,
        peer: IpAddr,
        request: &RemotingCommand,
        user: &User,
    ) -> Result<(), String> {
        // A super user may do anything: what the request needs is not even read.
        if user.user_type == UserType::Super {
            return Ok(());
        }
        let needs = needs(request, &self.settings.cluster)?;
        if needs.is_empty() {
            return Ok(());
        }
        let acl = self.registry.acl(&user_subject(&user.username));
        authorize(user, acl.as_deref(), &needs, Some(peer))
    }
}

fn verify_signature(user: &User, request: &RemotingCommand) -> Result<(), String> {
    let claimed = request.ext_fields.get(SIGNATURE).unwrap_or("");
    let signed = signature::verify(
        &user.password,
        &request.ext_fields,
        &request.body,
        Coverage::for_version(request.version),
        claimed,
    );
    if signed {
        Ok(())
    } else {
        Err("check signature failed.".to_owned())
    }
}
