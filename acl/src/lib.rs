//! RocketMQ's ACL 2.0 (users and policies, [`auth`]) and its plain ACL (4.x `aclEnable=true` with `conf/plain_acl.yml`): accounts with
//! access and secret keys, address white lists, per-topic and per-group permissions, the
//! signature check of every request, and the admin edits of the files.
//!
//! Servers hold one [`AccessValidator`], put [`AccessValidator::check`] in front of every
//! processor, answer a refusal with NO_PERMISSION and its text, and keep it current with
//! [`spawn_watch`].
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod address;
pub mod auth;
pub mod edit;
pub mod error;
pub mod file;
pub mod perm;
pub mod refusal_log;
pub mod resource;
pub mod rules;
pub mod source;
pub mod validator;
pub mod watch;

pub use edit::AccountEdit;
pub use error::{AccessDenied, AclError};
pub use file::{AccountConfig, FileVersion, PlainAclFile};
pub use perm::Perm;
pub use source::{default_home, AclSource};
pub use validator::AccessValidator;
pub use watch::{spawn_watch, WATCH_INTERVAL};
