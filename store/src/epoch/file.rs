//! [`EpochList`] persisted as RocketMQ 5 persists its epoch cache (`CheckpointFile`):
//!
//! ```text
//! 2              <- number of entries
//! 1780571327     <- CRC-32 (IEEE, & 0x7FFFFFFF) of the entry lines below, each with its "\n"
//! 1-0            <- epoch-startOffset
//! 2-104857
//! ```
//!
//! in `<storePathRootDir>/epochFileCheckpoint`. A write first copies the previous file to
//! `epochFileCheckpoint.bak` (RocketMQ's `MixAll.string2File`), then replaces the file
//! through a temp file and a rename, fsynced. Reading takes the file, or the `.bak` when the
//! file is missing, empty or damaged (a wrong count or checksum, a line that is no entry); a
//! checksum of 0 is not checked, as in RocketMQ. An empty list removes both files (RocketMQ
//! writes nothing for one, which would let the `.bak` bring truncated entries back).
//!
//! Every method that changes the list writes the file before it returns: blocking I/O.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use stellmq_config::write_atomically;
use stellmq_protocol::message::body_crc;

use super::entries::{EpochList, EpochListError};

/// The epoch file's name under `storePathRootDir`.
pub const EPOCH_FILE: &str = "epochFileCheckpoint";

/// Why the epoch file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum EpochFileError {
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} and its .bak are both damaged ({reason}); the broker cannot know which \
         master terms its CommitLog holds. Restore one, or remove both to start without \
         an epoch history (the controller then treats this broker as empty-handed)"
    )]
    Damaged { path: PathBuf, reason: String },
    #[error("{0}")]
    Refused(#[from] EpochListError),
}

/// The epoch list and its file; cheap to share behind an `Arc`.
pub struct EpochFile {
    path: PathBuf,
    list: Mutex<EpochList>,
}

impl EpochFile {
    /// Reads `<root>/epochFileCheckpoint` (or its `.bak`); a store without either has an
    /// empty list.
    pub fn open(root: &Path) -> Result<Self, EpochFileError> {
        let path = root.join(EPOCH_FILE);
        let list = read(&path)?;
        Ok(Self {
            path,
            list: Mutex::new(list),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A copy of the entries (the last one's end open).
    pub fn list(&self) -> EpochList {
        self.list.lock().clone()
    }

    /// A copy with the last entry ending at the log's `max_offset` (what a broker tells a
    /// peer or a tool).
    pub fn list_ending_at(&self, max_offset: i64) -> EpochList {
        let mut list = self.list();
        list.set_last_end(max_offset);
        list
    }

    /// -1 when there is no entry.
    pub fn last_epoch(&self) -> i32 {
        self.list.lock().last_epoch()
    }

    /// Records a new master term starting at `start_offset` and writes the file. `Ok(false)`
    /// when the last term wrote nothing (see [`EpochList::append`]).
    pub fn append(&self, epoch: i32, start_offset: i64) -> Result<bool, EpochFileError> {
        let mut list = self.list.lock();
        let mut changed = list.clone();
        if !changed.append(epoch, start_offset)? {
            return Ok(false);
        }
        write(&self.path, &changed)?;
        *list = changed;
        Ok(true)
    }

    /// Drops the terms that start at or beyond `offset` (the log was cut there).
    pub fn truncate_suffix_by_offset(&self, offset: i64) -> Result<(), EpochFileError> {
        self.change(|l| l.truncate_suffix_by_offset(offset))
    }

    /// Drops the terms of `epoch` and later.
    pub fn truncate_suffix_by_epoch(&self, epoch: i32) -> Result<(), EpochFileError> {
        self.change(|l| l.truncate_suffix_by_epoch(epoch))
    }

    /// Drops the terms wholly below `offset` (retention removed their bytes).
    pub fn truncate_prefix_by_offset(&self, offset: i64) -> Result<(), EpochFileError> {
        self.change(|l| l.truncate_prefix_by_offset(offset))
    }

    /// Replaces the whole list (a slave adopting its master's history up to where it is).
    pub fn replace(&self, new: EpochList) -> Result<(), EpochFileError> {
        self.change(|l| {
            let changed = *l != new;
            *l = EpochList::from_pairs(new.entries().iter().map(|e| (e.epoch, e.start_offset)));
            changed
        })
    }

    fn change(&self, edit: impl FnOnce(&mut EpochList) -> bool) -> Result<(), EpochFileError> {
        let mut list = self.list.lock();
        let mut changed = list.clone();
        if edit(&mut changed) {
            write(&self.path, &changed)?;
            *list = changed;
        }
        Ok(())
    }
}

/// The file's text for `list`.
pub fn encode(list: &EpochList) -> String {
    let mut lines = String::new();
    for e in list.entries() {
        lines.push_str(&format!("{}-{}\n", e.epoch, e.start_offset));
    }
    format!(
        "{}\n{}\n{lines}",
        list.entries().len(),
        body_crc(lines.as_bytes())
    )
}

/// Parses the file's text; the reason when it is damaged.
pub fn decode(text: &str) -> Result<EpochList, String> {
    let mut lines = text.lines();
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("no entry count on the first line")?;
    let crc: i64 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("no checksum on the second line")?;
    let mut body = String::new();
    let mut pairs = Vec::new();
    for line in lines {
        body.push_str(line);
        body.push('\n');
        let pair = line
            .split_once('-')
            .and_then(|(e, s)| Some((e.parse::<i32>().ok()?, s.parse::<i64>().ok()?)))
            .filter(|(e, s)| *e >= 0 && *s >= 0)
            .ok_or_else(|| format!("line {line:?} is no epoch-startOffset entry"))?;
        pairs.push(pair);
    }
    if pairs.len() != count {
        return Err(format!("{count} entries announced, {} found", pairs.len()));
    }
    if crc != 0 && crc != i64::from(body_crc(body.as_bytes())) {
        return Err("checksum mismatch".into());
    }
    Ok(EpochList::from_pairs(pairs))
}

fn bak_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".bak");
    PathBuf::from(name)
}

fn read(path: &Path) -> Result<EpochList, EpochFileError> {
    let mut reasons = Vec::new();
    for candidate in [path.to_path_buf(), bak_path(path)] {
        let text = match std::fs::read(&candidate) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(EpochFileError::Io {
                    what: "read",
                    path: candidate,
                    source,
                })
            }
        };
        match std::str::from_utf8(&text)
            .map_err(|_| "not UTF-8 text".to_owned())
            .and_then(decode)
        {
            Ok(list) if !list.is_empty() => {
                if !reasons.is_empty() {
                    tracing::warn!(file = %path.display(), reasons = ?reasons, "epoch file damaged; its .bak used");
                }
                return Ok(list);
            }
            Ok(_) => {}
            Err(reason) => reasons.push(format!("{}: {reason}", candidate.display())),
        }
    }
    if reasons.is_empty() {
        return Ok(EpochList::default());
    }
    Err(EpochFileError::Damaged {
        path: path.to_owned(),
        reason: reasons.join("; "),
    })
}

