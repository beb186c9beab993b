//! The sample configurations in `conf/` as users start brokers with them: every broker sample
//! loads with keys StellMQ knows and starts (on ephemeral ports and a temporary store, as one
//! host running them all would need), the trace broker serves its trace topic, and
//! `conf/plain_acl.yml` loads and guards a broker.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stellmq_config::read_properties_file;
use stellmq_remoting::protocol::signature::{sign, SessionCredentials};
use stellmq_testkit::{eventually, send_request, NameServer, RawClient, TestBroker};

const NO_PERMISSION: i32 = 16;

fn conf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conf")
}

/// Every broker configuration under `conf/`: `*.conf` and `*.properties`, recursively.
fn broker_samples(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("conf/ lists") {
        let path = entry.expect("a conf/ entry").path();
        // conf/controller/ holds controllers and controller-mode brokers: controller.rs.
        if path.is_dir() && !path.ends_with("controller") {
            found.extend(broker_samples(&path));
        } else if path
            .extension()
            .is_some_and(|ext| ext == "conf" || ext == "properties")
        {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Starts a broker with the keys of `sample`, on an ephemeral loopback port and the test's
/// temporary store, registering with `ns_addr`.
async fn start_sample(ns_addr: &str, props: &BTreeMap<String, String>) -> TestBroker {
    let props = props.clone();
    TestBroker::start(ns_addr, move |c| {
        let own = c.clone();
        let unknown = c.apply(&props).expect("the sample's values are valid");
        assert!(
            unknown.is_empty(),
            "keys StellMQ does not know: {unknown:?}"
        );
        c.broker.listen_port = own.broker.listen_port;
        c.broker.bind_address = own.broker.bind_address;
        c.broker.namesrv_addr = own.broker.namesrv_addr;
        c.store.store_path_root_dir = own.store.store_path_root_dir;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_broker_sample_starts() {
    let samples = broker_samples(&conf_dir());
    for expected in [
        "broker.conf",
        "broker-trace.properties",
        "2m-2s-sync/broker-a-s.properties",
        "2m-noslave/broker-b.properties",
    ] {
        assert!(
            samples.iter().any(|s| s.ends_with(expected)),
            "conf/{expected} is missing: {samples:?}"
        );
    }
    let ns = NameServer::start().await;
    for sample in &samples {
        let props = read_properties_file(sample).expect("the sample reads");
        let broker = start_sample(ns.addr(), &props).await;
        assert_eq!(
            broker.config().broker.broker_name,
            props.get("brokerName").map_or("broker-a", String::as_str),
            "{}",
            sample.display()
        );
        broker.shutdown().await;
    }
    ns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_broker_serves_the_trace_topic() {
    let props = read_properties_file(&conf_dir().join("broker-trace.properties")).expect("read");
    let ns = NameServer::start().await;
    let broker = start_sample(ns.addr(), &props).await;
    let namesrv = RawClient::new(ns.addr());
    eventually(
        "RMQ_SYS_TRACE_TOPIC is routed to broker-trace",
        async || {
            namesrv
                .route("RMQ_SYS_TRACE_TOPIC")
                .await
                .is_ok_and(|route| {
                    route
                        .broker_datas
                        .iter()
                        .any(|b| b.broker_name == "broker-trace")
                })
        },
    )
    .await;
    let traced = RawClient::new(broker.addr())
        .call(send_request("RMQ_SYS_TRACE_TOPIC", 0, b"trace", &[]))
        .await;
    assert_eq!(traced.code, 0, "{:?}", traced.remark);
    broker.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_plain_acl_guards_a_broker() {
    let home = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the checkout");
    let ns = NameServer::start().await;
    let broker = TestBroker::start(ns.addr(), |c| {
        c.broker.acl_enable = true;
        c.broker.rocketmq_home = home.display().to_string();
    })
    .await;
    let raw = RawClient::new(broker.addr());
    let unsigned = raw.call(send_request("topicB", 0, b"x", &[])).await;
    assert_eq!(unsigned.code, NO_PERMISSION, "{:?}", unsigned.remark);
    // The sample's RocketMQ account may publish to topicB.
    let mut signed = send_request("topicB", 0, b"x", &[]);
    sign(
        &mut signed,
        &SessionCredentials::new("RocketMQ", "12345678"),
    );
    let sent = raw.call(signed).await;
    assert_eq!(sent.code, 0, "{:?}", sent.remark);
    broker.shutdown().await;
    ns.shutdown().await;
}
