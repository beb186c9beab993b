//! Consumer offsets: `topic@group` -> queue id -> next offset to consume. Kept in memory and
//! committed to the [`MetadataStore`] every `flushConsumerOffsetInterval` and at shutdown;
//! a commit writes the keys that changed since the last one, not the table.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::{ConsumerOffsetSerializeWrapper, IntKeyMap};

use crate::persist;
use stellmq_metadata::{MetadataError, MetadataStore};

mod changes;
use changes::Changes;
pub use changes::Mark;

pub struct ConsumerOffsetManager {
    store: Arc<MetadataStore>,
    inner: RwLock<Offsets>,
}

struct Offsets {
    table: BTreeMap<String, BTreeMap<i32, i64>>,
    /// Keys changed or removed since the last commit.
    dirty: BTreeSet<String>,
    /// The order of changes, for slaves that copy only what changed.
    changes: Changes,
}

impl Offsets {
    /// `key` changed: noted for the next commit and for slaves.
    fn changed(&mut self, key: String) {
        self.changes.note(&key);
        self.dirty.insert(key);
    }

    /// Removes the keys `remove` selects, noting them for the next commit.
    fn remove_where(&mut self, remove: impl Fn(&str) -> bool) {
        let removed: Vec<String> = self.table.keys().filter(|k| remove(k)).cloned().collect();
        for key in removed {
            self.table.remove(&key);
            self.changed(key);
        }
        let Offsets { table, changes, .. } = self;
        changes.forget_old_removals(table.len(), |k| table.contains_key(k));
    }
}

/// GET_ALL_CONSUMER_OFFSET's answer: the whole table, or (to a slave that gave a mark of
/// this process) what changed since.
pub struct OffsetsCopy {
    pub body: ConsumerOffsetSerializeWrapper,
    /// Where this copy stands.
    pub mark: Mark,
    /// The body holds only the changes.
    pub delta: bool,
}

