//! ACL 2.0 (RocketMQ 5.3+): users who sign requests with their password, and policies
//! that allow or deny actions on clusters, topics and groups. [`AuthRegistry`] holds them,
//! [`decide::authorize`] decides, [`request`] says what a remoting request needs, and
//! [`migrate`] turns a plain_acl.yml into users and policies.

pub mod check;
pub mod decide;
pub mod gate;
pub mod info;
pub mod migrate;
pub mod model;
pub mod registry;
pub mod remote;
pub mod request;

use thiserror::Error;

pub use check::{parse_whitelist, AuthChecker, AuthSettings};
pub use decide::{authorize, Need};
pub use info::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
pub use model::{
    Acl, Action, Decision, PolicyType, Resource, ResourceType, User, UserStatus, UserType,
};
pub use registry::{AuthPersist, AuthRegistry, InMemory};
pub use remote::{AskBroker, RemoteSubjects, Subject};

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuthError {
    /// A request's user or policy does not pass validation (RocketMQ's texts).
    #[error("{0}")]
    Invalid(String),
    #[error("The user is existed")]
    UserExists,
    #[error("The user is not exist: {0}")]
    UserNotFound(String),
    #[error("The subject of {0} is not exist.")]
    SubjectNotFound(String),
    #[error("The acl is not exist: {0}")]
    AclNotFound(String),
    /// The store refused a change; nothing changed.
    #[error("auth metadata not saved: {0}")]
    Store(String),
}

#[cfg(test)]
mod tests;
