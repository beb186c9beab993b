//! Retention (protocol.md 6.2): CommitLog files older than `fileReservedTime` hours are deleted at
//! the hours of `deleteWhen` (UTC), or at once when disk use passes `diskMaxUsedSpaceRatio`;
//! ConsumeQueue and index files wholly below the CommitLog's new start follow. Past
//! `diskSpaceWarningLevelRatio` writes are refused until space returns.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use crate::inner::Inner;

/// Files deleted per round at most (Java's DELETE_FILES_BATCH_MAX).
const DELETE_FILES_BATCH_MAX: usize = 10;

fn current_utc_hour() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 3600 % 24)
}

fn is_delete_time(delete_when: &str) -> bool {
    let hour = current_utc_hour();
    delete_when
        .split(';')
        .filter_map(|h| h.trim().parse::<u64>().ok())
        .any(|h| h == hour)
}

/// One retention round; returns the number of CommitLog files deleted.
pub(crate) fn clean_once(inner: &Inner, manual: bool) -> usize {
    let config = &inner.config;
    let usage = (inner.disk_usage)(&config.commit_log_dir()).unwrap_or(0.0) * 100.0;
    let full = usage >= f64::from(config.disk_space_warning_level_ratio);
    let was_full = inner.disk_full.swap(full, Ordering::AcqRel);
    if full && !was_full {
        tracing::error!(
            event = "DISK_FULL",
            usage = format!("{usage:.1}%"),
            "disk almost full; refusing writes"
        );
    } else if !full && was_full {
        tracing::info!(
            event = "DISK_SPACE_OK",
            usage = format!("{usage:.1}%"),
            "disk space back; accepting writes"
        );
    }
    let pressure = usage >= f64::from(config.disk_max_used_space_ratio);
    let forcibly = config.clean_file_forcibly_enable
        && usage >= f64::from(config.disk_space_clean_forcibly_ratio);
    if !(manual || pressure || is_delete_time(&config.delete_when)) {
        return 0;
    }
    let reserved = Duration::from_secs(config.file_reserved_time * 3600);
    let now = SystemTime::now();
    let dispatched_to = inner.dispatcher.reput_from();
    let removed = inner
        .commit_log
        .segments()
        .remove_front(DELETE_FILES_BATCH_MAX, |file| {
            // Never delete what the dispatcher has not read yet.
            if file.end() > dispatched_to {
                return false;
            }
            let expired = std::fs::metadata(file.path())
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age > reserved);
            expired || forcibly
        });
    for file in &removed {
        tracing::info!(event = "COMMITLOG_FILE_DELETED", file = %file.path().display(), usage = format!("{usage:.1}%"), "retention deleted a CommitLog file");
        if let Err(e) = file.destroy() {
            tracing::warn!(file = %file.path().display(), error = %e, "cannot delete CommitLog file");
        }
    }
    let min = inner.commit_log.min_offset();
    for cq in inner.queues.all() {
        cq.delete_expired(min);
    }
    inner.index.delete_expired(min);
    removed.len()
}
