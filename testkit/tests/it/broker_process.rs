//! The `mqbroker` binary as users run it: `-n`, registration, and a graceful SIGTERM. (Its
//! command line alone is tested in `broker/tests/cli.rs`.)

use std::time::Duration;

use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::process::spawn_mqbroker;
use stellmq_testkit::{eventually, request, send_request, NameServer, RawClient};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_registers_and_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = NameServer::start().await;
    let conf = dir.path().join("broker.conf");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\nmappedFileSizeCommitLog=8388608\nmaxMessageSize=1048576\n",
            dir.path().join("store").display()
        ),
    )
    .expect("write");
    let (mut broker, addr) = spawn_mqbroker(&conf, ns.addr()).await;

    let sent = RawClient::new(&addr)
        .call(send_request("ProcTopic", 0, b"hi", &[]))
        .await;
    assert_eq!(sent.code, 0);
    let namesrv = RawClient::new(ns.addr());
    let route = || {
        namesrv.call(request(
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            &[("topic", "ProcTopic")],
        ))
    };
    // The auto-created topic is registered right after the send, asynchronously.
    eventually("registered with the name server", async || {
        route().await.code == 0
    })
    .await;

    broker.signal("-TERM");
    let exit = broker.exit(Duration::from_secs(30)).await;
    assert!(exit.success(), "clean exit on SIGTERM: {exit}");
    assert!(
        !dir.path().join("store/abort").exists(),
        "clean store shutdown"
    );
    assert_eq!(route().await.code, 17, "unregistered on shutdown");
    ns.shutdown().await;
}
