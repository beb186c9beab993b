//! mqproxy's remoting port for 4.x clients over TCP: it answers as a name server with
//! routes that name its own per-broker relay ports, relays other name-server requests as
//! they came, and relays a broker's connections byte for byte (requests, answers, and the
//! broker's calls to the client).

use stellmq_proxy::config::ProxyConfig;
use stellmq_proxy::server;
use stellmq_remoting::net::tls::TlsConfig;
use stellmq_remoting::protocol::body::{fastjson, ClusterInfo, TopicRouteData};
use stellmq_remoting::protocol::{RequestCode, ResponseCode};
use stellmq_testkit::{eventually, request, RawClient, Stack};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_name_the_proxy_and_its_broker_ports_reach_the_broker() {
    let stack = Stack::start().await;
    let config = ProxyConfig {
        namesrv_addr: stack.ns_addr().to_owned(),
        grpc_server_port: 0,
        bind_address: "127.0.0.1".into(),
        enable_remoting_proxy: true,
        remoting_listen_port: 0,
        ..ProxyConfig::default()
    };
    let proxy = server::start(config, &TlsConfig::default())
        .await
        .expect("the proxy starts");
    let front_addr = proxy.remoting_addr().expect("a remoting port").to_string();
    let front = RawClient::new(&front_addr);
    let on_broker = RawClient::new(stack.addr());
    let created = on_broker
        .call(request(
            RequestCode::UPDATE_AND_CREATE_TOPIC,
            &[
                ("topic", "GatewayTopic"),
                ("defaultTopic", "TBW102"),
                ("readQueueNums", "2"),
                ("writeQueueNums", "2"),
                ("perm", "6"),
                ("topicFilterType", "SINGLE_TAG"),
            ],
        ))
        .await;
    assert_eq!(created.code, 0, "{}", created.remark_str());
    stack.broker().register_now().await;

    let answer = front
        .call(request(
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            &[("topic", "GatewayTopic")],
        ))
        .await;
    assert_eq!(answer.code, 0, "{}", answer.remark_str());
    let route: TopicRouteData = fastjson::decode(&answer.body).expect("a route");
    assert_eq!(route.queue_datas.len(), 1);
    let broker = &route.broker_datas[0];
    assert_eq!(broker.broker_name, "broker-a");
    let relay = broker.master_addr().expect("a master").to_owned();
    assert!(relay.starts_with("127.0.0.1:"), "{relay}");
    assert_ne!(
        relay,
        stack.addr(),
        "the route names the proxy, not the broker"
    );
    assert_ne!(relay, front_addr);
    assert_eq!(
        broker.broker_addrs.0.len(),
        1,
        "the relay port reaches the master only"
    );

    // Through the relay: a send is stored by the broker.
    let through = RawClient::new(&relay);
    let sent = through.send("GatewayTopic", 1, "via the proxy", &[]).await;
    assert_eq!(sent.code, 0, "{}", sent.remark_str());
    // Stored, then dispatched to its queue: the max offset follows a moment later.
    eventually("the relayed send is in its queue", async || {
        let max = on_broker
            .call(request(
                RequestCode::GET_MAX_OFFSET,
                &[("topic", "GatewayTopic"), ("queueId", "1")],
            ))
            .await;
        max.ext_fields.get("offset") == Some("1")
    })
    .await;

    // The cluster's brokers are named by their relay ports too (admin tools work through
    // the proxy); other name-server requests are relayed as they came, errors too.
    let cluster = front
        .call(request(RequestCode::GET_BROKER_CLUSTER_INFO, &[]))
        .await;
    assert_eq!(cluster.code, 0);
    let info: ClusterInfo = fastjson::decode(&cluster.body).expect("cluster info");
    let named = info.broker_addr_table["broker-a"]
        .master_addr()
        .map(str::to_owned);
    assert_eq!(named.as_deref(), Some(relay.as_str()));
    let missing = front
        .call(request(
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            &[("topic", "NoSuchTopic")],
        ))
        .await;
    assert_eq!(missing.code, ResponseCode::TOPIC_NOT_EXIST.as_i32());

    through.shutdown().await;
    front.shutdown().await;
    on_broker.shutdown().await;
    proxy.shutdown().await;
    stack.stop().await;
}
