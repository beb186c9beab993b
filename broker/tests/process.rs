//! The `mqbroker` binary as users run it: `-p`/`-m`, `-c` and `-n`, graceful SIGTERM.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{request, send_request, T};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::RequestCode;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_registers_and_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ns, ns_addr) = common::start_namesrv(dir.path()).await;
    let conf = dir.path().join("broker.conf");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\nmappedFileSizeCommitLog=8388608\nmaxMessageSize=1048576\n",
            dir.path().join("store").display()
        ),
    )
    .expect("write");
    let (mut child, addr) = common::spawn_mqbroker(&conf, &ns_addr).await;

    let client = RemotingClient::new(ClientConfig::default());
    assert_eq!(
        client
            .invoke(&addr, send_request("ProcTopic", 0, b"hi", &[]), T)
            .await
            .expect("send")
            .code,
        0
    );
    let route = || {
        client.invoke(
            &ns_addr,
            request(
                RequestCode::GET_ROUTEINFO_BY_TOPIC,
                &[("topic", "ProcTopic")],
            ),
            T,
        )
    };
    // The auto-created topic is registered right after the send, asynchronously.
    let deadline = std::time::Instant::now() + T;
    while route().await.expect("route").code != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "registered with the name server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(exit.success(), "clean exit on SIGTERM: {exit}");
    assert!(
        !dir.path().join("store/abort").exists(),
        "clean store shutdown"
    );
    assert_eq!(
        route().await.expect("route").code,
        17,
        "unregistered on shutdown"
    );
    ns.shutdown().await;
}
