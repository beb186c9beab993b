//! ACL 2.0's admin bodies (RocketMQ's `UserInfo` and `AclInfo`, defined in the protocol
//! crate) to and from the model, checked with RocketMQ's validation messages.

pub use stellmq_protocol::body::auth::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};

use super::model::{
    subject_user, Acl, Action, Decision, Policy, PolicyEntry, PolicyType, Resource, SourceNet,
    User, UserStatus, UserType,
};
use super::AuthError;

fn invalid(text: &str) -> AuthError {
    AuthError::Invalid(text.to_owned())
}

fn non_blank(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// The longest user name accepted; names are keys of the store and parts of log lines.
pub const MAX_USERNAME: usize = 256;
/// The most entries one ACL may hold, so a client cannot grow one without bound.
pub const MAX_ENTRIES: usize = 4096;
/// The longest resource key, password, and the most source addresses of one entry.
pub const MAX_RESOURCE: usize = 1024;
pub const MAX_PASSWORD: usize = 1024;
pub const MAX_SOURCE_IPS: usize = 64;

/// Checks a user name as RocketMQ does (not blank), and that it is one a store can key.
pub fn check_username(name: &str) -> Result<(), AuthError> {
    if name.trim().is_empty() {
        return Err(invalid("username can not be blank"));
    }
    if name.len() > MAX_USERNAME || name.chars().any(|c| c.is_control()) {
        return Err(AuthError::Invalid(format!(
            "username must be at most {MAX_USERNAME} bytes without control characters"
        )));
    }
    Ok(())
}

/// A user as its UserInfo body (with the password, as RocketMQ answers it).
pub fn user_info(user: &User) -> UserInfo {
    UserInfo {
        username: Some(user.username.clone()),
        password: Some(user.password.clone()),
        user_type: Some(user.user_type.name().to_owned()),
        user_status: Some(user.user_status.name().to_owned()),
    }
}

/// A subject's policies as their AclInfo body.
pub fn acl_info(acl: &Acl) -> AclInfo {
    AclInfo {
        subject: Some(acl.subject.clone()),
        policies: Some(acl.policies.iter().map(policy_info).collect()),
    }
}

fn policy_info(policy: &Policy) -> PolicyInfo {
    PolicyInfo {
        policy_type: Some(policy.policy_type.name().to_owned()),
        entries: Some(policy.entries.iter().map(entry_info).collect()),
    }
}

fn entry_info(entry: &PolicyEntry) -> PolicyEntryInfo {
    PolicyEntryInfo {
        resource: Some(entry.resource.key()),
        actions: Some(entry.actions.iter().map(|a| a.name().to_owned()).collect()),
        source_ips: (!entry.source_ips.is_empty()).then(|| entry.source_ips.clone()),
        decision: Some(entry.decision.name().to_owned()),
    }
}

fn user_type(info: &UserInfo) -> Result<Option<UserType>, AuthError> {
    non_blank(&info.user_type)
        .map(|t| UserType::by_name(t).ok_or_else(|| invalid("The userType is illegal.")))
        .transpose()
}

fn user_status(info: &UserInfo) -> Result<Option<UserStatus>, AuthError> {
    non_blank(&info.user_status)
        .map(|s| UserStatus::by_name(s).ok_or_else(|| invalid("The userStatus is illegal.")))
        .transpose()
}

/// Reading a UserInfo body as a user.
pub trait UserInfoExt {
    /// A new user: a password is required; the type defaults to Normal, the status to
    /// enable.
    fn to_new_user(&self, username: &str) -> Result<User, AuthError>;
    /// Applies an update: what is given replaces, what is absent stays.
    fn apply_to(&self, user: &mut User) -> Result<(), AuthError>;
}

/// Reading an AclInfo body as checked policies.
pub trait AclInfoExt {
    /// Checked policies for `subject`, as RocketMQ validates them; a policy without a
    /// type is Custom.
    fn to_acl(&self, subject: &str) -> Result<Acl, AuthError>;
}

impl UserInfoExt for UserInfo {
    fn to_new_user(&self, username: &str) -> Result<User, AuthError> {
        check_username(username)?;
        let Some(password) = non_blank(&self.password) else {
            return Err(invalid("password can not be blank"));
        };
        if password.len() > MAX_PASSWORD {
            return Err(AuthError::Invalid(format!(
                "password must be at most {MAX_PASSWORD} bytes"
            )));
        }
        Ok(User {
            username: username.to_owned(),
            password: password.to_owned(),
            user_type: user_type(self)?.unwrap_or(UserType::Normal),
            user_status: user_status(self)?.unwrap_or(UserStatus::Enable),
        })
    }

    fn apply_to(&self, user: &mut User) -> Result<(), AuthError> {
        let user_type = user_type(self)?;
        let user_status = user_status(self)?;
        if let Some(password) = non_blank(&self.password) {
            if password.len() > MAX_PASSWORD {
                return Err(AuthError::Invalid(format!(
                    "password must be at most {MAX_PASSWORD} bytes"
                )));
            }
            user.password = password.to_owned();
        }
        if let Some(t) = user_type {
            user.user_type = t;
        }
        if let Some(s) = user_status {
            user.user_status = s;
        }
        Ok(())
    }
}

impl AclInfoExt for AclInfo {
    fn to_acl(&self, subject: &str) -> Result<Acl, AuthError> {
        let Some(user) = subject_user(subject) else {
            return Err(invalid("The subject type is null."));
        };
        check_username(user)?;
        let policies = self.policies.as_deref().unwrap_or_default();
        if policies.is_empty() {
            return Err(invalid("The policies is empty."));
        }
        let policies = policies
            .iter()
            .map(to_policy)
            .collect::<Result<Vec<_>, _>>()?;
        let entries: usize = policies.iter().map(|p| p.entries.len()).sum();
        if entries > MAX_ENTRIES {
            return Err(AuthError::Invalid(format!(
                "an ACL holds at most {MAX_ENTRIES} entries"
            )));
        }
        Ok(Acl {
            subject: super::model::user_subject(user),
            policies,
        })
    }
}

fn to_policy(info: &PolicyInfo) -> Result<Policy, AuthError> {
    let policy_type = match non_blank(&info.policy_type) {
        None => PolicyType::Custom,
        Some(t) => PolicyType::by_name(t).ok_or_else(|| invalid("The policyType is illegal."))?,
    };
    let entries = info.entries.as_deref().unwrap_or_default();
    if entries.is_empty() {
        return Err(invalid("The policy entries is empty."));
    }
    let entries = entries
        .iter()
        .map(to_entry)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Policy {
        policy_type,
        entries,
    })
}

