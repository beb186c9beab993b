//! Replays every file of `fuzz/corpus/<target>/` through its target, on stable, in
//! `cargo test`: the seeds, and every input that once crashed a decoder.

use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;

use stellmq_fuzz::{seeds, TARGETS};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

fn files(target: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(corpus_dir().join(target))
        .unwrap_or_else(|e| panic!("corpus/{target}: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_file_replays_without_panicking() {
    let mut failures = Vec::new();
    let mut replayed = 0;
    for t in TARGETS {
        for file in files(t.name) {
            let bytes = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if panic::catch_unwind(AssertUnwindSafe(|| (t.run)(&bytes))).is_err() {
                failures.push(file.display().to_string());
            }
            replayed += 1;
        }
    }
    assert!(replayed > 0);
    assert!(failures.is_empty(), "panicked: {failures:#?}");
}

#[test]
fn every_target_has_a_corpus_and_every_corpus_a_target() {
    for t in TARGETS {
        assert!(!files(t.name).is_empty(), "corpus/{} is empty", t.name);
    }
    for entry in fs::read_dir(corpus_dir()).expect("corpus dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            TARGETS.iter().any(|t| t.name == name),
            "corpus/{name} belongs to no target"
        );
    }
}

#[test]
fn the_corpus_holds_the_current_seeds() {
    for t in TARGETS {
        let generated = seeds::for_target(t.name);
        assert!(!generated.is_empty(), "{} has no seeds", t.name);
        for (name, bytes) in generated {
            let path = corpus_dir().join(t.name).join(format!("seed-{name}"));
            assert!(
                fs::read(&path).is_ok_and(|stored| stored == bytes),
                "{} is missing or stale: run `cargo run -p stellmq-fuzz --bin fuzz -- --write-seeds`",
                path.display()
            );
        }
    }
}

/// Every seed is a valid input: a target that refuses its own seeds tests nothing.
#[test]
fn every_seed_is_accepted() {
    for t in TARGETS {
        for (name, bytes) in seeds::for_target(t.name) {
            if t.name == "properties" && name == "empty" {
                continue;
            }
            assert!((t.run)(&bytes), "{}: seed {name} is refused", t.name);
        }
    }
}

#[test]
fn every_target_has_a_libfuzzer_harness() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("libfuzzer");
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("libfuzzer/Cargo.toml");
    for t in TARGETS {
        let harness = fs::read_to_string(dir.join("fuzz_targets").join(format!("{}.rs", t.name)))
            .unwrap_or_else(|e| panic!("libfuzzer/fuzz_targets/{}.rs: {e}", t.name));
        assert!(harness.contains("fuzz_target!"), "{}", t.name);
        assert!(
            manifest.contains(&format!("name = \"{}\"", t.name)),
            "libfuzzer/Cargo.toml has no [[bin]] {}",
            t.name
        );
    }
}
