//! `MessageStoreConfig`: RocketMQ's store keys and defaults (protocol.md 6 and 10.1).

use std::path::PathBuf;
use std::time::Duration;

use stellmq_config::properties_config;
use stellmq_config::{ConfigError, ConfigValue};

fn default_store_root() -> PathBuf {
    std::env::var_os("HOME")
        .map_or_else(|| PathBuf::from("."), PathBuf::from)
        .join("store")
}

/// The default `messageDelayLevel`.
pub const DEFAULT_DELAY_LEVELS: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

properties_config! {
    /// Store configuration. Key names are RocketMQ's so a user's `broker.conf` works as is.
    pub struct MessageStoreConfig {
        /// Where the CommitLog, ConsumeQueues, index, checkpoint and config files live.
        store_path_root_dir: PathBuf = "storePathRootDir" => default_store_root(),
        /// Empty: `<storePathRootDir>/commitlog`.
        store_path_commit_log: String = "storePathCommitLog" => String::new(),
        /// Size of one CommitLog segment file in bytes (1 GiB).
        mapped_file_size_commit_log: usize = "mappedFileSizeCommitLog" => 1024 * 1024 * 1024,
        /// Size of one ConsumeQueue file in bytes (300,000 entries of 20 bytes).
        mapped_file_size_consume_queue: usize = "mappedFileSizeConsumeQueue" => 300_000 * 20,
        /// `ASYNC_FLUSH` (acknowledge, then flush in the background) or `SYNC_FLUSH`
        /// (acknowledge after a group commit reached the disk).
        flush_disk_type: FlushDiskType = "flushDiskType" => FlushDiskType::Async,
        /// ASYNC_FLUSH: how often (ms) the CommitLog is flushed.
        flush_interval_commit_log: u64 = "flushIntervalCommitLog" => 500,
        /// ASYNC_FLUSH: dirty pages needed before a flush (except the thorough one).
        flush_commit_log_least_pages: usize = "flushCommitLogLeastPages" => 4,
        /// ASYNC_FLUSH: sleep `flushIntervalCommitLog` between flushes (true, RocketMQ's
        /// default) or also flush as soon as an append leaves `flushCommitLogLeastPages` dirty.
        flush_commit_log_timed: bool = "flushCommitLogTimed" => true,
        /// ASYNC_FLUSH: how often (ms) everything is flushed whatever the page count.
        flush_commit_log_thorough_interval: u64 = "flushCommitLogThoroughInterval" => 10_000,
        /// SYNC_FLUSH and SYNC_MASTER: how long (ms) a send waits for its flush or a slave.
        sync_flush_timeout: u64 = "syncFlushTimeout" => 5_000,
        /// How often (ms) ConsumeQueues and the index are flushed.
        flush_interval_consume_queue: u64 = "flushIntervalConsumeQueue" => 1_000,
        /// Dirty pages of a ConsumeQueue needed before a flush (except the thorough one).
        flush_consume_queue_least_pages: usize = "flushConsumeQueueLeastPages" => 2,
        /// How often (ms) every ConsumeQueue is flushed whatever the page count.
        flush_consume_queue_thorough_interval: u64 = "flushConsumeQueueThoroughInterval" => 60_000,
        /// How often (ms) a snapshot of every ConsumeQueue is written, so that a start after a
        /// crash opens no queue's files (it re-dispatches the CommitLog from the snapshot
        /// instead); 0: never, a crash start reads every queue. (StellMQ key.)
        consume_queue_snapshot_interval: u64 = "consumeQueueSnapshotInterval" => 60_000,
        /// Hours of the day (`04`, or `04;16`) at which expired files are deleted.
        delete_when: String = "deleteWhen" => "04".to_owned(),
        /// Hours a CommitLog file is kept.
        file_reserved_time: u64 = "fileReservedTime" => 72,
        /// Disk use (%) above which files are deleted before their time.
        disk_max_used_space_ratio: u32 = "diskMaxUsedSpaceRatio" => 75,
        /// Disk use (%) above which writes are refused until space returns.
        disk_space_warning_level_ratio: u32 = "diskSpaceWarningLevelRatio" => 90,
        /// Disk use (%) above which files are deleted even while in use.
        disk_space_clean_forcibly_ratio: u32 = "diskSpaceCleanForciblyRatio" => 85,
        /// Past diskSpaceCleanForciblyRatio, delete the oldest files even if not expired.
        clean_file_forcibly_enable: bool = "cleanFileForciblyEnable" => true,
        /// How often (ms) the retention service runs.
        clean_resource_interval: u64 = "cleanResourceInterval" => 10_000,
        /// Pause (ms) between two file deletions of one retention round.
        delete_commit_log_files_interval: u64 = "deleteCommitLogFilesInterval" => 100,
        /// Largest message body (or batch body) accepted, in bytes.
        max_message_size: usize = "maxMessageSize" => 4 * 1024 * 1024,
        /// Check each record's body CRC when recovering the CommitLog.
        check_crc_on_recover: bool = "checkCRCOnRecover" => true,
        /// Index messages by KEYS and UNIQ_KEY for queries by key.
        message_index_enable: bool = "messageIndexEnable" => true,
        /// Hash slots of one index file.
        max_hash_slot_num: u32 = "maxHashSlotNum" => 5_000_000,
        /// Entries of one index file.
        max_index_num: u32 = "maxIndexNum" => 20_000_000,
        /// Bytes one pull returns at most when its messages are in memory.
        max_transfer_bytes_on_message_in_memory: usize = "maxTransferBytesOnMessageInMemory" => 256 * 1024,
        /// Messages one pull returns at most when they are in memory.
        max_transfer_count_on_message_in_memory: usize = "maxTransferCountOnMessageInMemory" => 32,
        /// Bytes one pull returns at most when its messages are on disk only.
        max_transfer_bytes_on_message_in_disk: usize = "maxTransferBytesOnMessageInDisk" => 64 * 1024,
        /// Messages one pull returns at most when they are on disk only.
        max_transfer_count_on_message_in_disk: usize = "maxTransferCountOnMessageInDisk" => 8,
        /// Percent of RAM the newest CommitLog data may use before a read counts as from disk.
        access_message_in_memory_max_ratio: u32 = "accessMessageInMemoryMaxRatio" => 40,
        /// Pre-fault each new CommitLog segment before it is needed.
        warm_mapped_file_enable: bool = "warmMapedFileEnable" => true,
        /// Delay of each level (1 to 18 by default), for delayed messages and retries.
        message_delay_level: String = "messageDelayLevel" => DEFAULT_DELAY_LEVELS.to_owned(),
        /// Controller mode: a send is acknowledged only once every member of the master's
        /// SyncStateSet has it (otherwise once `inSyncReplicas` replicas have it).
        all_ack_in_sync_state_set: bool = "allAckInSyncStateSet" => false,
        /// Controller mode: replicas (the master included) that must have a send before it
        /// is acknowledged, when allAckInSyncStateSet is off (1: the master alone).
        in_sync_replicas: usize = "inSyncReplicas" => 1,
        /// Controller mode: a master whose SyncStateSet is smaller refuses sends
        /// ("in-sync replicas not enough").
        min_in_sync_replicas: usize = "minInSyncReplicas" => 1,
        /// Controller mode: a slave that has not caught up with its master for this long
        /// (ms) leaves the SyncStateSet.
        ha_max_time_slave_not_catchup: u64 = "haMaxTimeSlaveNotCatchup" => 15_000,
        /// HA: each end of a replication connection sends at least this often (ms): the
        /// master a heartbeat frame, the slave its offset.
        ha_send_heartbeat_interval: u64 = "haSendHeartbeatInterval" => 5_000,
        /// HA: a replication connection on which nothing arrived for this long (ms) is
        /// closed (the slave then connects again).
        ha_housekeeping_interval: u64 = "haHousekeepingInterval" => 20_000,
    }
}

