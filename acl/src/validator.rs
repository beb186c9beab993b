//! The check in front of every request when ACL is on, in RocketMQ's order: a globally
//! white-listed address passes; otherwise the request names a known access key, and either
//! comes from that account's white-listed addresses or carries a valid signature; then the
//! account must own what the request needs.

use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use stellmq_protocol::signature::{self, Coverage, ACCESS_KEY, SIGNATURE};
use stellmq_protocol::RemotingCommand;

use crate::error::{AccessDenied, AclError};
use crate::perm::Perm;
use crate::refusal_log::RefusalLog;
use crate::resource::{requirement, Resource};
use crate::rules::{Account, AclRules};
use crate::source::{AclSource, Fingerprint};

/// Message traces may be written by any signed-in account, as in RocketMQ.
const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// The loaded ACL and the files it came from.
pub struct AccessValidator {
    pub(crate) source: AclSource,
    rules: RwLock<Arc<AclRules>>,
    seen: Mutex<Fingerprint>,
    /// Serialises edits made through admin requests.
    pub(crate) edits: Mutex<()>,
    refusals: RefusalLog,
}

impl AccessValidator {
    /// Loads the files (creating an empty default file if there is none). A file that
    /// does not parse or holds a bad account is an error: a broker does not start on it.
    pub fn open(source: AclSource) -> Result<AccessValidator, AclError> {
        source.ensure_default_file()?;
        let seen = source.fingerprint();
        let rules = AclRules::compile(source.load()?)?;
        Ok(AccessValidator {
            source,
            rules: RwLock::new(Arc::new(rules)),
            seen: Mutex::new(seen),
            edits: Mutex::new(()),
            refusals: RefusalLog::default(),
        })
    }

    pub fn rules(&self) -> Arc<AclRules> {
        self.rules.read().clone()
    }

    pub fn source(&self) -> &AclSource {
        &self.source
    }

    /// Logs a refusal, within [`crate::refusal_log::LOGGED_PER_SECOND`] lines a second.
    pub fn log_refusal(&self, peer: std::net::SocketAddr, code: i32, denied: &AccessDenied) {
        if let Some(unlogged) = self.refusals.admit() {
            tracing::warn!(%peer, code, reason = %denied, unlogged, "request refused by the ACL");
        }
    }

    /// Reads the files again if any changed, appeared or went away since last read. A
    /// change that does not load keeps the rules in force and is logged. Blocking.
    pub fn reload_if_changed(&self) -> bool {
        let now = self.source.fingerprint();
        {
            let mut seen = self.seen.lock();
            if *seen == now {
                return false;
            }
            *seen = now;
        }
        match self.reload() {
            Ok(()) => {
                tracing::info!(files = self.rules().files.len(), "ACL_RELOADED");
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "ACL files changed but do not load; the previous ACL stays in force");
                false
            }
        }
    }

    /// Reads every file now and replaces the rules. Blocking.
    pub fn reload(&self) -> Result<(), AclError> {
        let rules = AclRules::compile(self.source.load()?)?;
        *self.rules.write() = Arc::new(rules);
        Ok(())
    }

    /// Whether the peer may make this request.
    pub fn check(&self, peer: IpAddr, request: &RemotingCommand) -> Result<(), AccessDenied> {
        let rules = self.rules();
        if rules.globally_white_listed(peer) {
            return Ok(());
        }
        let Some(access_key) = request.ext_fields.get_non_empty(ACCESS_KEY) else {
            return Err(AccessDenied("No accessKey is configured".to_owned()));
        };
        let Some(account) = rules.account(access_key) else {
            return Err(AccessDenied(format!("No acl config for {access_key}")));
        };
        if account.white_listed(peer) {
            return Ok(());
        }
        let claimed = request.ext_fields.get(SIGNATURE).unwrap_or("");
        let coverage = Coverage::for_version(request.version);
        if !signature::verify(
            account.secret_key(),
            &request.ext_fields,
            &request.body,
            coverage,
            claimed,
        ) {
            return Err(AccessDenied(format!(
                "Check signature failed for accessKey={access_key}"
            )));
        }
        check_rights(account, request)
    }
}

fn check_rights(account: &Account, request: &RemotingCommand) -> Result<(), AccessDenied> {
    let needs = requirement(request)?;
    let trace = Resource::Topic(TRACE_TOPIC.to_owned());
    if needs
        .resources
        .iter()
        .any(|(r, p)| *r == trace && *p == Perm::PUB)
    {
        return Ok(());
    }
    if account.admin {
        return Ok(());
    }
    let access_key = &account.access_key;
    if needs.admin {
        return Err(AccessDenied(format!(
            "Need admin permission for request code={}, but accessKey={access_key} is not",
            request.code
        )));
    }
    for (resource, needed) in &needs.resources {
        let (owned, by_default) = account.owned(resource);
        if !owned.grants(*needed) {
            let which = if by_default {
                "No default permission"
            } else {
                "No permission"
            };
            return Err(AccessDenied(format!(
                "{which} for {resource}: {needed} needed, accessKey={access_key} has {owned}"
            )));
        }
    }
    Ok(())
}
