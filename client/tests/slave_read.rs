//! Consumers follow the broker's `suggestWhichBrokerId`: with `slaveReadEnable` and a group
//! whose `brokerId` is 1, pulls move from the master to its slave (in-process name server,
//! master and slave on loopback).

mod common;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use stellmq_broker::{BrokerHandle, BrokerStartConfig};
use stellmq_client::{AdminClient, Message, Producer, ProducerConfig};
use stellmq_remoting::protocol::body::{SubscriptionGroupConfig, TopicConfig};

fn broker_config(root: &Path, ns_addr: &str, role: &str, id: i64) -> BrokerStartConfig {
    let mut c = common::broker_config(root, ns_addr, "broker-r");
    c.broker.broker_role = role.into();
    c.broker.broker_id = id;
    c.broker.slave_read_enable = true;
    c
}

fn found_on(broker: &BrokerHandle) -> u64 {
    broker
        .store()
        .stats()
        .get_found_times
        .load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_pull_from_the_slave_the_master_suggests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ns, ns_addr) = common::start_namesrv(dir.path()).await;
    let master = stellmq_broker::start(broker_config(
        &dir.path().join("m"),
        &ns_addr,
        "ASYNC_MASTER",
        0,
    ))
    .await
    .expect("master");
    let slave = stellmq_broker::start(broker_config(&dir.path().join("s"), &ns_addr, "SLAVE", 1))
        .await
        .expect("slave");
    let admin = AdminClient::new(&ns_addr).expect("admin");
    admin
        .create_topic(
            master.broker_addr(),
            &TopicConfig::with_queues("SlaveRead", 2, 2, 6),
        )
        .await
        .expect("topic");
    let mut group = SubscriptionGroupConfig::new("reader");
    group.broker_id = 1;
    admin
        .create_group(master.broker_addr(), &group)
        .await
        .expect("group");
    master.register_now().await;
    // The slave serves the topic once it has copied the master's topics (3 s after start).
    common::wait_for("topic on the slave", Duration::from_secs(20), || {
        slave.store().commit_log_max_offset() == master.store().commit_log_max_offset()
    })
    .await;

    let mut config = common::consumer_config(&ns_addr, "reader");
    config.instance_name = "slave-reader".into();
    let (consumer, seen) = common::recording_consumer(config, "SlaveRead", "*").await;
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: ns_addr.clone(),
        group: "writer".into(),
        ..Default::default()
    })
    .await
    .expect("producer");
    // The first answers come from the master and carry its suggestion...
    for i in 0..20 {
        producer
            .send(Message::new("SlaveRead", format!("first-{i}")))
            .await
            .expect("send");
    }
    common::wait_for("first batch", Duration::from_secs(30), || {
        seen.lock().len() == 20
    })
    .await;
    let slave_found_before = found_on(&slave);
    let master_found_before = found_on(&master);
    // ...so what follows is read from the slave.
    for i in 0..20 {
        producer
            .send(Message::new("SlaveRead", format!("second-{i}")))
            .await
            .expect("send");
    }
    common::wait_for("second batch", Duration::from_secs(30), || {
        seen.lock().len() == 40
    })
    .await;
    assert!(
        found_on(&slave) > slave_found_before,
        "the slave served the second batch"
    );
    assert_eq!(
        found_on(&master),
        master_found_before,
        "the master served no pulls once it suggested the slave"
    );

    consumer.shutdown().await;
    producer.shutdown().await;
    slave.shutdown().await;
    master.shutdown().await;
    ns.shutdown().await;
}
