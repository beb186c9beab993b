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
use super::model::{user_subject, UserStatus};
use super::registry::AuthRegistry;
use super::request::needs;
use crate::refusal_log::RefusalLog;

/// RocketMQ's switches of ACL 2.0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthSettings {
    pub authentication: bool,
    pub authorization: bool,
    /// Request codes that skip authentication (`authenticationWhitelist`).
    pub authentication_whitelist: HashSet<String>,
    /// Request codes that skip authorization (`authorizationWhitelist`).
    pub authorization_whitelist: HashSet<String>,
    /// `brokerClusterName`: the `Cluster:` resource of cluster-wide requests.
    pub cluster: String,
}

/// Parses a white list as RocketMQ does: comma-separated, trimmed.
pub fn parse_whitelist(text: &str) -> HashSet<String> {
    text.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
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
        let code = request.code.to_string();
        if self.settings.authentication && !self.settings.authentication_whitelist.contains(&code) {
            self.authenticate(request)?;
        }
        if self.settings.authorization && !self.settings.authorization_whitelist.contains(&code) {
            self.authorize(peer, request)?;
        }
        Ok(())
    }

    fn authenticate(&self, request: &RemotingCommand) -> Result<(), String> {
        let Some(username) = request.ext_fields.get_non_empty(ACCESS_KEY) else {
            return Err("username cannot be null.".to_owned());
        };
        let Some(user) = self.registry.user(username) else {
            return Err(format!("User:{username} is not found."));
        };
        if user.user_status == UserStatus::Disable {
            return Err(format!("User:{username} is disabled."));
        }
        let claimed = request.ext_fields.get(SIGNATURE).unwrap_or("");
        let signed = signature::verify(
            &user.password,
            &request.ext_fields,
            &request.body,
            Coverage::for_version(request.version),
            claimed,
        );
        if !signed {
            return Err("check signature failed.".to_owned());
        }
        Ok(())
    }

    fn authorize(&self, peer: IpAddr, request: &RemotingCommand) -> Result<(), String> {
        let needs = needs(request, &self.settings.cluster)?;
        if needs.is_empty() {
            return Ok(());
        }
        let Some(username) = request.ext_fields.get_non_empty(ACCESS_KEY) else {
            return Err(
                "Authorization failed. Please verify your access rights and try again.".to_owned(),
            );
        };
        let Some(user) = self.registry.user(username) else {
            return Err(format!("User:{username} not found."));
        };
        if user.user_status == UserStatus::Disable {
            return Err(format!("User:{username} is disabled."));
        }
        let acl = self.registry.acl(&user_subject(username));
        authorize(&user, acl.as_deref(), &needs, Some(peer))
    }
}
