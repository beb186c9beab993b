//! The `mqnamesrv` binary as users run it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

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
    let mut child = Command::new(BIN)
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let addr = loop {
        let line = rx.recv_timeout(Duration::from_secs(20)).expect("boot line");
        if let Some(rest) = line.split("boot success").nth(1) {
            break rest.rsplit(' ').next().expect("address").trim().to_owned();
        }
    };

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = RemotingClient::new(ClientConfig::default());
        let resp = client
            .invoke_ok(
                &addr,
                RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, ExtFields::new()),
                Duration::from_secs(5),
            )
            .await
            .expect("served");
        assert!(!resp.body.is_empty());
    });

    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(status.success());
    let mut waited = Duration::ZERO;
    loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            assert!(exit.success(), "clean exit on SIGTERM, got {exit}");
            break;
        }
        assert!(waited < Duration::from_secs(15), "did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    }
}