fn wire(queues: &BTreeMap<i32, i64>) -> IntKeyMap<i64> {
    IntKeyMap(queues.iter().map(|(q, o)| (i64::from(*q), *o)).collect())
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOffsetManager {
    /// Loads the offsets (blocking).
    pub fn load(store: Arc<MetadataStore>) -> Result<Self, MetadataError> {
        let table = store.offsets()?;
        Ok(Self {
            store,
            inner: RwLock::new(Offsets {
                table,
                dirty: BTreeSet::new(),
                changes: Changes::new(),
            }),
        })
    }

    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let key = key(topic, group);
        let mut inner = self.inner.write();
        match inner.table.get_mut(&key) {
            Some(queues) => {
                queues.insert(queue_id, offset);
            }
            None => {
                inner
                    .table
                    .insert(key.clone(), BTreeMap::from([(queue_id, offset)]));
            }
        }
        inner.changed(key);
    }

    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.inner
            .read()
            .table
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .copied()
    }

    /// Every queue's offset of a group on a topic.
    pub fn queue_offsets(&self, group: &str, topic: &str) -> BTreeMap<i32, i64> {
        self.inner
            .read()
            .table
            .get(&key(topic, group))
            .cloned()
            .unwrap_or_default()
    }

    /// Copies `src`'s offsets of `topic` to `dest` (replacing `dest`'s); false when `src`
    /// has none.
    pub fn clone_offsets(&self, src: &str, dest: &str, topic: &str) -> bool {
        let mut inner = self.inner.write();
        let Some(offsets) = inner.table.get(&key(topic, src)).cloned() else {
            return false;
        };
        let dest = key(topic, dest);
        inner.table.insert(dest.clone(), offsets);
        inner.changed(dest);
        true
    }

    /// Topics a group has offsets for.
    pub fn topics_of_group(&self, group: &str) -> BTreeSet<String> {
        self.inner
            .read()
            .table
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
        self.inner
            .read()
            .table
            .keys()
            .filter_map(|k| k.rsplit_once('@').map(|(_, g)| g.to_owned()))
            .collect()
    }

    /// Groups with offsets on a topic.
    pub fn groups_of_topic(&self, topic: &str) -> BTreeSet<String> {
        self.inner
            .read()
            .table
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
        self.inner
            .read()
            .table
            .iter()
            .filter_map(|(k, offsets)| {
                let (topic, group) = k.rsplit_once('@')?;
                Some((topic.to_owned(), group.to_owned(), offsets.clone()))
            })
            .take(limit)
            .collect()
    }

    pub fn remove_group(&self, group: &str) {
        let suffix = format!("@{group}");
        self.inner.write().remove_where(|k| k.ends_with(&suffix));
    }

    pub fn remove_topic(&self, topic: &str) {
        let prefix = format!("{topic}@");
        self.inner.write().remove_where(|k| k.starts_with(&prefix));
    }

    /// A slave takes its master's offsets (protocol.md 9.4).
    pub fn replace_from_master(&self, master: ConsumerOffsetSerializeWrapper) {
        let master: BTreeMap<String, BTreeMap<i32, i64>> = master
            .offset_table
            .into_iter()
            .map(|(k, offsets)| {
                (
                    k,
                    offsets.0.into_iter().map(|(q, o)| (q as i32, o)).collect(),
                )
            })
            .collect();
        let mut inner = self.inner.write();
        for (key, _) in persist::diff(&inner.table, &master) {
            inner.changed(key);
        }
        inner.table = master;
    }

    /// A slave takes what changed on its master since its last copy: the changed keys'
    /// queues replace its own, the removed keys go.
    pub fn apply_changes_from_master(&self, changes: ConsumerOffsetSerializeWrapper) {
        let mut inner = self.inner.write();
        for (key, queues) in changes.offset_table {
            let queues = queues.0.into_iter().map(|(q, o)| (q as i32, o)).collect();
            inner.table.insert(key.clone(), queues);
            inner.changed(key);
        }
        for key in changes.removed_keys {
            if inner.table.remove(&key).is_some() {
                inner.changed(key);
            }
        }
    }

    /// What a slave copies: everything, or what changed after `since` when it is a mark of
    /// this process that is still remembered.
    pub fn copy_for_slave(&self, since: Option<Mark>) -> OffsetsCopy {
        let inner = self.inner.read();
        let Some(changed) = since.and_then(|mark| inner.changes.since(mark)) else {
            return OffsetsCopy {
                body: Self::whole(&inner.table),
                mark: inner.changes.mark(),
                delta: false,
            };
        };
        let mut body = ConsumerOffsetSerializeWrapper::default();
        for key in changed.keys {
            match inner.table.get(&key) {
                Some(queues) => {
                    body.offset_table.insert(key, wire(queues));
                }
                None => body.removed_keys.push(key),
            }
        }
        OffsetsCopy {
            body,
            mark: changed.now,
            delta: true,
        }
    }

    fn whole(table: &BTreeMap<String, BTreeMap<i32, i64>>) -> ConsumerOffsetSerializeWrapper {
        ConsumerOffsetSerializeWrapper {
            offset_table: table.iter().map(|(k, q)| (k.clone(), wire(q))).collect(),
            data_version: None,
            removed_keys: Vec::new(),
        }
    }

    pub fn wrapper(&self) -> ConsumerOffsetSerializeWrapper {
        Self::whole(&self.inner.read().table)
    }

    /// Commits the offsets changed since the last commit (blocking); on failure they stay
    /// queued for the next.
    pub fn persist(&self) {
        let changes: Vec<(String, Option<BTreeMap<i32, i64>>)> = {
            let mut inner = self.inner.write();
            let dirty = std::mem::take(&mut inner.dirty);
            dirty
                .into_iter()
                .map(|key| {
                    let queues = inner.table.get(&key).cloned();
                    (key, queues)
                })
                .collect()
        };
        if changes.is_empty() {
            return;
        }
        if let Err(e) = self.store.write_offsets(&changes) {
            tracing::error!(error = %e, keys = changes.len(), "cannot commit consumer offsets; retrying at the next flush");
            self.inner
                .write()
                .dirty
                .extend(changes.into_iter().map(|(key, _)| key));
        }
    }
}
