//! The name server's and the proxy's Prometheus endpoints on loopback: RocketMQ's rpc
//! latency and node labels from a live name server, `rocketmq_proxy_up` and the gRPC
//! `rocketmq_rpc_latency` from a proxy.

use stellmq_metrics::ExporterType;
use stellmq_proxy::config::ProxyConfig;
use stellmq_proxy::pb::messaging_service_client::MessagingServiceClient;
use stellmq_proxy::pb::{QueryRouteRequest, Resource};
use stellmq_proxy::server;
use stellmq_remoting::net::tls::TlsConfig;
use stellmq_testkit::{scrape, NameServer, Stack, TestBroker};

#[tokio::test]
async fn name_server_serves_rpc_latency_and_route_gauges() {
    let namesrv = NameServer::start_with(|c| {
        c.metrics_exporter_type = ExporterType::Prom;
        c.metrics_prom_exporter_host = "127.0.0.1".into();
        c.metrics_prom_exporter_port = 0;
    })
    .await;
    let addr = namesrv.handle().metrics_addr().expect("a metrics endpoint");
    // A broker registers: a REGISTER_BROKER answered and one live broker.
    let broker = TestBroker::start(namesrv.addr(), |_| {}).await;
    let s = scrape(addr).await;
    let node = namesrv.handle().local_addr().to_string();
    let labels = [("node_type", "namesrv"), ("node_id", node.as_str())];
    assert_eq!(
        s.value("rocketmq_namesrv_live_brokers", &labels),
        Some(1.0),
        "{}",
        s.body
    );
    let registered = s.value(
        "rocketmq_rpc_latency_count",
        &[
            ("request_code", "register_broker"),
            ("response_code", "success"),
        ],
    );
    assert!(registered.is_some_and(|n| n >= 1.0), "{}", s.body);
    broker.shutdown().await;
    namesrv.shutdown().await;
}

#[tokio::test]
async fn proxy_serves_proxy_up_with_rocketmq_labels() {
    let stack = Stack::start().await;
    let config = ProxyConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        grpc_server_port: 0,
        bind_address: "127.0.0.1".into(),
        proxy_name: "proxy-1".into(),
        metrics_exporter_type: ExporterType::Prom,
        metrics_prom_exporter_host: "127.0.0.1".into(),
        metrics_prom_exporter_port: 0,
        ..ProxyConfig::default()
    };
    let proxy = server::start(config, &TlsConfig::default())
        .await
        .expect("the proxy starts");
    let addr = proxy.metrics_addr().expect("a metrics endpoint");
    let s = scrape(addr).await;
    let labels = [
        ("cluster", "DefaultCluster"),
        ("node_type", "proxy"),
        ("node_id", "proxy-1"),
        ("proxy_mode", "cluster"),
    ];
    assert_eq!(
        s.value("rocketmq_proxy_up", &labels),
        Some(1.0),
        "{}",
        s.body
    );
    assert_eq!(s.value("rocketmq_proxy_clients", &[]), Some(0.0));

    // One QueryRoute answered (TOPIC_NOT_FOUND), one refused for its missing client id.
    let endpoint = format!("http://{}", proxy.local_addr());
    let mut client = MessagingServiceClient::connect(endpoint)
        .await
        .expect("gRPC");
    let query = || QueryRouteRequest {
        topic: Some(Resource {
            name: "NoSuchTopic".into(),
            ..Resource::default()
        }),
        endpoints: None,
    };
    let mut known = tonic::Request::new(query());
    known
        .metadata_mut()
        .insert("x-mq-client-id", "metrics-client".parse().expect("value"));
    client.query_route(known).await.expect("answered");
    client
        .query_route(tonic::Request::new(query()))
        .await
        .expect("answered");
    let s = scrape(addr).await;
    let latency = |status: &str| {
        s.value(
            "rocketmq_rpc_latency_count",
            &[
                ("protocol_type", "grpc"),
                ("request_code", "query_route"),
                ("response_code", status),
            ],
        )
    };
    assert_eq!(latency("topic_not_found"), Some(1.0), "{}", s.body);
    assert_eq!(latency("client_id_required"), Some(1.0), "{}", s.body);
    proxy.shutdown().await;
    stack.stop().await;
}
