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

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stellmq_fuzz::mutate::Mutator;
use stellmq_fuzz::{seeds, target, Target, TARGETS};

/// Exit code of a worker whose watchdog saw one input run past the timeout.
const EXIT_TIMEOUT: i32 = 3;

/// Worker deaths after which a target's run stops early.
const MAX_DEATHS: u64 = 10;

// ---- memory cap -------------------------------------------------------------------------

/// The system allocator with a cap on live bytes: past it, allocations fail and the worker
/// aborts (recorded as a crash) instead of taking the machine's memory.
struct Capped;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

fn reserve(size: usize) -> bool {
    let limit = LIMIT.load(Ordering::Relaxed);
    let live = LIVE.fetch_add(size, Ordering::Relaxed);
    if live.saturating_add(size) > limit {
        LIVE.fetch_sub(size, Ordering::Relaxed);
        return false;
    }
    true
}

// SAFETY: every call forwards to `System` with the caller's layout and pointer; the counter
// only decides whether to forward.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as received.
        let ptr = unsafe { System.alloc(layout) };
        if ptr.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as received.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if ptr.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !reserve(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as received.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if new.is_null() {
            if new_size > old {
                LIVE.fetch_sub(new_size - old, Ordering::Relaxed);
            }
        } else if new_size < old {
            LIVE.fetch_sub(old - new_size, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Capped = Capped;

// ---- options ----------------------------------------------------------------------------

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
            eprintln!("fuzz: {e}\n(see the top of fuzz/src/bin/fuzz.rs or fuzz/README.md)");
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
        Mode::Worker(opts) => worker(&opts),
        Mode::Fuzz(opts) => supervise(&opts),
    }
}

// ---- seeds and replay -------------------------------------------------------------------

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

// ---- supervisor -------------------------------------------------------------------------

#[derive(Default, Clone)]
struct Stats {
    tried: u64,
    accepted: u64,
    panics: u64,
    distinct_panics: u64,
    slow: u64,
    slowest_us: u64,
}

impl Stats {
    fn line(&self) -> String {
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

    fn parse(line: &str) -> Option<Self> {
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

    fn add(&mut self, other: &Stats) {
        self.tried += other.tried;
        self.accepted += other.accepted;
        self.panics += other.panics;
        self.distinct_panics += other.distinct_panics;
        self.slow += other.slow;
        self.slowest_us = self.slowest_us.max(other.slowest_us);
    }
}

struct Summary {
    name: &'static str,
    stats: Stats,
    seconds: f64,
    crashes: u64,
    timeouts: u64,
}

fn supervise(opts: &Options) -> ExitCode {
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

fn supervise_target(exe: &Path, opts: &Options, t: &Target, seed: u64) -> Summary {
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
fn read_current(dir: &Path) -> Option<Vec<u8>> {
    let raw = fs::read(dir.join(".current")).ok()?;
    let len = u64::from_be_bytes(raw.get(..8)?.try_into().ok()?) as usize;
    raw.get(8..8usize.checked_add(len)?).map(<[u8]>::to_vec)
}

/// Shrinks an input that kills the process (stack overflow, abort) by deleting chunks while
/// a `--replay` of it still dies; at most 60 seconds.
fn minimize_death(exe: &Path, opts: &Options, t: &Target, input: &[u8]) -> Vec<u8> {
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

fn save(dir: &Path, kind: &str, input: &[u8]) -> Option<PathBuf> {
    fs::create_dir_all(dir).ok()?;
    let path = dir.join(format!("{kind}-{:016x}", fnv(input)));
    fs::write(&path, input).ok()?;
    Some(path)
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

// ---- worker -----------------------------------------------------------------------------

/// Where the running input's panic happened (`file:line`) and its message.
static LAST_PANIC: Mutex<Option<(String, String)>> = Mutex::new(None);

/// Milliseconds since the worker started at which the current input began; 0 when idle.
static BUSY_SINCE_MS: AtomicU64 = AtomicU64::new(0);

fn worker(opts: &Options) -> ExitCode {
    let Some(t) = opts.targets.first() else {
        return ExitCode::FAILURE;
    };
    LIMIT.store(opts.memory_mb.saturating_mul(1 << 20), Ordering::Relaxed);
    panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map_or_else(|| "?".to_owned(), |l| format!("{}:{}", l.file(), l.line()));
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some((location, info.to_string()));
        }
    }));
    let dir = opts.artifacts.join(t.name);
    let current = match fs::create_dir_all(&dir).and_then(|()| {
        fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(dir.join(".current"))
    }) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("cannot open {}: {e}", dir.join(".current").display());
            return ExitCode::FAILURE;
        }
    };
    let epoch = Instant::now();
    let timeout_ms = opts.timeout * 1000;
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(100));
        let since = BUSY_SINCE_MS.load(Ordering::Relaxed);
        let now = epoch.elapsed().as_millis() as u64 + 1;
        if since != 0 && now.saturating_sub(since) > timeout_ms {
            eprintln!("timeout: one input has run for over {timeout_ms} ms");
            std::process::exit(EXIT_TIMEOUT);
        }
    });

    let mut pool = load_pool(&opts.corpus.join(t.name), t.name);
    let initial = pool.len();
    let mut mutator = Mutator::new(opts.seed, t.dictionary, opts.max_len);
    let mut stats = Stats::default();
    let mut seen_panics = HashSet::new();
    let mut record = Vec::with_capacity(opts.max_len + 8);
    let deadline = epoch + Duration::from_secs(opts.seconds);
    let mut last_report = Instant::now();
    loop {
        if stats.tried % 64 == 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            if now.duration_since(last_report) >= Duration::from_secs(1) {
                println!("{}", stats.line());
                last_report = now;
            }
        }
        let base = &pool[mutator.rng.below(pool.len())];
        let other = &pool[mutator.rng.below(pool.len())];
        let input = mutator.mutate(base, other);

        record.clear();
        record.extend_from_slice(&(input.len() as u64).to_be_bytes());
        record.extend_from_slice(&input);
        let _ = current.write_all_at(&record, 0);

        BUSY_SINCE_MS.store(epoch.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
        let started = Instant::now();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| (t.run)(&input)));
        let elapsed = started.elapsed();
        BUSY_SINCE_MS.store(0, Ordering::Relaxed);
        stats.tried += 1;

        let mut elapsed_us = elapsed.as_micros() as u64;
        if elapsed_us > stats.slowest_us {
            // A busy machine makes single runs slow now and then: time it once more.
            let again = Instant::now();
            let _ = panic::catch_unwind(AssertUnwindSafe(|| (t.run)(&input)));
            let _ = take_panic();
            elapsed_us = elapsed_us.min(again.elapsed().as_micros() as u64);
        }
        if elapsed_us > stats.slowest_us {
            stats.slowest_us = elapsed_us;
            let elapsed = Duration::from_micros(elapsed_us);
            if elapsed >= Duration::from_millis(opts.slow_ms) {
                stats.slow += 1;
                if let Some(path) = save(&dir, "slow", &input) {
                    eprintln!(
                        "slow: {} bytes took {elapsed:?}: {}",
                        input.len(),
                        path.display()
                    );
                }
            }
        }
        match outcome {
            Ok(true) => {
                stats.accepted += 1;
                // Inputs that decode are worth mutating further.
                if mutator.rng.one_in(16) {
                    if pool.len() < 4096 {
                        pool.push(input);
                    } else {
                        let i = initial + mutator.rng.below(pool.len() - initial);
                        pool[i] = input;
                    }
                }
            }
            Ok(false) => {}
            Err(_) => {
                stats.panics += 1;
                let (location, message) = take_panic();
                if seen_panics.insert(location.clone()) {
                    stats.distinct_panics += 1;
                    let small = minimize(t, &input, &location);
                    let path = save(&dir, "crash", &small);
                    eprintln!(
                        "panic ({} bytes, minimized from {}): {message}\n  saved to {}",
                        small.len(),
                        input.len(),
                        path.map_or_else(|| "nowhere".into(), |p| p.display().to_string())
                    );
                }
            }
        }
    }
    println!("{}", stats.line());
    ExitCode::SUCCESS
}

