//! Consumer offsets (`consumerOffset.json`): `topic@group` -> queue id -> next offset to
//! consume. Kept in memory, persisted every `flushConsumerOffsetInterval` and at shutdown.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::{ConsumerOffsetSerializeWrapper, IntKeyMap};

use crate::persist;

pub struct ConsumerOffsetManager {
    path: PathBuf,
    table: RwLock<BTreeMap<String, BTreeMap<i32, i64>>>,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOffsetManager {
    pub fn load(path: PathBuf) -> std::io::Result<Self> {
        let loaded: ConsumerOffsetSerializeWrapper = persist::load(&path)?.unwrap_or_default();
        let table = loaded
            .offset_table
            .into_iter()
            .map(|(k, offsets)| {
                (
                    k,
                    offsets.0.into_iter().map(|(q, o)| (q as i32, o)).collect(),
                )
            })
            .collect();
        Ok(Self {
            path,
            table: RwLock::new(table),
        })
    }

    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.table
            .write()
            .entry(key(topic, group))
            .or_default()
            .insert(queue_id, offset);
    }

    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.table
            .read()
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .copied()
    }

    /// Every queue's offset of a group on a topic.
    pub fn queue_offsets(&self, group: &str, topic: &str) -> BTreeMap<i32, i64> {
        self.table
            .read()
            .get(&key(topic, group))
            .cloned()
            .unwrap_or_default()
    }

    /// Copies `src`'s offsets of `topic` to `dest` (replacing `dest`'s); false when `src`
    /// has none.
    pub fn clone_offsets(&self, src: &str, dest: &str, topic: &str) -> bool {
        let mut table = self.table.write();
        let Some(offsets) = table.get(&key(topic, src)).cloned() else {
            return false;
        };
        table.insert(key(topic, dest), offsets);
        true
    }

    /// Topics a group has offsets for.
    pub fn topics_of_group(&self, group: &str) -> BTreeSet<String> {
        self.table
            .read()
            .keys()
            .filter_map(|k| {
                k.rsplit_once('@')
                    .filter(|(_, g)| *g == group)
                    .map(|(t, _)| t.to_owned())
            })
            .collect()
    }

    /// Every group with stored offsets.
    pub fn groups(&self) -> BTreeSet<String> {
        self.table
            .read()
            .keys()
            .filter_map(|k| k.rsplit_once('@').map(|(_, g)| g.to_owned()))
            .collect()
    }

    /// Groups with offsets on a topic.
    pub fn groups_of_topic(&self, topic: &str) -> BTreeSet<String> {
        self.table
            .read()
            .keys()
            .filter_map(|k| {
                k.split_once('@')
                    .filter(|(t, _)| *t == topic)
                    .map(|(_, g)| g.to_owned())
            })
            .collect()
    }

    /// Up to `limit` (topic, group, queue offsets) entries, for metrics.
    pub fn pairs(&self, limit: usize) -> Vec<(String, String, BTreeMap<i32, i64>)> {
        self.table
            .read()
            .iter()
            .filter_map(|(k, offsets)| {
                let (topic, group) = k.rsplit_once('@')?;
                Some((topic.to_owned(), group.to_owned(), offsets.clone()))
            })
            .take(limit)
            .collect()
    }

    pub fn remove_group(&self, group: &str) {
        self.table
            .write()
            .retain(|k, _| !k.ends_with(&format!("@{group}")));
    }

    pub fn remove_topic(&self, topic: &str) {
        self.table
            .write()
            .retain(|k, _| !k.starts_with(&format!("{topic}@")));
    }

    /// A slave takes its master's offsets (protocol.md 9.4).
    pub fn replace_from_master(&self, master: ConsumerOffsetSerializeWrapper) {
        *self.table.write() = master
            .offset_table
            .into_iter()
            .map(|(k, offsets)| {
                (
                    k,
                    offsets.0.into_iter().map(|(q, o)| (q as i32, o)).collect(),
                )
            })
            .collect();
    }

    pub fn wrapper(&self) -> ConsumerOffsetSerializeWrapper {
        ConsumerOffsetSerializeWrapper {
            offset_table: self
                .table
                .read()
                .iter()
                .map(|(k, q)| {
                    (
                        k.clone(),
                        IntKeyMap(q.iter().map(|(q, o)| (i64::from(*q), *o)).collect()),
                    )
                })
                .collect(),
            data_version: None,
        }
    }

    pub fn persist(&self) {
        if let Err(e) = persist::store(&self.path, &self.wrapper()) {
            tracing::error!(file = %self.path.display(), error = %e, "cannot persist consumerOffset.json");
        }
    }
}
