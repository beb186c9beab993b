//! The `mqnamesrv` binary as users run it: it serves, and stops gracefully on SIGTERM. (Its
//! command line alone is tested in `namesrv/tests/cli.rs`.)

use std::time::Duration;

use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::process::spawn_mqnamesrv;
use stellmq_testkit::{request, RawClient};

#[test]
fn serves_and_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("namesrv.conf");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath={}\n",
            dir.path().join("kv.json").display()
        ),
    )
    .expect("write");
    let (mut namesrv, addr) = spawn_mqnamesrv(&conf);

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = RawClient::new(&addr);
        let resp = client
            .call_ok(request(RequestCode::GET_BROKER_CLUSTER_INFO, &[]))
            .await;
        assert!(!resp.body.is_empty());
    });

    let exit = namesrv.terminate(Duration::from_secs(15));
    assert!(exit.success(), "clean exit on SIGTERM, got {exit}");
}