fn write(path: &Path, list: &EpochList) -> Result<(), EpochFileError> {
    let io = |what| {
        move |source| EpochFileError::Io {
            what,
            path: path.to_owned(),
            source,
        }
    };
    if list.is_empty() {
        for p in [path.to_path_buf(), bak_path(path)] {
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("remove")(e)),
                _ => {}
            }
        }
        return Ok(());
    }
    write_atomically(path, encode(list).as_bytes()).map_err(io("write"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_rocketmqs() {
        let list = EpochList::from_pairs([(1, 0), (2, 104857)]);
        let text = encode(&list);
        let lines = "1-0\n2-104857\n";
        assert_eq!(text, format!("2\n{}\n{lines}", body_crc(lines.as_bytes())));
        assert_eq!(decode(&text), Ok(list));
        // A checksum of 0 is not checked, as in RocketMQ.
        assert_eq!(decode("1\n0\n3-77\n").map(|l| l.last_epoch()), Ok(3));
    }

    #[test]
    fn damaged_text_is_named() {
        assert!(decode("").is_err());
        assert!(decode("2\n0\n1-0\n").unwrap_err().contains("2 entries"));
        assert!(decode("1\n12345\n1-0\n").unwrap_err().contains("checksum"));
        assert!(decode("1\n0\nbanana\n").unwrap_err().contains("banana"));
        assert!(decode("1\n0\n-1-0\n").is_err());
    }

    #[test]
    fn persists_appends_and_truncations_with_a_backup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = EpochFile::open(dir.path()).expect("open");
        assert_eq!(file.last_epoch(), -1);
        assert!(file.append(1, 0).expect("append"));
        assert!(file.append(2, 500).expect("append"));
        assert!(matches!(
            file.append(2, 900),
            Err(EpochFileError::Refused(_))
        ));
        let reopened = EpochFile::open(dir.path()).expect("reopen");
        assert_eq!(reopened.list(), file.list());
        assert_eq!(
            reopened.list_ending_at(700).last().map(|e| e.end_offset),
            Some(700)
        );
        // The .bak holds the version before the last write.
        let bak = std::fs::read_to_string(dir.path().join("epochFileCheckpoint.bak")).expect("bak");
        assert_eq!(decode(&bak).map(|l| l.last_epoch()), Ok(1));
        file.truncate_suffix_by_offset(400).expect("truncate");
        assert_eq!(EpochFile::open(dir.path()).expect("reopen").last_epoch(), 1);
        file.truncate_suffix_by_epoch(1).expect("truncate all");
        assert!(!dir.path().join(EPOCH_FILE).exists());
        assert!(EpochFile::open(dir.path())
            .expect("reopen")
            .list()
            .is_empty());
    }

    #[test]
    fn a_damaged_file_falls_back_to_its_backup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = EpochFile::open(dir.path()).expect("open");
        file.append(1, 0).expect("append");
        file.append(3, 100).expect("append");
        let path = dir.path().join(EPOCH_FILE);
        // Torn write of the newest version: the .bak (epoch 1 only) is used.
        std::fs::write(&path, "2\n99\n1-0\n3-1").expect("damage");
        let reopened = EpochFile::open(dir.path()).expect("reopen from .bak");
        assert_eq!(reopened.last_epoch(), 1);
        // Both damaged: an error naming both, never a silent empty history.
        std::fs::write(bak_path(&path), "garbage").expect("damage bak");
        let err = EpochFile::open(dir.path()).err().expect("damaged");
        assert!(matches!(err, EpochFileError::Damaged { .. }), "{err}");
        assert!(err.to_string().contains(".bak"), "{err}");
        // A missing file with a good .bak: the .bak.
        std::fs::remove_file(&path).expect("rm");
        std::fs::write(bak_path(&path), encode(&EpochList::from_pairs([(5, 0)]))).expect("bak");
        assert_eq!(
            EpochFile::open(dir.path()).expect("bak only").last_epoch(),
            5
        );
    }
}