/// How the CommitLog reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDiskType {
    /// Acknowledge after the write to the page cache; flush in the background.
    Async,
    /// Acknowledge after a group commit has flushed the message.
    Sync,
}

impl ConfigValue for FlushDiskType {
    const EXPECTED: &'static str = "ASYNC_FLUSH or SYNC_FLUSH";
    fn parse_value(text: &str) -> Option<Self> {
        match text.trim().to_ascii_uppercase().as_str() {
            "ASYNC_FLUSH" => Some(Self::Async),
            "SYNC_FLUSH" => Some(Self::Sync),
            _ => None,
        }
    }
    fn render(&self) -> String {
        match self {
            Self::Async => "ASYNC_FLUSH",
            Self::Sync => "SYNC_FLUSH",
        }
        .to_owned()
    }
}

impl MessageStoreConfig {
    /// Applies a key, also accepting RocketMQ's pre-4.5.2 spellings (`mapedFile...`).
    pub fn set_compat(&mut self, key: &str, value: &str) -> Result<bool, ConfigError> {
        let key = match key {
            "mapedFileSizeCommitLog" => "mappedFileSizeCommitLog",
            "mapedFileSizeConsumeQueue" => "mappedFileSizeConsumeQueue",
            other => other,
        };
        self.set(key, value)
    }

