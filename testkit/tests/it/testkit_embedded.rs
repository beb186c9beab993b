//! [`EmbeddedStack`] as an application's tests use it: one line in a plain `#[test]` or a
//! `#[tokio::test]`, clients through its name server, and a drop that stops both servers and
//! removes their files; and `examples/embedded.rs`, run as users run it.

use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use stellmq_client::{AdminClient, Message, Producer, ProducerConfig};
use stellmq_testkit::{bin_path, EmbeddedStack};

/// Whether something accepts connections on `addr`.
fn serves(addr: &str) -> bool {
    TcpStream::connect_timeout(&addr.parse().expect("an address"), Duration::from_secs(5)).is_ok()
}

#[test]
fn one_line_in_a_plain_test_and_a_drop_that_stops_and_cleans() {
    let mq = EmbeddedStack::start();
    let (namesrv, broker, dir) = (
        mq.namesrv_addr().to_owned(),
        mq.broker_addr().to_owned(),
        mq.dir().to_owned(),
    );
    assert!(namesrv.starts_with("127.0.0.1:") && broker.starts_with("127.0.0.1:"));
    assert!(serves(&namesrv) && serves(&broker));
    assert!(dir.join("store").is_dir());

    drop(mq);
    assert!(!serves(&broker), "the broker stopped");
    assert!(!serves(&namesrv), "the name server stopped");
    assert!(!dir.exists(), "its files are removed");
}

#[tokio::test]
async fn one_line_in_a_tokio_test_with_clients_through_the_name_server() {
    let mq = EmbeddedStack::start_with(|c| c.broker.broker_name = "orders-broker".into());
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: mq.namesrv_addr().to_owned(),
        group: "embedded_producer".into(),
        ..Default::default()
    })
    .await
    .expect("the producer starts");
    let sent = producer
        .send(Message::new("Embedded", "hello"))
        .await
        .expect("sent through the name server's route");
    assert_eq!(sent.queue.broker_name, "orders-broker");
    producer.shutdown().await;

    let admin = AdminClient::new(mq.namesrv_addr()).expect("admin");
    let route = admin.topic_route("Embedded").await.expect("the route");
    assert_eq!(route.broker_datas[0].broker_name, "orders-broker");
    // Dropped on the test's runtime: the stack stops on its own.
}

#[test]
fn the_example_runs() {
    // `cargo test --all-targets` builds examples only as tests under hashed names: build
    // the runnable one (a link step once the test build has compiled everything).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let built = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "stellmq-testkit",
            "--example",
            "embedded",
        ])
        .status()
        .expect("cargo runs");
    assert!(built.success(), "cargo build --example embedded failed");
    let example = bin_path("examples/embedded");
    let out = Command::new(&example).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} failed: {}\n{stdout}\n{}",
        example.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("received \"order-1 created\""), "{stdout}");
    assert!(stdout.contains("removed"), "{stdout}");
}
