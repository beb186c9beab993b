//! Delay messages (protocol.md 7.1): per-level queues of SCHEDULE_TOPIC_XXXX whose ConsumeQueue
//! tags code is the delivery time; each message is re-put to its real topic and queue when
//! due. Progress per level lives in `delayOffset.json` (persisted every
//! `flushDelayOffsetInterval` and at shutdown), so nothing is lost across a restart and a
//! clean restart delivers nothing twice.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::{DelayOffsetSerializeWrapper, IntKeyMap};
use stellmq_remoting::protocol::message::{property, MessageRecord};
use stellmq_store::{AcceptAll, GetMessageStatus, MessageStore, PutMessage};

use crate::context::now_ms;
use crate::deferred::{self, DueDelivery};
use crate::persist;
use crate::topic::SCHEDULE_TOPIC;

pub struct ScheduleMessageService {
    store: Arc<MessageStore>,
    levels: usize,
    path: PathBuf,
    /// Level (1-based) -> next queue offset to deliver.
    offsets: Mutex<BTreeMap<i32, i64>>,
}

impl ScheduleMessageService {
    pub fn load(store: Arc<MessageStore>, levels: usize, path: PathBuf) -> std::io::Result<Self> {
        let loaded: DelayOffsetSerializeWrapper = persist::load(&path)?.unwrap_or_default();
        let offsets = loaded
            .offset_table
            .0
            .into_iter()
            .map(|(l, o)| (l as i32, o))
            .collect();
        Ok(Self {
            store,
            levels,
            path,
            offsets: Mutex::new(offsets),
        })
    }

    pub fn wrapper(&self) -> DelayOffsetSerializeWrapper {
        DelayOffsetSerializeWrapper {
            offset_table: IntKeyMap(
                self.offsets
                    .lock()
                    .iter()
                    .map(|(l, o)| (i64::from(*l), *o))
                    .collect(),
            ),
            data_version: None,
        }
    }

    /// A slave takes its master's delivery progress (protocol.md 9.4); it never delivers itself,
    /// since its CommitLog only grows by the master's bytes.
    pub fn replace_from_master(&self, master: DelayOffsetSerializeWrapper) {
        *self.offsets.lock() = master
            .offset_table
            .0
            .into_iter()
            .map(|(l, o)| (l as i32, o))
            .collect();
    }

    pub fn persist(&self) {
        if let Err(e) = persist::store(&self.path, &self.wrapper()) {
            tracing::error!(file = %self.path.display(), error = %e, "cannot persist delayOffset.json");
        }
    }

    /// Delivers every due message of every level; returns how many were delivered.
    pub async fn deliver_due(&self) -> usize {
        let mut delivered = 0;
        for level in 1..=self.levels as i32 {
            delivered += self.deliver_level(level).await;
        }
        delivered
    }

    async fn deliver_level(&self, level: i32) -> usize {
        let queue_id = level - 1;
        let mut offset = self.offsets.lock().get(&level).copied().unwrap_or(0);
        let min = self.store.min_offset_in_queue(SCHEDULE_TOPIC, queue_id);
        if offset < min {
            offset = min;
        }
        let now = now_ms();
        let mut delivered = 0;
        while let Some(entry) = self
            .store
            .consume_queue_entry(SCHEDULE_TOPIC, queue_id, offset)
        {
            if !entry.is_blank() && entry.tags_code > now {
                break;
            }
            if !entry.is_blank() {
                let got = self
                    .store
                    .get_messages(SCHEDULE_TOPIC, queue_id, offset, 1, &AcceptAll);
                if got.status == GetMessageStatus::Found {
                    if let Some(raw) = got.messages.first() {
                        if !self.deliver(raw).await {
                            // Retry this message on the next pass rather than skip it.
                            break;
                        }
                        delivered += 1;
                    }
                }
            }
            offset += 1;
            self.offsets.lock().insert(level, offset);
        }
        delivered
    }

    /// Re-puts one scheduled message to its real topic and queue.
    async fn deliver(&self, raw: &bytes::Bytes) -> bool {
        let Ok((record, _)) = MessageRecord::decode(raw, false) else {
            tracing::error!("undecodable scheduled message skipped");
            return true;
        };
        let Some((topic, queue_id)) = deferred::real_target(&record.properties) else {
            tracing::error!(msg_id = %record.msg_id(), "scheduled message without REAL_TOPIC/REAL_QID skipped");
            return true;
        };
        let mut props = record.properties.clone();
        props.remove(property::DELAY);
        props.insert(property::WAIT, "false");
        let msg = PutMessage::from_record(&record, &props, topic, queue_id, record.head.store_host);
        let result = self.store.put_message(msg).await;
        if !result.status.is_stored() {
            tracing::warn!(status = ?result.status, remark = ?result.remark, "delivering a scheduled message failed; will retry");
        }
        result.status.is_stored()
    }
}

impl DueDelivery for ScheduleMessageService {
    async fn deliver_due(&self) -> usize {
        ScheduleMessageService::deliver_due(self).await
    }

    fn persist(&self) {
        ScheduleMessageService::persist(self);
    }
}
