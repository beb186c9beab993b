//! A worker: mutates one target's corpus in-process, catching panics.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::FileExt;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use stellmq_fuzz::mutate::Mutator;
use stellmq_fuzz::{seeds, Target};

use super::memory::LIMIT;
use super::supervisor::{save, Stats};
use super::*;

/// Where the running input's panic happened (`file:line`) and its message.
static LAST_PANIC: Mutex<Option<(String, String)>> = Mutex::new(None);

/// Milliseconds since the worker started at which the current input began; 0 when idle.
static BUSY_SINCE_MS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn worker(opts: &Options) -> ExitCode {
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

pub(crate) fn take_panic() -> (String, String) {
    LAST_PANIC
        .lock()
        .ok()
        .and_then(|mut last| last.take())
        .unwrap_or_else(|| ("?".into(), "?".into()))
}

/// The corpus files of a target plus its generated seeds (never empty).
pub(crate) fn load_pool(dir: &Path, name: &str) -> Vec<Vec<u8>> {
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
pub(crate) fn minimize(t: &Target, input: &[u8], location: &str) -> Vec<u8> {
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
