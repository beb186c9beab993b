//! The stable mutation driver: mutates each target's corpus for a while and saves every
//! input that panics, aborts, hangs or runs slowly to `fuzz/artifacts/<target>/`.
//!
//! ```text
//! fuzz [TARGET...|all] [--seconds N] [--seed N] [--max-len BYTES] [--timeout SECS]
//!      [--slow-ms MS] [--memory-mb MB] [--corpus DIR] [--artifacts DIR]
//! fuzz --list                      the targets
//! fuzz --write-seeds               rewrite corpus/<target>/seed-* from the encoders
//! fuzz [--memory-mb MB] --replay TARGET FILE...   run files through a target once
//! ```
//!
//! The process that is started supervises: for each target it runs a worker (this binary
//! with `--worker`) that fuzzes in-process and catches panics. A worker that dies anyway
//! (stack overflow, allocation over `--memory-mb`, a hang past `--timeout`) leaves its last
//! input in `artifacts/<target>/.current`, which the supervisor saves; then it starts
//! another worker for the rest of the target's time.
#![allow(clippy::print_stdout)] // a command-line tool: its report goes to stdout

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Instant;

use stellmq_fuzz::{seeds, target, Target, TARGETS};

/// Exit code of a worker whose watchdog saw one input run past the timeout.
const EXIT_TIMEOUT: i32 = 3;

/// Worker deaths after which a target's run stops early.
const MAX_DEATHS: u64 = 10;

mod memory;
use memory::LIMIT;
mod supervisor;
mod worker;

#[derive(Clone)]
struct Options {
    targets: Vec<&'static Target>,
    seconds: u64,
    seed: u64,
    max_len: usize,
    timeout: u64,
    slow_ms: u64,
    memory_mb: usize,
    corpus: PathBuf,
    artifacts: PathBuf,
}

enum Mode {
    Fuzz(Options),
    Worker(Options),
    List,
    WriteSeeds(PathBuf),
    Replay(&'static Target, Vec<PathBuf>),
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn parse_args(args: Vec<String>) -> Result<Mode, String> {
    let mut opts = Options {
        targets: Vec::new(),
        seconds: 60,
        seed: seed_from_clock(),
        max_len: 64 * 1024,
        timeout: 10,
        slow_ms: 250,
        memory_mb: 2048,
        corpus: crate_dir().join("corpus"),
        artifacts: crate_dir().join("artifacts"),
    };
    let mut worker = false;
    let mut args = args.into_iter();
    let number = |flag: &str, value: Option<String>| -> Result<u64, String> {
        value
            .as_deref()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{flag} needs a number"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--list" => return Ok(Mode::List),
            "--write-seeds" => return Ok(Mode::WriteSeeds(opts.corpus)),
            "--replay" => {
                LIMIT.store(opts.memory_mb.saturating_mul(1 << 20), Ordering::Relaxed);
                let name = args.next().ok_or("--replay needs a target")?;
                let t = target(&name).ok_or_else(|| format!("no target '{name}'"))?;
                return Ok(Mode::Replay(t, args.map(PathBuf::from).collect()));
            }
            "--worker" => worker = true,
            "--seconds" => opts.seconds = number(&arg, args.next())?,
            "--seed" => opts.seed = number(&arg, args.next())?,
            "--max-len" => opts.max_len = number(&arg, args.next())? as usize,
            "--timeout" => opts.timeout = number(&arg, args.next())?,
            "--slow-ms" => opts.slow_ms = number(&arg, args.next())?,
            "--memory-mb" => opts.memory_mb = number(&arg, args.next())? as usize,
            "--corpus" => opts.corpus = args.next().ok_or("--corpus needs a dir")?.into(),
            "--artifacts" => opts.artifacts = args.next().ok_or("--artifacts needs a dir")?.into(),
            "all" => opts.targets.extend(TARGETS.iter()),
            name if !name.starts_with('-') => {
                opts.targets
                    .push(target(name).ok_or_else(|| format!("no target '{name}'"))?);
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if opts.targets.is_empty() {
        opts.targets.extend(TARGETS.iter());
    }
    Ok(if worker {
        Mode::Worker(opts)
    } else {
        Mode::Fuzz(opts)
    })
}

fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

fn main() -> ExitCode {
    let mode = match parse_args(std::env::args().skip(1).collect()) {
        Ok(mode) => mode,
        Err(e) => {
            eprintln!("fuzz: {e}\n(see the top of fuzz/src/bin/fuzz/main.rs or fuzz/README.md)");
            return ExitCode::from(2);
        }
    };
    match mode {
        Mode::List => {
            for t in TARGETS {
                println!("{}", t.name);
            }
            ExitCode::SUCCESS
        }
        Mode::WriteSeeds(dir) => write_seeds(&dir),
        Mode::Replay(t, files) => replay(t, &files),
        Mode::Worker(opts) => worker::worker(&opts),
        Mode::Fuzz(opts) => supervisor::supervise(&opts),
    }
}

fn write_seeds(dir: &Path) -> ExitCode {
    for t in TARGETS {
        let target_dir = dir.join(t.name);
        let written = fs::create_dir_all(&target_dir).and_then(|()| {
            let seeds = seeds::for_target(t.name);
            for (name, bytes) in &seeds {
                fs::write(target_dir.join(format!("seed-{name}")), bytes)?;
            }
            Ok(seeds.len())
        });
        match written {
            Ok(n) => println!("{:<20} {n} seeds", t.name),
            Err(e) => {
                eprintln!("{}: {e}", target_dir.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn replay(t: &Target, files: &[PathBuf]) -> ExitCode {
    for file in files {
        match fs::read(file) {
            Ok(bytes) => {
                let started = Instant::now();
                let accepted = (t.run)(&bytes);
                println!(
                    "{}: {} in {:?}",
                    file.display(),
                    if accepted { "accepted" } else { "refused" },
                    started.elapsed()
                );
            }
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
