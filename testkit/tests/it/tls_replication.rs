//! A slave of a master that enforces TLS: it registers and copies the master's metadata
//! (protocol.md 9.4) over TLS with `tls.enable`. (The HA port's CommitLog stream is
//! RocketMQ's plain protocol, guarded by `haAuthSecret`, not TLS.)

use std::time::Duration;

use stellmq_remoting::net::tls::{TlsConfig, TlsMode};
use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::{eventually_within, request, NameServer, RawClient, TestBroker, TestCa};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_copies_offsets_from_a_master_that_enforces_tls() {
    let ca = TestCa::new("StellMQ test CA");
    let tls = || TlsConfig {
        client_enable: true,
        client_trust_cert_path: Some(ca.ca_path()),
        ..ca.server_tls(TlsMode::Enforcing)
    };
    let ns = NameServer::start_with_tls(tls()).await;
    let master = TestBroker::start(ns.addr(), |c| c.tls = tls()).await;
    let slave = master.start_slave(1, |c| c.tls = tls()).await;

    let on_master = RawClient::with_config(master.addr(), ca.client_config());
    let update = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "tls_group"),
            ("topic", "TBW102"),
            ("queueId", "0"),
            ("commitOffset", "5"),
        ],
    );
    assert_eq!(on_master.call(update).await.code, 0);

    let on_slave = RawClient::with_config(slave.addr(), ca.client_config());
    let query = request(
        RequestCode::QUERY_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "tls_group"),
            ("topic", "TBW102"),
            ("queueId", "0"),
        ],
    );
    // The first sync runs 3 s after the slave starts, then every 10 s.
    eventually_within(
        "the slave copies the offset over TLS",
        Duration::from_secs(20),
        async || {
            let r = on_slave.call(query.clone()).await;
            r.code == 0 && r.ext_fields.get("offset") == Some("5")
        },
    )
    .await;
    slave.shutdown().await;
    master.shutdown().await;
    ns.shutdown().await;
}
