//! Store errors.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid store configuration: {0}")]
    Config(#[from] stellmq_config::ConfigError),
    #[error("another process holds the store lock {0}")]
    Locked(PathBuf),
    #[error("store file {path} is corrupt: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("the store is poisoned after a failed flush and refuses writes: {0}")]
    Poisoned(String),
    #[error("cannot create {path}: {reason}")]
    CreateFile { path: PathBuf, reason: String },
    /// A runtime truncation the store cannot do (see `MessageStore::truncate_to`).
    #[error("cannot truncate the store: {0}")]
    TruncateRefused(String),
    /// A topic name that cannot be a directory of the store (it would leave it).
    #[error("topic name {0:?} cannot name a store directory")]
    UnsafeName(String),
}

impl StoreError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// Opening or mapping a file failed for want of descriptors (EMFILE, ENFILE) or of
    /// mappings (ENOMEM from mmap past `vm.max_map_count`).
    pub fn is_out_of_file_resources(&self) -> bool {
        const ENOMEM: i32 = 12;
        const ENFILE: i32 = 23;
        const EMFILE: i32 = 24;
        matches!(self, StoreError::Io { source, .. }
            if matches!(source.raw_os_error(), Some(ENOMEM | ENFILE | EMFILE)))
    }
}

/// Extension to attach the file path to an `io::Result`.
pub trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T, StoreError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T, StoreError> {
        self.map_err(|e| StoreError::io(path, e))
    }
}

/// Opens (creating it if missing, never truncating) a store file for reading and writing.
pub fn open_read_write(path: &std::path::Path) -> Result<std::fs::File, StoreError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .at(path)
}
