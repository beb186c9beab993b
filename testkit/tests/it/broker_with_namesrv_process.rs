//! `mqbroker --with-namesrv`, the single-process developer mode, as users run it: clients
//! find the broker through its own name server, SIGTERM stops both cleanly, a temporary
//! store is removed at exit and a configured one is kept, and config keys StellMQ does not
//! know are accepted with a warning.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use stellmq_client::{Message, Producer, ProducerConfig};
use stellmq_testkit::process::{broker_boot_line, command, namesrv_boot_line};
use stellmq_testkit::{consumer_config, eventually, recording_consumer, Process, RawClient};

/// `mqbroker --with-namesrv --namesrv-port 0 -c <conf>` with `conf` written to `dir`;
/// returns the process and the name server's address.
fn spawn_with_namesrv(dir: &Path, conf: &str) -> (Process, String) {
    let path = dir.join("broker.conf");
    std::fs::write(&path, conf).expect("write the conf");
    let mut mqbroker: Command = command("mqbroker");
    mqbroker
        .args(["--with-namesrv", "--namesrv-port", "0", "-c"])
        .arg(&path);
    let (process, _broker_addr) = Process::spawn_until(mqbroker, broker_boot_line);
    let namesrv_addr = process
        .output()
        .iter()
        .find_map(|line| namesrv_boot_line(line))
        .expect("the name server's boot line comes before the broker's");
    (process, namesrv_addr)
}

/// The temporary store the broker said it uses (`store=<dir>` in its log).
fn temp_store(process: &Process) -> Option<PathBuf> {
    process
        .output()
        .iter()
        .filter(|line| line.contains("temporary directory"))
        .find_map(|line| {
            let rest = line.split("store=").nth(1)?;
            rest.split_whitespace().next().map(PathBuf::from)
        })
}

/// Sends `body` to `topic` through the name server at `ns` and waits until a push consumer
/// (also routed by that name server) receives it.
async fn send_and_receive(ns: &str, topic: &str, body: &str) {
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: ns.to_owned(),
        group: format!("{topic}_producer"),
        ..Default::default()
    })
    .await
    .expect("the producer starts");
    producer
        .send(Message::new(topic, body.to_owned()))
        .await
        .expect("the send through the in-process name server succeeds");
    // The broker registers the auto-created topic after answering the send; a consumer
    // started before the name server has its route would only find it at its next route
    // poll.
    let names = RawClient::new(ns);
    eventually("the name server routes the topic", async || {
        names.route(topic).await.is_ok()
    })
    .await;
    names.shutdown().await;
    let group = format!("{topic}_consumer");
    let (consumer, seen) = recording_consumer(consumer_config(ns, &group), topic, "*").await;
    eventually("the consumer receives the message", async || {
        seen.lock().contains(body)
    })
    .await;
    consumer.shutdown().await;
    producer.shutdown().await;
}

const LOOPBACK: &str = "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_a_name_server_and_a_broker_on_a_temporary_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = format!("{LOOPBACK}someRocketMqOnlyKey=true\n");
    let (mut mqbroker, ns) = spawn_with_namesrv(dir.path(), &conf);
    assert!(ns.starts_with("127.0.0.1:"), "{ns}");
    let store = temp_store(&mqbroker).expect("the log names the temporary store");
    assert!(store.join("commitlog").is_dir(), "{}", store.display());
    assert!(
        mqbroker
            .output()
            .iter()
            .any(|l| l.contains("WARN") && l.contains("someRocketMqOnlyKey")),
        "an unknown key is accepted with a warning"
    );

    send_and_receive(&ns, "DevTopic", "hello dev mode").await;

    let exit = mqbroker.terminate(Duration::from_secs(30));
    assert!(exit.success(), "clean exit on SIGTERM: {exit}");
    assert!(!store.exists(), "the temporary store is removed at exit");
    assert!(
        mqbroker
            .output()
            .iter()
            .any(|l| l.contains("temporary store removed")),
        "the removal is logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honours_the_configured_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let conf = format!(
        "{LOOPBACK}storePathRootDir={}\nmappedFileSizeCommitLog=8388608\nmaxMessageSize=1048576\n",
        store.display()
    );
    let (mut mqbroker, ns) = spawn_with_namesrv(dir.path(), &conf);
    assert!(temp_store(&mqbroker).is_none(), "no temporary store");

    send_and_receive(&ns, "KeptTopic", "kept").await;

    let exit = mqbroker.terminate(Duration::from_secs(30));
    assert!(exit.success(), "clean exit on SIGTERM: {exit}");
    assert!(store.join("commitlog").is_dir(), "the store is kept");
    assert!(
        !store.join("abort").exists(),
        "the store was closed cleanly"
    );
}