fn take_panic() -> (String, String) {
    LAST_PANIC
        .lock()
        .ok()
        .and_then(|mut last| last.take())
        .unwrap_or_else(|| ("?".into(), "?".into()))
}

/// The corpus files of a target plus its generated seeds (never empty).
fn load_pool(dir: &Path, name: &str) -> Vec<Vec<u8>> {
    let mut pool: Vec<Vec<u8>> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| fs::read(e.path()).ok())
        .collect();
    pool.extend(seeds::for_target(name).into_iter().map(|(_, bytes)| bytes));
    pool.sort();
    pool.dedup();
    if pool.is_empty() {
        pool.push(Vec::new());
    }
    pool
}

/// Shrinks a panicking input by deleting chunks while it still panics at `location`.
fn minimize(t: &Target, input: &[u8], location: &str) -> Vec<u8> {
    let started = Instant::now();
    let still_panics = |candidate: &[u8]| {
        panic::catch_unwind(AssertUnwindSafe(|| (t.run)(candidate))).is_err()
            && take_panic().0 == location
    };
    let mut best = input.to_vec();
    let mut chunk = best.len() / 2;
    while chunk > 0 && started.elapsed() < Duration::from_secs(5) {
        let mut pos = 0;
        while pos < best.len() && started.elapsed() < Duration::from_secs(5) {
            let end = (pos + chunk).min(best.len());
            let mut candidate = best[..pos].to_vec();
            candidate.extend_from_slice(&best[end..]);
            if still_panics(&candidate) {
                best = candidate;
            } else {
                pos += chunk;
            }
        }
        chunk /= 2;
    }
    best
}
