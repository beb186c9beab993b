//! Shared helpers for store tests.
#![allow(dead_code)]

use std::path::Path;

use bytes::Bytes;
use stellmq_protocol::message::{MessageRecord, Properties};
use stellmq_store::{MessageStoreConfig, PutMessage};

/// A small-file configuration so tests roll segments quickly.
pub fn small_config(root: &Path) -> MessageStoreConfig {
    MessageStoreConfig {
        store_path_root_dir: root.to_owned(),
        mapped_file_size_commit_log: 64 * 1024,
        mapped_file_size_consume_queue: 20 * 50,
        max_message_size: 16 * 1024,
        max_hash_slot_num: 64,
        max_index_num: 200,
        flush_interval_commit_log: 20,
        flush_interval_consume_queue: 20,
        clean_resource_interval: 50,
        // Real disk usage must not interfere with tests.
        disk_space_warning_level_ratio: 100,
        disk_max_used_space_ratio: 100,
        disk_space_clean_forcibly_ratio: 100,
        delete_when: "99".into(),
        ..Default::default()
    }
}

pub fn message(topic: &str, queue_id: i32, body: &[u8], keys: &str, tags: &str) -> PutMessage {
    let mut props = Properties::new();
    if !keys.is_empty() {
        props.insert("KEYS", keys);
    }
    if !tags.is_empty() {
        props.insert("TAGS", tags);
    }
    PutMessage {
        topic: topic.to_owned(),
        queue_id,
        flag: 0,
        body: Bytes::copy_from_slice(body),
        properties: props.encode(),
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:40000".parse().expect("addr"),
        store_host: "127.0.0.1:10911".parse().expect("addr"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        wait_store_ok: true,
    }
}

pub fn decode(bytes: &Bytes) -> MessageRecord {
    MessageRecord::decode(bytes, true).expect("valid record").0
}
