//! A short network-level fuzz run against a live name server, broker and mqproxy (the
//! debug binaries `cargo test --workspace` builds, whose arithmetic overflow checks are
//! on): no server dies, panics or stops answering others, and every acknowledged message
//! stays intact. `STELLMQ_NETFUZZ_SEED` and
//! `STELLMQ_NETFUZZ_SECONDS` change the run; `netfuzz` runs longer ones.

use std::time::Duration;

use stellmq_fuzz::net::{run, Options};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_network_fuzz_run_breaks_no_promise() {
    let options = Options {
        duration: Duration::from_secs(env_or("STELLMQ_NETFUZZ_SECONDS", 20)),
        connections: 9,
        seed: env_or("STELLMQ_NETFUZZ_SEED", 42),
        canary_messages: 100,
        keep_logs: None,
    };
    let report = run(&options).await.expect("the servers start");
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    let [broker, namesrv] = report.requests;
    assert!(
        broker > 100 && namesrv > 100,
        "the run sent requests: {report}"
    );
    assert!(report.request_codes.len() > 100, "of most codes: {report}");
    assert!(
        report.calls.values().sum::<u64>() > 100 && report.calls.len() >= 10,
        "gRPC calls of most methods: {report}"
    );
}
