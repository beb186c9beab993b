//! Config files written the way RocketMQ writes them, and read back with a fallback.

use std::path::{Path, PathBuf};

/// Writes a config file the way RocketMQ does: new content to `<file>.tmp`, the previous
/// content to `<file>.bak`, then the temp file renamed over the original (atomic on POSIX).
pub fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = with_suffix(path, ".tmp");
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
    }
    if path.exists() {
        std::fs::copy(path, with_suffix(path, ".bak"))?;
    }
    std::fs::rename(&tmp, path)?;
    // The rename is only durable once the directory entry is.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Reads a config file, falling back to `<file>.bak` when the file is missing or `parse`
/// rejects it. `Ok(None)` when neither exists.
pub fn read_with_backup<T>(
    path: &Path,
    parse: impl Fn(&[u8]) -> Option<T>,
) -> std::io::Result<Option<T>> {
    for candidate in [path.to_path_buf(), with_suffix(path, ".bak")] {
        match std::fs::read(&candidate) {
            Ok(bytes) => match parse(&bytes) {
                Some(value) => return Ok(Some(value)),
                None => {
                    tracing::warn!(file = %candidate.display(), "config file is unreadable, trying its backup")
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_keeps_a_backup_and_reads_it_back() {
        let dir = std::env::temp_dir().join(format!("stellmq-config-{}", std::process::id()));
        let path = dir.join("sub/topics.json");
        write_atomically(&path, b"one").expect("write");
        write_atomically(&path, b"two").expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"two");
        assert_eq!(
            std::fs::read(with_suffix(&path, ".bak")).expect("read"),
            b"one"
        );
        std::fs::write(&path, b"garbage").expect("corrupt");
        let parsed =
            read_with_backup(&path, |b| (b != b"garbage").then(|| b.to_vec())).expect("io");
        assert_eq!(parsed.as_deref(), Some(&b"one"[..]));
        assert_eq!(
            read_with_backup(&dir.join("none"), |b| Some(b.to_vec())).expect("io"),
            None
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
