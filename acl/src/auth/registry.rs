//! The users and policies a server holds, in memory for the checks of every request and
//! persisted by key before a change is answered (RocketMQ's local metadata providers).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::info::{check_username, AclInfo, AclInfoExt, UserInfo, UserInfoExt};
use super::model::{subject_user, user_subject, Acl, PolicyType, Resource, User};
use super::AuthError;

/// Where changes go before they are answered (a broker's metadata store). Blocking.
pub trait AuthPersist: Send + Sync {
    fn save_user(&self, username: &str, user: Option<&User>) -> Result<(), AuthError>;
    fn save_acl(&self, subject: &str, acl: Option<&Acl>) -> Result<(), AuthError>;
}

/// Keeps nothing: for servers whose users live elsewhere, and for tests.
pub struct InMemory;

impl AuthPersist for InMemory {
    fn save_user(&self, _: &str, _: Option<&User>) -> Result<(), AuthError> {
        Ok(())
    }
    fn save_acl(&self, _: &str, _: Option<&Acl>) -> Result<(), AuthError> {
        Ok(())
    }
}

/// The most users one server holds: the admin API may not grow memory without bound.
pub const MAX_USERS: usize = 1_000_000;

pub struct AuthRegistry {
    users: RwLock<HashMap<String, Arc<User>>>,
    acls: RwLock<HashMap<String, Arc<Acl>>>,
    /// Serialises changes: each reads, persists and then publishes.
    edits: Mutex<()>,
    persist: Box<dyn AuthPersist>,
}

impl AuthRegistry {
    pub fn new(users: Vec<User>, acls: Vec<Acl>, persist: Box<dyn AuthPersist>) -> AuthRegistry {
        AuthRegistry {
            users: RwLock::new(
                users
                    .into_iter()
                    .map(|u| (u.username.clone(), Arc::new(u)))
                    .collect(),
            ),
            acls: RwLock::new(
                acls.into_iter()
                    .map(|a| (a.subject.clone(), Arc::new(a)))
                    .collect(),
            ),
            edits: Mutex::new(()),
            persist,
        }
    }

    pub fn user(&self, username: &str) -> Option<Arc<User>> {
        self.users.read().get(username).cloned()
    }

    pub fn acl(&self, subject: &str) -> Option<Arc<Acl>> {
        self.acls.read().get(subject).cloned()
    }

    pub fn user_count(&self) -> usize {
        self.users.read().len()
    }

    /// Users whose name contains `filter` (all when blank), by name.
    pub fn list_users(&self, filter: &str) -> Vec<Arc<User>> {
        let filter = filter.trim();
        let mut users: Vec<_> = self
            .users
            .read()
            .values()
            .filter(|u| filter.is_empty() || u.username.contains(filter))
            .cloned()
            .collect();
        users.sort_by(|a, b| a.username.cmp(&b.username));
        users
    }

    /// ACLs whose subject contains `subject_filter` and that have an entry whose resource
    /// key contains `resource_filter` (blank filters match all), as RocketMQ filters.
    pub fn list_acls(&self, subject_filter: &str, resource_filter: &str) -> Vec<Acl> {
        let (subject_filter, resource_filter) = (subject_filter.trim(), resource_filter.trim());
        let mut acls: Vec<Acl> = self
            .acls
            .read()
            .values()
            .filter(|a| subject_filter.is_empty() || a.subject.contains(subject_filter))
            .filter_map(|a| narrow_to_resources(a, resource_filter))
            .collect();
        acls.sort_by(|a, b| a.subject.cmp(&b.subject));
        acls
    }

    /// Makes the users and ACLs exactly `users` and `acls` (a slave copying its master),
    /// persisting only what differs; returns how many entries changed.
    pub fn replace_all(&self, users: Vec<User>, acls: Vec<Acl>) -> Result<usize, AuthError> {
        let _edit = self.edits.lock();
        let mut changed = 0;
        let wanted: HashMap<String, User> =
            users.into_iter().map(|u| (u.username.clone(), u)).collect();
        let gone: Vec<String> = self
            .users
            .read()
            .keys()
            .filter(|name| !wanted.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            self.persist.save_user(&name, None)?;
            self.users.write().remove(&name);
            changed += 1;
        }
        for (name, user) in wanted {
            if self.user(&name).as_deref() != Some(&user) {
                self.persist.save_user(&name, Some(&user))?;
                self.users.write().insert(name, Arc::new(user));
                changed += 1;
            }
        }
        let wanted: HashMap<String, Acl> =
            acls.into_iter().map(|a| (a.subject.clone(), a)).collect();
        let gone: Vec<String> = self
            .acls
            .read()
            .keys()
            .filter(|subject| !wanted.contains_key(*subject))
            .cloned()
            .collect();
        for subject in gone {
            self.persist.save_acl(&subject, None)?;
            self.acls.write().remove(&subject);
            changed += 1;
        }
        for (subject, acl) in wanted {
            if self.acl(&subject).as_deref() != Some(&acl) {
                self.persist.save_acl(&subject, Some(&acl))?;
                self.acls.write().insert(subject, Arc::new(acl));
                changed += 1;
            }
        }
        Ok(changed)
    }

