//! `storeinspect`: prints a store's CommitLog segments, ConsumeQueues and records, offline
//! (it reads the files directly and never opens the store for writing).
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};

use bytes::Bytes;
use clap::{Parser, Subcommand};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_store::consume_queue::{CqEntry, ENTRY_SIZE};
use stellmq_store::recovery::{check_record_at, Damage, Next};

#[derive(Parser, Debug)]
#[command(
    name = "storeinspect",
    about = "Inspect a StellMQ/RocketMQ store directory offline"
)]
struct Cli {
    /// storePathRootDir.
    #[arg(short = 'd', long = "dir")]
    dir: PathBuf,
    #[command(subcommand)]
    command: What,
}

#[derive(Subcommand, Debug)]
enum What {
    /// CommitLog segments with their record counts and the end of valid data.
    Segments,
    /// ConsumeQueues: topic, queue id, entries.
    Queues,
    /// Records of the CommitLog from a physical offset.
    Records {
        #[arg(long, default_value_t = 0)]
        from: i64,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
}

fn segments(dir: &Path) -> std::io::Result<Vec<(i64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir.join("commitlog"))? {
        let path = entry?.path();
        if let Some(base) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<i64>().ok())
        {
            out.push((base, path));
        }
    }
    out.sort();
    Ok(out)
}

/// Walks one segment's records with the store's own checks (as recovery does): (position,
/// decoded record or what is wrong); returns where valid data ends and whether a blank ends
/// the segment.
fn walk(
    base: i64,
    data: &[u8],
    mut visit: impl FnMut(usize, Result<MessageRecord, Damage>) -> bool,
) -> (usize, bool) {
    let mut pos = 0;
    loop {
        match check_record_at(data, pos, base, true) {
            Ok(Next::Record(len)) => {
                let record =
                    MessageRecord::decode(&Bytes::copy_from_slice(&data[pos..pos + len]), true)
                        .map(|(r, _)| r)
                        .map_err(Damage::Undecodable);
                if !visit(pos, record) {
                    return (pos, false);
                }
                pos += len;
            }
            Ok(Next::Blank) => return (pos, true),
            Ok(Next::Nothing) => return (pos, false),
            Err(damage) => {
                visit(pos, Err(damage));
                return (pos, false);
            }
        }
    }
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("storeinspect: {e}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> std::io::Result<()> {
    match cli.command {
        What::Segments => {
            stellmq_tools::outln!(
                "{:<22} {:>12} {:>10} {:>14}  state",
                "#Segment",
                "#Size",
                "#Records",
                "#Valid bytes"
            );
            for (base, path) in segments(&cli.dir)? {
                let data = std::fs::read(&path)?;
                let mut count = 0;
                let (end, blank) = walk(base, &data, |_, r| {
                    count += usize::from(r.is_ok());
                    true
                });
                let state = if blank {
                    "full"
                } else if end == 0 {
                    "empty"
                } else {
                    "current"
                };
                stellmq_tools::outln!(
                    "{base:020}   {:>12} {count:>10} {end:>14}  {state}",
                    data.len()
                );
            }
        }
        What::Queues => {
            stellmq_tools::outln!("{:<48} {:>6} {:>12}", "#Topic", "#QID", "#Entries");
            let root = cli.dir.join("consumequeue");
            let mut topics: Vec<_> = std::fs::read_dir(&root)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .collect();
            topics.sort();
            for topic in topics {
                let mut queues: Vec<_> = std::fs::read_dir(&topic)?
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .collect();
                queues.sort();
                for queue in queues {
                    let mut entries = 0u64;
                    for file in std::fs::read_dir(&queue)?.filter_map(Result::ok) {
                        let data = std::fs::read(file.path())?;
                        entries += data
                            .chunks_exact(ENTRY_SIZE)
                            .map(CqEntry::decode)
                            .take_while(CqEntry::is_valid)
                            .count() as u64;
                    }
                    stellmq_tools::outln!(
                        "{:<48} {:>6} {entries:>12}",
                        topic.file_name().and_then(|n| n.to_str()).unwrap_or(""),
                        queue.file_name().and_then(|n| n.to_str()).unwrap_or("")
                    );
                }
            }
        }
        What::Records { from, limit } => {
            let mut shown = 0;
            for (base, path) in segments(&cli.dir)? {
                let data = std::fs::read(&path)?;
                if base + data.len() as i64 <= from {
                    continue;
                }
                walk(base, &data, |pos, record| {
                    let phys = base + pos as i64;
                    if phys < from {
                        return true;
                    }
                    match record {
                        Ok(m) => stellmq_tools::outln!(
                            "{phys:>14} topic={} queue={} offset={} size={} born={} stored={} keys={} tags={} body={:?}",
                            m.topic,
                            m.head.queue_id,
                            m.head.queue_offset,
                            m.body.len(),
                            m.head.born_timestamp,
                            m.head.store_timestamp,
                            m.properties.get("KEYS").unwrap_or(""),
                            m.properties.get("TAGS").unwrap_or(""),
                            String::from_utf8_lossy(&m.body[..m.body.len().min(64)])
                        ),
                        Err(e) => stellmq_tools::outln!("{phys:>14} INVALID: {e}"),
                    }
                    shown += 1;
                    shown < limit
                });
                if shown >= limit {
                    break;
                }
            }
        }
    }
    Ok(())
}
