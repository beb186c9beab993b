//! Consumers follow the broker's `suggestWhichBrokerId`: with `slaveReadEnable` and a group
//! whose `brokerId` is 1, pulls move from the master to its slave (in-process name server,
//! master and slave on loopback).

use std::sync::atomic::Ordering;
use std::time::Duration;

use stellmq_broker::BrokerHandle;
use stellmq_client::{AdminClient, Message, Producer, ProducerConfig};
use stellmq_remoting::protocol::body::{SubscriptionGroupConfig, TopicConfig};
use stellmq_testkit::{consumer_config, recording_consumer, wait_for, Role, Stack};

fn found_on(broker: &BrokerHandle) -> u64 {
    broker
        .store()
        .stats()
        .get_found_times
        .load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_pull_from_the_slave_the_master_suggests() {
    let stack = Stack::start_with(|c| {
        c.broker.broker_name = "broker-r".into();
        Role::AsyncMaster.apply(c);
        c.broker.slave_read_enable = true;
    })
    .await;
    let (ns_addr, master) = (stack.ns_addr().to_owned(), stack.broker());
    let slave = stack
        .start_slave(1, |c| c.broker.slave_read_enable = true)
        .await;
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
    wait_for("topic on the slave", Duration::from_secs(20), || {
        slave.store().commit_log_max_offset() == master.store().commit_log_max_offset()
    })
    .await;

    let mut config = consumer_config(&ns_addr, "reader");
    config.instance_name = "slave-reader".into();
    let (consumer, seen) = recording_consumer(config, "SlaveRead", "*").await;
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
    wait_for("first batch", Duration::from_secs(30), || {
        seen.lock().len() == 20
    })
    .await;
    let slave_found_before = found_on(&slave);
    let master_found_before = found_on(master);
    // ...so what follows is read from the slave.
    for i in 0..20 {
        producer
            .send(Message::new("SlaveRead", format!("second-{i}")))
            .await
            .expect("send");
    }
    wait_for("second batch", Duration::from_secs(30), || {
        seen.lock().len() == 40
    })
    .await;
    assert!(
        found_on(&slave) > slave_found_before,
        "the slave served the second batch"
    );
    assert_eq!(
        found_on(master),
        master_found_before,
        "the master served no pulls once it suggested the slave"
    );

    consumer.shutdown().await;
    producer.shutdown().await;
    slave.shutdown().await;
    stack.stop().await;
}
