//! Where the ACL files are, as RocketMQ finds them: `<rocketmqHome>/conf/plain_acl.yml`
//! plus every `*.yml` / `*.yaml` under `<rocketmqHome>/conf/acl/`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::AclError;
use crate::file::PlainAclFile;

/// Larger files are refused rather than read into memory.
pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Deeper directories under `conf/acl` are not searched.
const MAX_DEPTH: usize = 8;

/// RocketMQ's home: ROCKETMQ_HOME, else STELLMQ_HOME (set by the distribution scripts), else
/// the working directory.
pub fn default_home() -> String {
    ["ROCKETMQ_HOME", "STELLMQ_HOME"]
        .into_iter()
        .find_map(|key| std::env::var(key).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| ".".to_owned())
}

/// The files of one ACL configuration.
#[derive(Debug, Clone)]
pub struct AclSource {
    default_file: PathBuf,
    dir: PathBuf,
}

/// What a file looked like when last read: a change of any part means read it again.
pub type Fingerprint = Vec<(PathBuf, Option<SystemTime>, u64)>;

impl AclSource {
    /// The files of a RocketMQ home directory.
    pub fn in_home(home: &Path) -> AclSource {
        AclSource {
            default_file: home.join("conf").join("plain_acl.yml"),
            dir: home.join("conf").join("acl"),
        }
    }

    pub fn default_file(&self) -> &Path {
        &self.default_file
    }

    /// Creates an empty default file if there is none, as RocketMQ does, so edits have a
    /// place to go.
    pub fn ensure_default_file(&self) -> Result<(), AclError> {
        if self.default_file.exists() {
            return Ok(());
        }
        let write = |source| AclError::Write {
            path: self.default_file.clone(),
            source,
        };
        if let Some(dir) = self.default_file.parent() {
            std::fs::create_dir_all(dir).map_err(write)?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.default_file)
            .map(drop)
            .map_err(write)
    }

    /// Every ACL file, those of `conf/acl` first (sorted), then the default file.
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        collect_yaml(&self.dir, 0, &mut paths);
        paths.sort();
        if self.default_file.exists() && !paths.contains(&self.default_file) {
            paths.push(self.default_file.clone());
        }
        paths
    }

    pub fn fingerprint(&self) -> Fingerprint {
        self.paths()
            .into_iter()
            .map(|path| {
                let meta = std::fs::metadata(&path).ok();
                let modified = meta.as_ref().and_then(|m| m.modified().ok());
                let len = meta.map(|m| m.len()).unwrap_or(0);
                (path, modified, len)
            })
            .collect()
    }

    /// Reads and parses every file.
    pub fn load(&self) -> Result<Vec<(PathBuf, PlainAclFile)>, AclError> {
        self.paths()
            .into_iter()
            .map(|path| {
                let file = read_file(&path)?;
                Ok((path, file))
            })
            .collect()
    }
}

/// Reads one ACL file (bounded in size).
pub fn read_file(path: &Path) -> Result<PlainAclFile, AclError> {
    let read = |source| AclError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(read)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(AclError::Invalid {
            path: path.to_owned(),
            reason: format!("larger than {MAX_FILE_BYTES} bytes"),
        });
    }
    PlainAclFile::parse(&text, path)
}

fn collect_yaml(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && depth < MAX_DEPTH {
            collect_yaml(&path, depth + 1, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            out.push(path);
        }
    }
}
