//! What can go wrong loading, checking and editing ACL files.

use std::path::PathBuf;

use thiserror::Error;

use crate::address::AddressError;

/// A file or an edit that cannot be taken. Messages never carry a secret key.
#[derive(Debug, Error)]
pub enum AclError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid ACL file: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("cannot render the ACL file: {0}")]
    Render(String),
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("{0}")]
    Address(#[from] AddressError),
    /// An admin edit that is not acceptable (bad key length, bad permission ...).
    #[error("{0}")]
    BadEdit(String),
}

/// Why a request was refused; answered as NO_PERMISSION with this text as remark.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct AccessDenied(pub String);
