//! The `mqbroker` binary's command line (`-p`/`-m`, `-c`, bad configuration), which needs
//! nothing else running. (Tests that serve requests are in `testkit/tests/it/broker_process.rs`
//! and `testkit/tests/it/broker_ha_process.rs`; having an integration test here also makes
//! `cargo test` build `mqbroker` before those run.)

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mqbroker");

#[test]
fn print_options_show_rocketmq_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, "brokerName=broker-b\nmapedFileSizeCommitLog=10485760\nflushDiskType=SYNC_FLUSH\nunknownKey=1\n").expect("write");
    let out = Command::new(BIN)
        .args(["-c"])
        .arg(&conf)
        .args(["-n", "127.0.0.9:9876", "-p"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf8");
    for line in [
        "brokerName=broker-b\n",
        "mappedFileSizeCommitLog=10485760\n",
        "flushDiskType=SYNC_FLUSH\n",
        "namesrvAddr=127.0.0.9:9876\n",
        "brokerClusterName=DefaultCluster\n",
        "listenPort=10911\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let important = Command::new(BIN).arg("-m").output().expect("runs");
    let text = String::from_utf8(important.stdout).expect("utf8");
    assert!(
        text.contains("brokerClusterName=") && !text.contains("traceOn="),
        "{text}"
    );
}

#[test]
fn bad_configuration_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, "brokerRole=SLAVE\nbrokerId=0\n").expect("write");
    let out = Command::new(BIN)
        .arg("-c")
        .arg(&conf)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("brokerId"));
    std::fs::write(&conf, "listenPort=eighty\n").expect("write");
    let out = Command::new(BIN)
        .arg("-c")
        .arg(&conf)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("listenPort"));
}
