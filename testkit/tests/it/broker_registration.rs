//! Registration that costs what changed (issue #38): a created topic is registered alone,
//! an unchanged table is not resent with `forceRegister=false`, and a name server that lost
//! the broker gets the whole table again.

use stellmq_client::admin::AdminClient;
use stellmq_remoting::protocol::body::TopicConfig;
use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::{eventually, request, NameServer, RawClient, TcpTap, TestBroker};

/// Topics created before the measured steps: their table is far larger than one topic.
const TABLE: usize = 200;

/// Bytes the broker sent the name server so far.
fn sent(tap: &TcpTap) -> usize {
    tap.flows().iter().map(|f| f.from_client.len()).sum()
}

async fn routed(ns: &RawClient, topic: &str) -> bool {
    ns.route(topic).await.is_ok()
}

/// A name server behind a tap, and a master of [`TABLE`] topics registered there.
struct Registered {
    ns: NameServer,
    tap: TcpTap,
    broker: TestBroker,
    admin: AdminClient,
    /// A client of the name server.
    names: RawClient,
}

impl Registered {
    async fn start(force_register: bool) -> Self {
        let ns = NameServer::start().await;
        let tap = TcpTap::start(ns.addr()).await;
        let broker = TestBroker::start(tap.addr(), |c| {
            c.broker.force_register = force_register;
        })
        .await;
        let admin = AdminClient::new(ns.addr()).expect("admin");
        for i in 0..TABLE {
            let config = TopicConfig::with_queues(format!("Table{i:03}"), 4, 4, 6);
            admin
                .create_topic(broker.addr(), &config)
                .await
                .expect("created");
        }
        let names = RawClient::new(ns.addr());
        let last = format!("Table{:03}", TABLE - 1);
        eventually("the table is registered", async || {
            routed(&names, &last).await
        })
        .await;
        Self {
            ns,
            tap,
            broker,
            admin,
            names,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_registers_changed_topics_alone_and_an_unchanged_table_not_at_all() {
    let Registered {
        ns,
        tap,
        broker,
        admin,
        names,
    } = Registered::start(false).await;
    let before_full = sent(&tap);
    assert_eq!(broker.handle().register_now().await, 1);
    let full = sent(&tap) - before_full;
    assert!(
        full > 20_000,
        "a full registration of {TABLE} topics sent {full} bytes"
    );

    // One more topic travels alone.
    let before = sent(&tap);
    let fresh = TopicConfig::with_queues("Fresh", 4, 4, 6);
    admin
        .create_topic(broker.addr(), &fresh)
        .await
        .expect("created");
    eventually("Fresh is routed", async || routed(&names, "Fresh").await).await;
    let one = sent(&tap) - before;
    assert!(
        one < full / 10,
        "registering one topic sent {one} bytes; the table is {full}"
    );

    // The periodic round asks and sends nothing more while the name server holds it all.
    let before = sent(&tap);
    assert_eq!(broker.handle().register_round().await, 1);
    let asked = sent(&tap) - before;
    assert!(asked < 1_000, "an unchanged table cost {asked} bytes");

    // A name server that dropped the broker gets the whole table at the next round...
    let unregister = request(
        RequestCode::UNREGISTER_BROKER,
        &[
            ("brokerName", "broker-a"),
            ("brokerAddr", broker.addr()),
            ("clusterName", "DefaultCluster"),
            ("brokerId", "0"),
        ],
    );
    names.call_ok(unregister.clone()).await;
    assert!(
        !routed(&names, "Table000").await,
        "the name server forgot the broker"
    );
    assert_eq!(broker.handle().register_round().await, 1);
    assert!(routed(&names, "Table000").await && routed(&names, "Fresh").await);

    // ... and at the next change, not only the changed topic.
    names.call_ok(unregister).await;
    let later = TopicConfig::with_queues("Later", 4, 4, 6);
    admin
        .create_topic(broker.addr(), &later)
        .await
        .expect("created");
    eventually("Later is routed", async || routed(&names, "Later").await).await;
    assert!(
        routed(&names, "Table000").await,
        "the whole table came back with the change"
    );

    admin.shutdown().await;
    names.shutdown().await;
    broker.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_force_register_the_periodic_round_sends_the_whole_table() {
    let Registered {
        ns,
        tap,
        broker,
        admin,
        names,
    } = Registered::start(true).await;
    let before = sent(&tap);
    assert_eq!(broker.handle().register_round().await, 1);
    let round = sent(&tap) - before;
    assert!(
        round > 20_000,
        "RocketMQ's default resends the table; sent {round} bytes"
    );
    admin.shutdown().await;
    names.shutdown().await;
    broker.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_copies_a_changed_topic_table_a_page_at_a_time() {
    let ns = NameServer::start().await;
    let master = TestBroker::start(ns.addr(), |c| {
        c.broker.split_metadata_size = 40;
    })
    .await;
    let admin = AdminClient::new(ns.addr()).expect("admin");
    for i in 0..150 {
        let config = TopicConfig::with_queues(format!("Copied{i:03}"), 1, 1, 6);
        admin
            .create_topic(master.addr(), &config)
            .await
            .expect("created");
    }
    admin.shutdown().await;
    // The slave replicates nothing (its HA address leads nowhere), so the topics can only
    // reach it through the metadata copy, which pages by 40.
    let slave = master
        .start_slave(1, |c| c.broker.ha_master_address = "127.0.0.1:1".into())
        .await;
    let on_slave = RawClient::new(slave.addr());
    let topic_on_slave = async |topic: &str| {
        let get = request(RequestCode::GET_TOPIC_CONFIG, &[("topic", topic)]);
        on_slave.call(get).await.code == 0
    };
    eventually("the slave has every topic", async || {
        topic_on_slave("Copied000").await && topic_on_slave("Copied149").await
    })
    .await;
    let all = on_slave
        .call_ok(request(RequestCode::GET_ALL_TOPIC_CONFIG, &[]))
        .await;
    let total: usize = all
        .ext_fields
        .get("totalTopicNum")
        .and_then(|t| t.parse().ok())
        .expect("total");
    let on_master = RawClient::new(master.addr());
    let master_all = on_master
        .call_ok(request(RequestCode::GET_ALL_TOPIC_CONFIG, &[]))
        .await;
    let master_total: usize = master_all
        .ext_fields
        .get("totalTopicNum")
        .and_then(|t| t.parse().ok())
        .expect("total");
    assert_eq!(
        total, master_total,
        "the slave holds the master's whole table"
    );
    on_slave.shutdown().await;
    on_master.shutdown().await;
    slave.shutdown().await;
    master.shutdown().await;
    ns.shutdown().await;
}
