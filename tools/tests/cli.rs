//! `mqadmin`'s usage errors, which need no server. (Commands against a name server and a
//! broker are tested in `testkit/tests/tools_mqadmin.rs`; having an integration test here
//! also makes `cargo test` build `mqadmin` before those run.)

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mqadmin");

/// Runs mqadmin without NAMESRV_ADDR; returns (success, stdout, stderr).
fn mqadmin(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("NAMESRV_ADDR")
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn usage_errors_are_clear() {
    let (success, _, err) = mqadmin(&["topicList"]);
    assert!(!success);
    assert!(err.contains("name server"), "{err}");
    let (success, out, _) = mqadmin(&["help", "updateTopic"]);
    assert!(success);
    assert!(
        out.contains("--readQueueNums") && out.contains("-t"),
        "{out}"
    );
    let (success, _, err) = mqadmin(&["clusterList", "-n", "127.0.0.1:1"]);
    assert!(!success);
    assert!(err.contains("no name server answered"), "{err}");
}
