//! The `mqdashboard` binary's command line, which needs nothing else running. (Pages are
//! tested in `testkit/tests/it/dashboard.rs`; having an integration test here also makes
//! `cargo test` build `mqdashboard` before the process tests that start it.)

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mqdashboard");

#[test]
fn help_names_the_options() {
    let out = Command::new(BIN).arg("--help").output().expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf8");
    for option in ["--namesrvAddr", "--port", "--host", "--traceTopic"] {
        assert!(text.contains(option), "{option} in:\n{text}");
    }
}

#[test]
fn a_bad_port_is_a_clear_error() {
    let out = Command::new(BIN)
        .args(["--port", "eighty"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let text = String::from_utf8(out.stderr).expect("utf8");
    assert!(text.contains("--port"), "{text}");
}
