//! The supervisor: one worker process per target, saving what a dead worker left.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stellmq_fuzz::Target;

use super::*;

#[derive(Default, Clone)]
pub(crate) struct Stats {
    pub(crate) tried: u64,
    pub(crate) accepted: u64,
    pub(crate) panics: u64,
    pub(crate) distinct_panics: u64,
    pub(crate) slow: u64,
    pub(crate) slowest_us: u64,
}

impl Stats {
    pub(crate) fn line(&self) -> String {
        format!(
            "STATS {} {} {} {} {} {}",
            self.tried,
            self.accepted,
            self.panics,
            self.distinct_panics,
            self.slow,
            self.slowest_us
        )
    }

    pub(crate) fn parse(line: &str) -> Option<Self> {
        let mut n = line
            .strip_prefix("STATS ")?
            .split(' ')
            .map(str::parse::<u64>);
        let mut next = || n.next()?.ok();
        Some(Self {
            tried: next()?,
            accepted: next()?,
            panics: next()?,
            distinct_panics: next()?,
            slow: next()?,
            slowest_us: next()?,
        })
    }

    pub(crate) fn add(&mut self, other: &Stats) {
        self.tried += other.tried;
        self.accepted += other.accepted;
        self.panics += other.panics;
        self.distinct_panics += other.distinct_panics;
        self.slow += other.slow;
        self.slowest_us = self.slowest_us.max(other.slowest_us);
    }
}

pub(crate) struct Summary {
    name: &'static str,
    stats: Stats,
    seconds: f64,
    crashes: u64,
    timeouts: u64,
}

pub(crate) fn supervise(opts: &Options) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("fuzz: cannot find my own executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut summaries = Vec::new();
    for (i, t) in opts.targets.iter().enumerate() {
        eprintln!("== {} for {} s", t.name, opts.seconds);
        summaries.push(supervise_target(
            &exe,
            opts,
            t,
            opts.seed.wrapping_add(i as u64),
        ));
    }
    println!(
        "\n{:<20} {:>12} {:>10} {:>8} {:>7} {:>7} {:>8} {:>5} {:>11}",
        "target",
        "inputs",
        "accepted",
        "seconds",
        "panics",
        "crashes",
        "timeouts",
        "slow",
        "slowest ms"
    );
    let mut findings = 0;
    for s in &summaries {
        println!(
            "{:<20} {:>12} {:>10} {:>8.0} {:>7} {:>7} {:>8} {:>5} {:>11.1}",
            s.name,
            s.stats.tried,
            s.stats.accepted,
            s.seconds,
            s.stats.distinct_panics,
            s.crashes,
            s.timeouts,
            s.stats.slow,
            s.stats.slowest_us as f64 / 1000.0
        );
        findings += s.stats.panics + s.crashes + s.timeouts + s.stats.slow;
    }
    println!(
        "(seed {}; findings in {})",
        opts.seed,
        opts.artifacts.display()
    );
    if findings > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

pub(crate) fn supervise_target(exe: &Path, opts: &Options, t: &Target, seed: u64) -> Summary {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(opts.seconds);
    let mut summary = Summary {
        name: t.name,
        stats: Stats::default(),
        seconds: 0.0,
        crashes: 0,
        timeouts: 0,
    };
    let dir = opts.artifacts.join(t.name);
    for restart in 0u64.. {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_millis()
            .div_ceil(1000);
        // Past a few deaths the artifacts say enough; fix those first.
        if left == 0 || summary.crashes + summary.timeouts >= MAX_DEATHS {
            break;
        }
        let child = Command::new(exe)
            .arg("--worker")
            .arg(t.name)
            .args(["--seconds", &left.to_string()])
            .args(["--seed", &seed.wrapping_add(restart * 7919).to_string()])
            .args(["--max-len", &opts.max_len.to_string()])
            .args(["--timeout", &opts.timeout.to_string()])
            .args(["--slow-ms", &opts.slow_ms.to_string()])
            .args(["--memory-mb", &opts.memory_mb.to_string()])
            .arg("--corpus")
            .arg(&opts.corpus)
            .arg("--artifacts")
            .arg(&opts.artifacts)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                eprintln!("fuzz: cannot start a worker: {e}");
                break;
            }
        };
        let last_stats = Arc::new(Mutex::new(Stats::default()));
        let stdout_reader = child.stdout.take().map(|out| {
            let last_stats = last_stats.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if let (Some(stats), Ok(mut last)) = (Stats::parse(&line), last_stats.lock()) {
                        *last = stats;
                    }
                }
            })
        });
        let stderr_reader = child.stderr.take().map(|err| {
            std::thread::spawn(move || {
                let mut tail = Vec::new();
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    eprintln!("  [{}] {line}", restart);
                    tail.push(line);
                    if tail.len() > 20 {
                        tail.remove(0);
                    }
                }
                tail
            })
        });
        let status = child.wait();
        if let Some(reader) = stdout_reader {
            let _ = reader.join();
        }
        let tail = stderr_reader
            .and_then(|r| r.join().ok())
            .unwrap_or_default();
        if let Ok(last) = last_stats.lock() {
            summary.stats.add(&last);
        }
        match status {
            Ok(status) if status.success() => break,
            Ok(status) => {
                let kind = if status.code() == Some(EXIT_TIMEOUT) {
                    summary.timeouts += 1;
                    "timeout"
                } else {
                    summary.crashes += 1;
                    "crash"
                };
                let Some(input) = read_current(&dir) else {
                    eprintln!("  worker died ({status}); no input was recorded");
                    continue;
                };
                let input = if kind == "crash" {
                    minimize_death(exe, opts, t, &input)
                } else {
                    input
                };
                let path = save(&dir, kind, &input);
                eprintln!(
                    "  worker died ({status}); its input ({} bytes) is in {}\n  last words: {}",
                    input.len(),
                    path.map_or_else(|| "nowhere".into(), |p| p.display().to_string()),
                    tail.last().map_or("", String::as_str)
                );
            }
            Err(e) => {
                eprintln!("fuzz: waiting for the worker failed: {e}");
                break;
            }
        }
    }
    summary.seconds = started.elapsed().as_secs_f64();
    summary
}