    pub fn flush_type(&self) -> FlushDiskType {
        self.flush_disk_type
    }

    pub fn commit_log_dir(&self) -> PathBuf {
        if self.store_path_commit_log.trim().is_empty() {
            self.store_path_root_dir.join("commitlog")
        } else {
            PathBuf::from(self.store_path_commit_log.trim())
        }
    }

    pub fn consume_queue_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("consumequeue")
    }

    pub fn index_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("index")
    }

    pub fn sync_flush_timeout(&self) -> Duration {
        Duration::from_millis(self.sync_flush_timeout)
    }

    /// Delay of each level in ms (level 1 at index 0).
    pub fn delay_levels(&self) -> Result<Vec<i64>, ConfigError> {
        parse_delay_levels(&self.message_delay_level)
    }

    /// Rejects values the store cannot work with.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let reject = |key: &str, reason: &str| ConfigError::Rejected {
            key: key.to_owned(),
            reason: reason.to_owned(),
        };
        if self.mapped_file_size_commit_log < 64 * 1024 {
            return Err(reject("mappedFileSizeCommitLog", "must be at least 64 KiB"));
        }
        if self.mapped_file_size_consume_queue < 20
            || !self.mapped_file_size_consume_queue.is_multiple_of(20)
        {
            return Err(reject(
                "mappedFileSizeConsumeQueue",
                "must be a positive multiple of 20",
            ));
        }
        if self.max_message_size + 1024 > self.mapped_file_size_commit_log {
            return Err(reject("maxMessageSize", "must fit in one CommitLog file"));
        }
        if self.max_hash_slot_num == 0 || self.max_index_num < 2 {
            return Err(reject("maxIndexNum", "index sizes must be positive"));
        }
        self.delay_levels()?;
        Ok(())
    }
}

/// Parses `1s 5s 10s 1m 2h 1d` into milliseconds.
pub fn parse_delay_levels(text: &str) -> Result<Vec<i64>, ConfigError> {
    text.split_whitespace()
        .map(|level| {
            let invalid = || ConfigError::InvalidValue {
                key: "messageDelayLevel".to_owned(),
                value: level.to_owned(),
                expected: "a number with unit s, m, h or d (e.g. 10s)",
            };
            let unit_at = level.char_indices().last().map_or(0, |(at, _)| at);
            let (digits, unit) = level.split_at_checked(unit_at).ok_or_else(invalid)?;
            let amount: i64 = digits.parse().map_err(|_| invalid())?;
            let unit_ms = match unit {
                "s" => 1_000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                _ => return Err(invalid()),
            };
            Ok(amount * unit_ms)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_levels_parse() {
        let levels = parse_delay_levels(DEFAULT_DELAY_LEVELS).expect("valid");
        assert_eq!(levels.len(), 18);
        assert_eq!(levels[0], 1_000);
        assert_eq!(levels[4], 60_000);
        assert_eq!(levels[17], 7_200_000);
        assert!(parse_delay_levels("1x").is_err());
        assert!(parse_delay_levels("s").is_err());
    }

    #[test]
    fn compat_keys_and_validation() {
        let mut c = MessageStoreConfig::default();
        assert_eq!(c.set_compat("mapedFileSizeCommitLog", "1048576"), Ok(true));
        assert_eq!(c.mapped_file_size_commit_log, 1_048_576);
        assert!(
            c.validate().is_err(),
            "4 MiB messages do not fit in 1 MiB files"
        );
        c.max_message_size = 512 * 1024;
        c.validate().expect("valid");
        c.set("flushDiskType", "sync_flush").expect("set");
        assert_eq!(c.flush_type(), FlushDiskType::Sync);
        assert!(
            c.set("flushDiskType", "SOMETIMES").is_err(),
            "a clear error"
        );
    }
}
