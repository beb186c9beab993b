//! The `mqnamesrv` binary's command line, which needs nothing else running. (Tests that serve
//! requests are in `testkit/tests/it/namesrv_process.rs`; having an integration test here also
//! makes `cargo test` build `mqnamesrv` before those run.)

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mqnamesrv");

#[test]
fn print_config_shows_rocketmq_keys_and_file_overrides() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("namesrv.conf");
    std::fs::write(
        &conf,
        "listenPort=19876\norderMessageEnable=true\nsomeUnknownKey=1\n",
    )
    .expect("write");
    let out = Command::new(BIN)
        .arg("-c")
        .arg(&conf)
        .arg("-p")
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(text.contains("listenPort=19876\n"), "{text}");
    assert!(text.contains("orderMessageEnable=true\n"), "{text}");
    assert!(text.contains("kvConfigPath="), "{text}");
    assert!(
        text.contains("scanNotActiveBrokerInterval=10000\n"),
        "{text}"
    );
}

#[test]
fn bad_config_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("namesrv.conf");
    std::fs::write(&conf, "listenPort=ninety\n").expect("write");
    let out = Command::new(BIN)
        .arg("-c")
        .arg(&conf)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).expect("utf8");
    assert!(
        err.contains("listenPort") && err.contains("ninety"),
        "{err}"
    );
    let missing = Command::new(BIN)
        .arg("-c")
        .arg(dir.path().join("nope.conf"))
        .output()
        .expect("runs");
    assert_eq!(missing.status.code(), Some(2));
}
