//! `mqadmin`'s usage errors and `mqbench`'s gRPC options, which need no server. (Commands
//! against a name server and a broker are tested in `testkit/tests/it/tools_mqadmin.rs`; having
//! an integration test here also makes `cargo test` build `mqadmin` before those run.)

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

const MQBENCH: &str = env!("CARGO_BIN_EXE_mqbench");

/// Runs mqbench; returns (success, stdout, stderr).
fn mqbench(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(MQBENCH)
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
fn grpc_modes_parse_their_options() {
    let (success, out, _) = mqbench(&["grpc-producer", "--help"]);
    assert!(success);
    for option in [
        "--endpoints",
        "--connections",
        "--batchSize",
        "-w",
        "-s",
        "-q",
        "--duration",
    ] {
        assert!(out.contains(option), "{option} in {out}");
    }
    let (success, out, _) = mqbench(&["grpc-consumer", "--help"]);
    assert!(success);
    for option in [
        "--endpoints",
        "--group",
        "--messageQuantity",
        "--threadCount",
    ] {
        assert!(out.contains(option), "{option} in {out}");
    }

    // Nothing listens on port 1: the options are echoed, then a clear error, no panic.
    let (success, out, err) = mqbench(&[
        "grpc-producer",
        "--endpoints",
        "127.0.0.1:1",
        "-t",
        "Bench8",
        "-w",
        "3",
        "-s",
        "1024",
        "-b",
        "4",
        "--duration",
        "1",
        "--connections",
        "2",
    ]);
    assert!(!success);
    assert!(
        out.starts_with("topic: Bench8 threadCount: 3 messageSize: 1024 batchSize: 4 "),
        "{out}"
    );
    assert!(
        out.contains("endpoints: 127.0.0.1:1 connections: 2"),
        "{out}"
    );
    assert!(
        err.contains("cannot connect to the proxy at 127.0.0.1:1"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let (success, out, err) = mqbench(&[
        "grpc-consumer",
        "--endpoints",
        "127.0.0.1:1",
        "-t",
        "T",
        "-g",
        "G",
        "-q",
        "5",
        "--duration",
        "0",
        "-ri",
        "500",
    ]);
    assert!(!success);
    assert!(
        out.starts_with(
            "topic: T, threadCount 8, group: G, batchSize: 32, invisibleDuration: 30s,"
        ),
        "{out}"
    );
    assert!(
        out.contains("reportInterval: 500, messageQuantity: 5, duration: 0s"),
        "{out}"
    );
    assert!(err.contains("cannot connect to the proxy"), "{err}");

    for (args, want) in [
        (
            &["grpc-producer", "--endpoints", " ; "][..],
            "names no proxy",
        ),
        (
            &["grpc-producer", "--endpoints", "localhost"][..],
            "is not host:port",
        ),
        (&["grpc-producer", "--duration", "0"][..], "give --duration"),
        (&["grpc-producer", "-s", "0"][..], "messageSize"),
        (&["grpc-consumer", "-b", "64"][..], "not in 1..32"),
        (&["grpc-consumer", "--duration", "0"][..], "give --duration"),
    ] {
        let (success, _, err) = mqbench(args);
        assert!(!success, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
