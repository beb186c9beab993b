//! Reads: queue pulls with RocketMQ's statuses and limits, lookups by offset and key, and
//! queue offsets by time.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use stellmq_protocol::message::record::{self, store_timestamp_pos, SYS_FLAG_POS};
use stellmq_protocol::message::{property, MessageRecord};
use stellmq_protocol::{i32_at, i64_at};

use crate::consume_queue::{CqEntry, ENTRY_SIZE};
use crate::get::{GetMessageResult, GetMessageStatus, MessageFilter};
use crate::store::{MessageStore, QueryMessageResult};

/// Whether a stored record is `topic`'s and carries `key` (a KEYS token or its UNIQ_KEY):
/// the index only has hashes, and an entry may outlive the record it was made for.
fn record_has_key(raw: &Bytes, topic: &str, key: &str) -> bool {
    MessageRecord::decode(raw, false).is_ok_and(|(record, _)| {
        record.topic == topic
            && (record.properties.keys().any(|k| k == key)
                || record.properties.get(property::UNIQ_KEY) == Some(key))
    })
}

impl MessageStore {
    /// Reads up to `max_nums` messages of a queue from `offset` (protocol.md 2.5's statuses).
    pub fn get_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_nums: usize,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        let result = self.get_inner(topic, queue_id, offset, max_nums.max(1), filter);
        let stats = &self.inner.stats;
        if result.status == GetMessageStatus::Found {
            stats.get_found_times.fetch_add(1, Ordering::Relaxed);
            stats
                .get_transferred_messages
                .fetch_add(result.messages.len() as u64, Ordering::Relaxed);
        } else {
            stats.get_miss_times.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn get_inner(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_nums: usize,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        let mut result = GetMessageResult {
            status: GetMessageStatus::NoMatchedLogicQueue,
            next_begin_offset: 0,
            min_offset: 0,
            max_offset: 0,
            messages: Vec::new(),
            queue_offsets: Vec::new(),
            suggest_pull_from_slave: false,
        };
        let Some(cq) = self.inner.queues.find(topic, queue_id) else {
            return result;
        };
        let (min, max) = (cq.min_offset(), cq.max_offset());
        result.min_offset = min;
        result.max_offset = max;
        if max == 0 {
            result.status = GetMessageStatus::NoMessageInQueue;
            return result;
        }
        if offset < min {
            result.status = GetMessageStatus::OffsetTooSmall;
            result.next_begin_offset = min;
            return result;
        }
        if offset == max {
            result.status = GetMessageStatus::OffsetOverflowOne;
            result.next_begin_offset = offset;
            return result;
        }
        if offset > max {
            result.status = GetMessageStatus::OffsetOverflowBadly;
            result.next_begin_offset = if min == 0 { min } else { max };
            return result;
        }
        let scan_bytes = (max_nums * ENTRY_SIZE).max(16_000);
        let collected = cq.visit_entries_from(offset, scan_bytes, |entries| {
            self.collect(&mut result, offset, entries, max_nums, filter)
        });
        if collected.is_none() {
            result.status = GetMessageStatus::OffsetFoundNull;
            result.next_begin_offset = cq.roll_next_file(offset);
        }
        result
    }

    fn collect(
        &self,
        result: &mut GetMessageResult,
        offset: i64,
        entries: &mut dyn Iterator<Item = CqEntry>,
        max_nums: usize,
        filter: &dyn MessageFilter,
    ) {
        let config = &self.inner.config;
        let log = &self.inner.commit_log;
        let log_min = log.min_offset();
        let log_max = log.max_offset();
        let memory_budget = (self.inner.memory_bytes as f64
            * f64::from(config.access_message_in_memory_max_ratio)
            / 100.0) as i64;
        let mut status = GetMessageStatus::NoMatchedMessage;
        let mut scanned = 0usize;
        let mut bytes = 0usize;
        let mut last_phys = 0i64;
        for entry in entries {
            if result.messages.len() >= max_nums {
                break;
            }
            let on_disk = log_max - entry.phys_offset > memory_budget;
            let (max_bytes, max_count) = if on_disk {
                (
                    config.max_transfer_bytes_on_message_in_disk,
                    config.max_transfer_count_on_message_in_disk,
                )
            } else {
                (
                    config.max_transfer_bytes_on_message_in_memory,
                    config.max_transfer_count_on_message_in_memory,
                )
            };
            if !result.messages.is_empty()
                && (bytes + entry.size.max(0) as usize > max_bytes
                    || result.messages.len() >= max_count)
            {
                break;
            }
            scanned += 1;
            if entry.is_blank() {
                continue;
            }
            last_phys = entry.phys_offset;
            if entry.phys_offset < log_min {
                status = GetMessageStatus::MessageWasRemoving;
                continue;
            }
            if !filter.matches_tags_code(entry.tags_code) {
                continue;
            }
            match log.read(entry.phys_offset, entry.size as usize) {
                Some(message) if !filter.matches_record(&message) => {}
                Some(message) => {
                    bytes += message.len();
                    result.messages.push(message);
                    result.queue_offsets.push(offset + scanned as i64 - 1);
                }
                None => status = GetMessageStatus::MessageWasRemoving,
            }
        }
        if !result.messages.is_empty() {
            status = GetMessageStatus::Found;
        }
        result.status = status;
        result.next_begin_offset = offset + scanned as i64;
        result.suggest_pull_from_slave = last_phys > 0 && log_max - last_phys > memory_budget;
    }

    /// The stored record at a physical offset.
    pub fn look_message_by_offset(&self, phys_offset: i64) -> Option<Bytes> {
        self.inner.commit_log.read_record(phys_offset)
    }

    /// Messages indexed under `key` (a KEYS token or UNIQ_KEY) within `[begin, end]` ms.
    pub fn query_message(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin: i64,
        end: i64,
    ) -> QueryMessageResult {
        let (offsets, ts, phy) = self.inner.index.query(topic, key, max, begin, end);
        QueryMessageResult {
            messages: offsets
                .into_iter()
                .filter_map(|o| self.look_message_by_offset(o))
                .filter(|raw| record_has_key(raw, topic, key))
                .collect(),
            index_last_update_timestamp: ts,
            index_last_update_phyoffset: phy,
        }
    }

    /// Next queue offset to be written (0 for an unknown queue).
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.queues.max_offset(topic, queue_id)
    }

    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner
            .queues
            .find(topic, queue_id)
            .map_or(0, |cq| cq.min_offset())
    }

    /// Store timestamp of the message at a queue offset.
    pub fn message_store_timestamp(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        let entry = self.inner.queues.find(topic, queue_id)?.entry(offset)?;
        if entry.is_blank() {
            return None;
        }
        self.store_timestamp_at(entry.phys_offset)
    }

    fn store_timestamp_at(&self, phys_offset: i64) -> Option<i64> {
        let head = self.inner.commit_log.read(phys_offset, SYS_FLAG_POS + 4)?;
        let pos = store_timestamp_pos(i32_at(&head, SYS_FLAG_POS)?);
        let raw = self.inner.commit_log.read(phys_offset, pos + 8)?;
        i64_at(&raw, pos)
    }

    /// Store time of the oldest message of a queue.
    pub fn earliest_message_time(&self, topic: &str, queue_id: i32) -> Option<i64> {
        self.message_store_timestamp(topic, queue_id, self.min_offset_in_queue(topic, queue_id))
    }

    /// Store time of the oldest message in the store.
    pub fn earliest_message_time_overall(&self) -> Option<i64> {
        let offset = self.inner.commit_log.min_offset();
        match self.inner.commit_log.next_record(offset) {
            crate::commitlog::NextRecord::Record(bytes) => record::peek(&bytes)
                .ok()
                .and_then(|_| self.store_timestamp_at(offset)),
            _ => None,
        }
    }

    /// The queue offset whose message was stored closest to `timestamp` (4.x semantics:
    /// exact match wins, else the nearer neighbour); min or max offset outside the range.
    pub fn offset_in_queue_by_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        let Some(cq) = self.inner.queues.find(topic, queue_id) else {
            return 0;
        };
        let (mut lo, max) = (cq.min_offset(), cq.max_offset());
        if lo >= max {
            return max;
        }
        let ts_at = |o: i64| {
            cq.entry(o)
                .filter(|e| !e.is_blank())
                .and_then(|e| self.store_timestamp_at(e.phys_offset))
        };
        let mut hi = max;
        // First offset stored at or after `timestamp`.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match ts_at(mid) {
                Some(ts) if ts < timestamp => lo = mid + 1,
                _ => hi = mid,
            }
        }
        if lo >= max {
            return max;
        }
        if lo == cq.min_offset() {
            return lo;
        }
        match (ts_at(lo - 1), ts_at(lo)) {
            (Some(before), Some(after))
                if after != timestamp && timestamp - before < after - timestamp =>
            {
                lo - 1
            }
            _ => lo,
        }
    }

    /// The ConsumeQueue entry at a queue offset.
    pub fn consume_queue_entry(&self, topic: &str, queue_id: i32, offset: i64) -> Option<CqEntry> {
        self.inner.queues.find(topic, queue_id)?.entry(offset)
    }
}
