//! StellMQ's message store, in RocketMQ's file formats (protocol.md 6).
//!
//! * [`commitlog`]: every message appended to one sequence of memory-mapped segments.
//! * [`consume_queue`]: 20-byte entries per topic and queue, written by the dispatcher.
//! * [`index`]: hash index from `topic#key` to physical offsets.
//! * [`epoch`]: the epoch file of controller mode (which master term wrote which bytes).
//! * Flush (ASYNC_FLUSH, or SYNC_FLUSH by group commit), checkpoint, crash recovery and
//!   retention run on their own threads; async callers await flushes through channels.
//!
//! No networking here: the broker drives a [`MessageStore`].
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod allocator;
pub mod checkpoint;
mod clean;
pub mod commitlog;
pub mod config;
pub mod consume_queue;
pub mod dispatch;
pub mod epoch;
pub mod error;
pub mod get;
pub mod index;
pub mod index_feed;
mod inner;
mod maintenance;
pub mod mapped_file;
pub mod message;
mod pending;
mod read;
pub mod recovery;
pub mod segments;
mod services;
mod store;
mod truncate;

pub use config::{FlushDiskType, MessageStoreConfig};
pub use dispatch::MessageArrivingListener;
pub use error::StoreError;
pub use get::{AcceptAll, GetMessageResult, GetMessageStatus, MessageFilter};
pub use inner::{DiskUsageProbe, StoreStats};
pub use message::{AppendResult, PutMessage, PutMessageResult, PutMessageStatus};
pub use pending::PendingPut;
pub use store::{MessageStore, QueryMessageResult, StoreOptions};
pub use truncate::Truncation;