fn to_entry(info: &PolicyEntryInfo) -> Result<PolicyEntry, AuthError> {
    if info
        .resource
        .as_deref()
        .is_some_and(|r| r.len() > MAX_RESOURCE)
    {
        return Err(AuthError::Invalid(format!(
            "a resource must be at most {MAX_RESOURCE} bytes"
        )));
    }
    let resource = non_blank(&info.resource)
        .and_then(Resource::parse)
        .ok_or_else(|| invalid("The resource is null."))?;
    if info
        .source_ips
        .as_ref()
        .is_some_and(|ips| ips.len() > MAX_SOURCE_IPS)
    {
        return Err(AuthError::Invalid(format!(
            "an entry names at most {MAX_SOURCE_IPS} source addresses"
        )));
    }
    let mut actions = Vec::new();
    for name in info.actions.as_deref().unwrap_or_default() {
        let action = Action::by_name(name)
            .ok_or_else(|| AuthError::Invalid(format!("The action {name:?} is illegal.")))?;
        if !actions.contains(&action) {
            actions.push(action);
        }
    }
    if actions.is_empty() {
        return Err(invalid("The actions is empty."));
    }
    if actions.contains(&Action::Any) {
        return Err(invalid("The actions can not be Any."));
    }
    let source_ips: Vec<String> = info
        .source_ips
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|ip| ip.trim().to_owned())
        .collect();
    let nets = source_ips
        .iter()
        .map(|ip| SourceNet::parse(ip))
        .collect::<Result<Vec<_>, _>>()?;
    let decision = non_blank(&info.decision)
        .and_then(Decision::by_name)
        .ok_or_else(|| invalid("The decision is null or illegal."))?;
    Ok(PolicyEntry {
        resource,
        actions,
        source_ips,
        nets,
        decision,
    })
}
