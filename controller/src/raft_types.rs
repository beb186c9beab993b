//! The Raft type configuration: entries carry controller [`Event`]s, applying one yields
//! [`Applied`]; nodes are numbered by their position in `controllerDLegerPeers`.

use std::io::Cursor;

use crate::state::{Applied, Event};

openraft::declare_raft_types!(
    /// StellMQ controller Raft types.
    pub TypeConfig:
        D = Event,
        R = Applied,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type NodeId = u64;
pub type Raft = openraft::Raft<TypeConfig>;
pub type Entry = openraft::Entry<TypeConfig>;
pub type LogId = openraft::LogId<NodeId>;
pub type Vote = openraft::Vote<NodeId>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, openraft::BasicNode>;
pub type StoredMembership = openraft::StoredMembership<NodeId, openraft::BasicNode>;
