//! Where consumed offsets live: on the broker (clustering) or in a local file
//! (broadcasting, `~/.rocketmq_offsets/<clientId>/<group>/offsets.json` in fastjson's
//! object-keyed form, like Java's).

use std::collections::BTreeMap;
use std::path::PathBuf;

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::{fastjson, MessageQueue, MqKeyMap};
use tokio_util::sync::CancellationToken;

/// Offsets of one group, kept in memory and persisted by the consumer.
pub struct OffsetTable {
    offsets: Mutex<BTreeMap<MessageQueue, i64>>,
    file: Option<PathBuf>,
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct OffsetFile {
    #[serde(default)]
    offset_table: MqKeyMap<i64>,
}

impl OffsetTable {
    /// A table whose truth is the broker.
    pub fn remote() -> Self {
        Self {
            offsets: Mutex::new(BTreeMap::new()),
            file: None,
        }
    }

    /// A table persisted to a local file (loaded now if it exists).
    pub fn local(file: PathBuf) -> Self {
        let offsets = std::fs::read(&file)
            .ok()
            .and_then(|bytes| fastjson::decode::<OffsetFile>(&bytes).ok())
            .map(|f| f.offset_table.0)
            .unwrap_or_default();
        Self {
            offsets: Mutex::new(offsets),
            file: Some(file),
        }
    }

    pub fn is_local(&self) -> bool {
        self.file.is_some()
    }

    pub fn get(&self, mq: &MessageQueue) -> Option<i64> {
        self.offsets.lock().get(mq).copied()
    }

    /// Records progress; offsets only move forward unless `force`.
    pub fn update(&self, mq: &MessageQueue, offset: i64, force: bool) {
        let mut offsets = self.offsets.lock();
        let entry = offsets.entry(mq.clone()).or_insert(offset);
        if force || offset > *entry {
            *entry = offset;
        }
    }

    /// Records the progress of a queue's pull state, unless that state was dropped (the queue
    /// given up, or its offset reset): checked under the table's lock, so progress of a
    /// dropped state never lands after the offset that replaced it.
    pub fn record(&self, mq: &MessageQueue, offset: i64, dropped: &CancellationToken) {
        let mut offsets = self.offsets.lock();
        if dropped.is_cancelled() {
            return;
        }
        let entry = offsets.entry(mq.clone()).or_insert(offset);
        if offset > *entry {
            *entry = offset;
        }
    }

    pub fn remove(&self, mq: &MessageQueue) {
        self.offsets.lock().remove(mq);
    }

    pub fn snapshot(&self) -> BTreeMap<MessageQueue, i64> {
        self.offsets.lock().clone()
    }

    /// Writes the local file (no-op for remote tables).
    pub fn persist_local(&self) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let body = OffsetFile {
            offset_table: MqKeyMap(self.snapshot()),
        };
        stellmq_config::write_atomically(file, &fastjson::encode(&body))
    }
}
