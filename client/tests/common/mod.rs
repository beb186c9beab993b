//! In-process name server and broker configuration on loopback for client tests.
#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use stellmq_broker::BrokerStartConfig;
use stellmq_namesrv::{NamesrvConfig, NamesrvHandle};

/// A name server on an ephemeral loopback port; returns it and its address.
pub async fn start_namesrv(dir: &Path) -> (NamesrvHandle, String) {
    let ns = stellmq_namesrv::start(NamesrvConfig {
        listen_port: 0,
        bind_address: "127.0.0.1".into(),
        kv_config_path: dir.join("kv.json"),
        config_store_path: dir.join("namesrv.properties"),
        ..Default::default()
    })
    .await
    .expect("name server");
    let addr = ns.local_addr().to_string();
    (ns, addr)
}

/// A loopback broker with small files storing under `root`.
pub fn broker_config(root: &Path, ns_addr: &str, broker_name: &str) -> BrokerStartConfig {
    let mut c = BrokerStartConfig::default();
    c.broker.listen_port = 0;
    c.broker.bind_address = "127.0.0.1".into();
    c.broker.broker_ip1 = "127.0.0.1".into();
    c.broker.namesrv_addr = ns_addr.to_owned();
    c.broker.broker_name = broker_name.to_owned();
    c.store.store_path_root_dir = root.to_owned();
    c.store.mapped_file_size_commit_log = 8 << 20;
    c.store.max_message_size = 1 << 20;
    c.store.max_hash_slot_num = 1000;
    c.store.max_index_num = 4000;
    c.store.disk_space_warning_level_ratio = 100;
    c
}

pub async fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Bodies a listener has seen.
pub type Bodies = std::sync::Arc<parking_lot::Mutex<std::collections::BTreeSet<String>>>;

/// A consumer of `group` (also its instance name) reading from the first offset.
pub fn consumer_config(ns_addr: &str, group: &str) -> stellmq_client::ConsumerConfig {
    stellmq_client::ConsumerConfig {
        namesrv_addr: ns_addr.to_owned(),
        group: group.into(),
        instance_name: group.into(),
        consume_from_where:
            stellmq_remoting::protocol::body::ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    }
}

/// A push consumer of `topic` (all tags) recording message bodies.
pub async fn recording_consumer(
    config: stellmq_client::ConsumerConfig,
    topic: &str,
    expression: &str,
) -> (stellmq_client::PushConsumer, Bodies) {
    let seen: Bodies = Default::default();
    let recorder = seen.clone();
    let consumer = stellmq_client::PushConsumer::start_concurrently(
        config,
        &[(topic, expression)],
        move |msgs| {
            let mut seen = recorder.lock();
            for m in msgs {
                seen.insert(String::from_utf8_lossy(&m.body).into_owned());
            }
            stellmq_client::ConsumeResult::Success
        },
    )
    .await
    .expect("consumer");
    (consumer, seen)
}