    /// Adds a user; an existing name is refused.
    pub fn create_user(&self, username: &str, info: &UserInfo) -> Result<(), AuthError> {
        let user = info.to_new_user(username)?;
        let _edit = self.edits.lock();
        if self.user(username).is_some() {
            return Err(AuthError::UserExists);
        }
        if self.user_count() >= MAX_USERS {
            return Err(AuthError::Invalid(format!(
                "this server holds at most {MAX_USERS} users"
            )));
        }
        self.persist.save_user(username, Some(&user))?;
        self.users
            .write()
            .insert(user.username.clone(), Arc::new(user));
        Ok(())
    }

    /// Changes what `info` gives of an existing user.
    pub fn update_user(&self, username: &str, info: &UserInfo) -> Result<(), AuthError> {
        check_username(username)?;
        let _edit = self.edits.lock();
        let Some(old) = self.user(username) else {
            return Err(AuthError::UserNotFound(username.to_owned()));
        };
        let mut user = (*old).clone();
        info.apply_to(&mut user)?;
        self.persist.save_user(username, Some(&user))?;
        self.users
            .write()
            .insert(user.username.clone(), Arc::new(user));
        Ok(())
    }

    /// Removes a user and its policies; removing an unknown user changes nothing.
    pub fn delete_user(&self, username: &str) -> Result<(), AuthError> {
        check_username(username)?;
        let _edit = self.edits.lock();
        let subject = user_subject(username);
        if self.acl(&subject).is_some() {
            self.persist.save_acl(&subject, None)?;
            self.acls.write().remove(&subject);
        }
        if self.user(username).is_some() {
            self.persist.save_user(username, None)?;
            self.users.write().remove(username);
        }
        Ok(())
    }

    /// Creates or extends a subject's policies (RocketMQ's createAcl and updateAcl both
    /// merge into what is there).
    pub fn put_acl(&self, subject: &str, info: &AclInfo) -> Result<(), AuthError> {
        let new = info.to_acl(subject)?;
        let _edit = self.edits.lock();
        self.require_subject(&new.subject)?;
        let acl = match self.acl(&new.subject) {
            None => new,
            Some(old) => {
                let mut acl = (*old).clone();
                acl.merge(new.policies);
                acl
            }
        };
        let entries: usize = acl.policies.iter().map(|p| p.entries.len()).sum();
        if entries > super::info::MAX_ENTRIES {
            return Err(AuthError::Invalid(format!(
                "an ACL holds at most {} entries",
                super::info::MAX_ENTRIES
            )));
        }
        self.persist.save_acl(&acl.subject, Some(&acl))?;
        self.acls.write().insert(acl.subject.clone(), Arc::new(acl));
        Ok(())
    }

    /// Removes one resource's entry (of `policy_type`, Custom when absent) or, without a
    /// resource, the subject's whole ACL.
    pub fn delete_acl(
        &self,
        subject: &str,
        policy_type: Option<PolicyType>,
        resource: Option<&Resource>,
    ) -> Result<(), AuthError> {
        let subject = self.subject_key(subject)?;
        let _edit = self.edits.lock();
        self.require_subject(&subject)?;
        let Some(old) = self.acl(&subject) else {
            return Err(AuthError::AclNotFound(subject));
        };
        let mut acl = (*old).clone();
        if let Some(resource) = resource {
            acl.remove_entry(policy_type.unwrap_or(PolicyType::Custom), resource);
        }
        if resource.is_none() || acl.policies.is_empty() {
            self.persist.save_acl(&subject, None)?;
            self.acls.write().remove(&subject);
        } else {
            self.persist.save_acl(&subject, Some(&acl))?;
            self.acls.write().insert(subject, Arc::new(acl));
        }
        Ok(())
    }

    /// A subject's ACL; the subject must exist.
    pub fn get_acl(&self, subject: &str) -> Result<Option<Arc<Acl>>, AuthError> {
        let subject = self.subject_key(subject)?;
        self.require_subject(&subject)?;
        Ok(self.acl(&subject))
    }

    fn subject_key(&self, subject: &str) -> Result<String, AuthError> {
        let user = subject_user(subject)
            .ok_or_else(|| AuthError::Invalid("The subject type is null.".to_owned()))?;
        check_username(user)?;
        Ok(user_subject(user))
    }

    fn require_subject(&self, subject: &str) -> Result<(), AuthError> {
        let exists = subject_user(subject).is_some_and(|u| self.user(u).is_some());
        if exists {
            Ok(())
        } else {
            Err(AuthError::SubjectNotFound(subject.to_owned()))
        }
    }
}

/// The ACL with only the entries whose resource key contains `filter`; `None` when none
/// does (an empty filter keeps everything).
fn narrow_to_resources(acl: &Acl, filter: &str) -> Option<Acl> {
    if filter.is_empty() {
        return Some(acl.clone());
    }
    let mut narrowed = acl.clone();
    for policy in &mut narrowed.policies {
        policy.entries.retain(|e| e.resource.key().contains(filter));
    }
    narrowed.policies.retain(|p| !p.entries.is_empty());
    (!narrowed.policies.is_empty()).then_some(narrowed)
}