/// The input a dead worker was running.
pub(crate) fn read_current(dir: &Path) -> Option<Vec<u8>> {
    let raw = fs::read(dir.join(".current")).ok()?;
    let len = u64::from_be_bytes(raw.get(..8)?.try_into().ok()?) as usize;
    raw.get(8..8usize.checked_add(len)?).map(<[u8]>::to_vec)
}

/// Shrinks an input that kills the process (stack overflow, abort) by deleting chunks while
/// a `--replay` of it still dies; at most 60 seconds.
pub(crate) fn minimize_death(exe: &Path, opts: &Options, t: &Target, input: &[u8]) -> Vec<u8> {
    let started = Instant::now();
    let budget = Duration::from_secs(60);
    let scratch = opts.artifacts.join(t.name).join(".minimize");
    let dies = |candidate: &[u8]| {
        fs::write(&scratch, candidate).is_ok()
            && Command::new(exe)
                .args(["--memory-mb", &opts.memory_mb.to_string()])
                .arg("--replay")
                .arg(t.name)
                .arg(&scratch)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| !s.success())
    };
    if !dies(input) {
        return input.to_vec();
    }
    let mut best = input.to_vec();
    let mut chunk = best.len() / 2;
    while chunk > 0 && started.elapsed() < budget {
        let mut pos = 0;
        while pos < best.len() && started.elapsed() < budget {
            let end = (pos + chunk).min(best.len());
            let mut candidate = best[..pos].to_vec();
            candidate.extend_from_slice(&best[end..]);
            if dies(&candidate) {
                best = candidate;
            } else {
                pos += chunk;
            }
        }
        chunk /= 2;
    }
    let _ = fs::remove_file(&scratch);
    best
}

pub(crate) fn save(dir: &Path, kind: &str, input: &[u8]) -> Option<PathBuf> {
    fs::create_dir_all(dir).ok()?;
    let path = dir.join(format!("{kind}-{:016x}", fnv(input)));
    fs::write(&path, input).ok()?;
    Some(path)
}

pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
