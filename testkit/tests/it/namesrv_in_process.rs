//! In-process name servers on loopback, driven over TCP like brokers and clients drive them.

use std::time::{Duration, Instant};

use stellmq_remoting::protocol::body::{fastjson, ClusterInfo, DataVersion, KvTable, TopicList};
use stellmq_remoting::protocol::headers::{CommandHeader, RegisterBrokerResponseHeader};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{eventually, request, NameServer, RawClient, Registration};

/// Master `a` of cluster `C` at 127.0.1.1:10911 serving `topics`.
fn broker_a(topics: &[&str]) -> Registration {
    Registration::new("C", "a", "127.0.1.1:10911").topics(topics)
}

#[tokio::test]
async fn routes_are_assembled_across_brokers_and_clusters() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    for registration in [
        Registration::new("C1", "a", "127.0.1.1:10911").topics(&["T1", "TBW102"]),
        Registration::new("C1", "a", "127.0.1.2:10911")
            .id(1)
            .topics(&["T1"]),
        Registration::new("C1", "b", "127.0.1.3:10911").topics(&["T1"]),
        Registration::new("C2", "c", "127.0.1.4:10911").topics(&["T2"]),
    ] {
        c.register_broker(&registration).await;
    }

    let t1 = c.route("T1").await.expect("T1 route");
    let names: Vec<_> = t1
        .queue_datas
        .iter()
        .map(|q| q.broker_name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let a = t1
        .broker_datas
        .iter()
        .find(|b| b.broker_name == "a")
        .expect("a");
    assert_eq!(a.master_addr(), Some("127.0.1.1:10911"));
    assert_eq!(
        a.broker_addrs.0.get(&1).map(String::as_str),
        Some("127.0.1.2:10911")
    );
    assert_eq!(a.cluster, "C1");
    assert_eq!(t1.queue_datas[0].write_queue_nums, 4);

    let t2 = c.route("T2").await.expect("T2 route");
    assert_eq!(t2.broker_datas.len(), 1);
    assert_eq!(t2.broker_datas[0].cluster, "C2");

    let (code, remark) = c.route("Nope").await.expect_err("unknown topic");
    assert_eq!(code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
    assert!(
        remark.starts_with("No topic route info in name server for the topic: Nope"),
        "{remark}"
    );

    let info = c
        .call_ok(request(RequestCode::GET_BROKER_CLUSTER_INFO, &[]))
        .await;
    let info: ClusterInfo = fastjson::decode(&info.body).expect("cluster info");
    assert_eq!(
        info.cluster_addr_table["C1"].iter().collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(info.broker_addr_table["a"].broker_addrs.0.len(), 2);

    let by_cluster = c
        .call_ok(request(
            RequestCode::GET_TOPICS_BY_CLUSTER,
            &[("cluster", "C2")],
        ))
        .await;
    let by_cluster: TopicList = fastjson::decode(&by_cluster.body).expect("list");
    assert_eq!(by_cluster.topic_list, ["T2"]);

    let all = c
        .call_ok(request(
            RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
            &[],
        ))
        .await;
    let all: TopicList = fastjson::decode(&all.body).expect("list");
    assert_eq!(all.topic_list, ["T1", "T2", "TBW102"]);

    let system = c
        .call_ok(request(RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS, &[]))
        .await;
    let system: TopicList = fastjson::decode(&system.body).expect("list");
    assert_eq!(system.topic_list, ["C1", "a", "b", "C2", "c"]);
    assert!(system.broker_addr.is_some());
    ns.shutdown().await;
}

#[tokio::test]
async fn route_json_dialect_follows_the_request_version() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    c.register_broker(&broker_a(&["T"])).await;

    let mut old = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")]);
    old.version = 333; // the C++ SDK
    let body = c.call_ok(old).await.body;
    let text = String::from_utf8(body.to_vec()).expect("utf8");
    assert!(
        text.contains(r#""brokerAddrs":{0:"127.0.1.1:10911"}"#),
        "{text}"
    );
    assert!(!text.contains(' '), "compact, no whitespace");

    let mut new = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")]);
    new.version = 401;
    let text = String::from_utf8(c.call_ok(new).await.body.to_vec()).expect("utf8");
    assert!(
        text.contains(r#""brokerAddrs":{"0":"127.0.1.1:10911"}"#),
        "{text}"
    );
    serde_json::from_str::<serde_json::Value>(&text).expect("standard JSON");

    let mut asked = request(
        RequestCode::GET_ROUTEINFO_BY_TOPIC,
        &[("topic", "T"), ("acceptStandardJsonOnly", "true")],
    );
    asked.version = 317;
    let text = String::from_utf8(c.call_ok(asked).await.body.to_vec()).expect("utf8");
    assert!(text.contains(r#"{"0":"#), "{text}");
    ns.shutdown().await;
}

#[tokio::test]
async fn slave_registration_returns_its_master() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    let slave = Registration::new("C", "a", "127.0.1.2:10911").id(1);
    let lone_slave = c.register_broker(&slave).await;
    let h = RegisterBrokerResponseHeader::from_ext_fields(&lone_slave.ext_fields).expect("header");
    assert_eq!(h.master_addr, None, "no master registered yet");

    c.register_broker(&broker_a(&["T"])).await;
    let resp = c.register_broker(&slave).await;
    let h = RegisterBrokerResponseHeader::from_ext_fields(&resp.ext_fields).expect("header");
    assert_eq!(h.master_addr.as_deref(), Some("127.0.1.1:10911"));
    assert_eq!(h.ha_server_addr.as_deref(), Some("127.0.1.1:10911-ha"));
    ns.shutdown().await;
}

#[tokio::test]
async fn silent_brokers_expire() {
    let ns = NameServer::start_with(|c| {
        c.scan_not_active_broker_interval = 100;
        c.broker_channel_expired_time = 400;
    })
    .await;
    let c = RawClient::new(ns.addr());
    c.register_broker(&broker_a(&["T"])).await;
    c.route("T").await.expect("registered");
    let started = Instant::now();
    eventually("the silent broker expires", async || {
        c.route("T").await.is_err()
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "not before its timeout"
    );
    assert_eq!(ns.handle().routes().live_broker_count(), 0);

    // A broker that keeps registering stays.
    let keep = Registration::new("C", "b", "127.0.1.2:10911").topics(&["U"]);
    for _ in 0..10 {
        c.register_broker(&keep).await;
        // The spacing is what is tested: 10 registrations 100 ms apart span more than the
        // 400 ms expiry, which each of them renews.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.route("U").await.expect("still registered");
    ns.shutdown().await;
}

#[tokio::test]
async fn a_dropped_broker_connection_removes_the_broker_at_once() {
    let ns = NameServer::start().await;
    let broker_conn = RawClient::new(ns.addr());
    broker_conn.register_broker(&broker_a(&["T"])).await;
    let c = RawClient::new(ns.addr());
    c.route("T").await.expect("registered");
    broker_conn.shutdown().await;
    eventually("the broker is removed", async || {
        c.route("T").await.is_err()
    })
    .await;
    ns.shutdown().await;
}

#[tokio::test]
async fn name_servers_are_independent() {
    let ns1 = NameServer::start().await;
    let ns2 = NameServer::start().await;
    let (c1, c2) = (RawClient::new(ns1.addr()), RawClient::new(ns2.addr()));
    let b = broker_a(&["T"]);
    c1.register_broker(&b).await;
    c1.route("T").await.expect("on ns1");
    assert!(
        c2.route("T").await.is_err(),
        "ns2 knows nothing of ns1's brokers"
    );
    c2.register_broker(&b).await;
    c1.call_ok(b.unregister_request()).await;
    assert!(c1.route("T").await.is_err());
    c2.route("T").await.expect("still on ns2");
    ns1.shutdown().await;
    ns2.shutdown().await;
}

#[tokio::test]
async fn malformed_requests_get_errors_and_the_server_keeps_serving() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    let b = broker_a(&["T"]);

    let mut garbage = b.request();
    garbage.body = bytes::Bytes::from_static(b"{\"topicConfigSerializeWrapper\":[oops");
    garbage.ext_fields.remove("bodyCrc32");
    let resp = c.call(garbage).await;
    assert_eq!(resp.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(
        resp.remark_str().contains("malformed"),
        "{}",
        resp.remark_str()
    );

    let mut bad_zlib = b.compressed_request();
    bad_zlib.body = bytes::Bytes::from_static(b"definitely not zlib");
    bad_zlib.ext_fields.remove("bodyCrc32");
    assert_eq!(c.call(bad_zlib).await.code, 1);

    let mut bad_crc = b.request();
    bad_crc.ext_fields.insert("bodyCrc32", "12345");
    let resp = c.call(bad_crc).await;
    assert_eq!((resp.code, resp.remark_str()), (1, "crc32 not match"));

    let mut missing = b.request();
    missing.ext_fields.remove("brokerId");
    let resp = c.call(missing).await;
    assert_eq!(resp.code, 1);
    assert!(
        resp.remark_str().contains("brokerId"),
        "{}",
        resp.remark_str()
    );

    let mut bad_number = b.request();
    bad_number.ext_fields.insert("brokerId", "zero");
    assert_eq!(c.call(bad_number).await.code, 1);

    let dv = request(
        RequestCode::QUERY_DATA_VERSION,
        &[
            ("brokerName", "a"),
            ("brokerAddr", "x"),
            ("clusterName", "C"),
            ("brokerId", "0"),
        ],
    )
    .with_body(&b"not json"[..]);
    assert_eq!(c.call(dv).await.code, 1);

    assert!(
        c.route("T").await.is_err(),
        "nothing was registered by the bad requests"
    );
    c.register_broker(&b).await;
    c.route("T").await.expect("served after the errors");
    ns.shutdown().await;
}

#[tokio::test]
async fn compressed_and_cpp_style_registrations_work() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    c.call_ok(broker_a(&["T"]).compressed_request()).await;
    assert_eq!(
        c.route("T").await.expect("route").queue_datas[0].read_queue_nums,
        4
    );

    // Numbers as JSON numbers and an empty body, as some clients send.
    let raw = r#"{"brokerName":"z","brokerAddr":"127.0.1.9:10911","clusterName":"C","haServerAddr":"x","brokerId":0,"compressed":false,"bodyCrc32":0}"#;
    let fields: ExtFields = serde_json::from_str(raw).expect("fields");
    c.call_ok(RemotingCommand::request(
        RequestCode::REGISTER_BROKER,
        fields,
    ))
    .await;
    ns.shutdown().await;
}

#[tokio::test]
async fn data_version_queries_report_changes() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    let b = broker_a(&["T"]).version(7);
    c.register_broker(&b).await;
    let same = DataVersion {
        counter: 7,
        state_version: 0,
        timestamp: 1,
    };
    let resp = c.call_ok(b.query_data_version_request(&same)).await;
    assert_eq!(resp.ext_fields.get("changed"), Some("false"));
    let stored: DataVersion = fastjson::decode(&resp.body).expect("stored version");
    assert_eq!(stored, same);
    let newer = DataVersion { counter: 8, ..same };
    let resp = c.call_ok(b.query_data_version_request(&newer)).await;
    assert_eq!(resp.ext_fields.get("changed"), Some("true"));
    ns.shutdown().await;
}

#[tokio::test]
async fn kv_config_is_served_and_survives_a_restart() {
    let mut ns = NameServer::start().await;
    let kv_path = ns.config().kv_config_path.clone();
    let c = RawClient::new(ns.addr());
    let put = |ns: &str, k: &str, v: &str| {
        request(
            RequestCode::PUT_KV_CONFIG,
            &[
                ("namespace", "ORDER_TOPIC_CONFIG"),
                ("key", k),
                ("value", v),
            ],
        )
        .with_remark(ns.to_owned())
    };
    c.call_ok(put("", "T", "a:4;b:4")).await;
    c.call_ok(put("", "U", "a:2")).await;
    let got = c
        .call_ok(request(
            RequestCode::GET_KV_CONFIG,
            &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "T")],
        ))
        .await;
    assert_eq!(got.ext_fields.get("value"), Some("a:4;b:4"));
    c.call_ok(request(
        RequestCode::DELETE_KV_CONFIG,
        &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "U")],
    ))
    .await;
    let missing = c
        .call(request(
            RequestCode::GET_KV_CONFIG,
            &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "U")],
        ))
        .await;
    assert_eq!(missing.code, ResponseCode::QUERY_NOT_FOUND.as_i32());
    assert_eq!(
        missing.remark_str(),
        "No config item, Namespace: ORDER_TOPIC_CONFIG Key: U"
    );

    // The file is Java's format, then a new name server reads it back.
    let file = std::fs::read_to_string(&kv_path).expect("persisted");
    assert!(file.contains("\"configTable\""), "{file}");
    ns.restart().await;
    let c = RawClient::new(ns.addr());
    let list = c
        .call_ok(request(
            RequestCode::GET_KVLIST_BY_NAMESPACE,
            &[("namespace", "ORDER_TOPIC_CONFIG")],
        ))
        .await;
    let table: KvTable = fastjson::decode(&list.body).expect("kv table");
    assert_eq!(table.table.len(), 1);
    assert_eq!(table.table["T"], "a:4;b:4");
    ns.shutdown().await;
}

#[tokio::test]
async fn order_topic_conf_is_served_when_enabled_at_runtime() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    c.register_broker(&broker_a(&["T"])).await;
    c.call_ok(request(
        RequestCode::PUT_KV_CONFIG,
        &[
            ("namespace", "ORDER_TOPIC_CONFIG"),
            ("key", "T"),
            ("value", "a:4"),
        ],
    ))
    .await;
    assert_eq!(
        c.route("T").await.expect("route").order_topic_conf,
        None,
        "off by default"
    );

    let update = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[])
        .with_body(&b"orderMessageEnable=true\n"[..]);
    c.call_ok(update).await;
    assert_eq!(
        c.route("T")
            .await
            .expect("route")
            .order_topic_conf
            .as_deref(),
        Some("a:4")
    );

    let config = c
        .call_ok(request(RequestCode::GET_NAMESRV_CONFIG, &[]))
        .await;
    let text = String::from_utf8(config.body.to_vec()).expect("utf8");
    assert!(text.contains("orderMessageEnable=true\n"), "{text}");

    let forbidden = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[])
        .with_body(&b"kvConfigPath=/etc/passwd\n"[..]);
    let resp = c.call(forbidden).await;
    assert_eq!(resp.code, ResponseCode::NO_PERMISSION.as_i32());
    let invalid = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[])
        .with_body(&b"scanNotActiveBrokerInterval=soon\n"[..]);
    assert_eq!(c.call(invalid).await.code, 1);
    ns.shutdown().await;
}

#[tokio::test]
async fn write_permission_can_be_wiped_and_restored() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    c.register_broker(&broker_a(&["T", "U"])).await;
    let wiped = c
        .call_ok(request(
            RequestCode::WIPE_WRITE_PERM_OF_BROKER,
            &[("brokerName", "a")],
        ))
        .await;
    assert_eq!(wiped.ext_fields.get("wipeTopicCount"), Some("2"));
    assert_eq!(c.route("T").await.expect("route").queue_datas[0].perm, 4);
    let added = c
        .call_ok(request(
            RequestCode::ADD_WRITE_PERM_OF_BROKER,
            &[("brokerName", "a")],
        ))
        .await;
    assert_eq!(added.ext_fields.get("addTopicCount"), Some("2"));
    assert_eq!(c.route("T").await.expect("route").queue_datas[0].perm, 6);
    ns.shutdown().await;
}

#[tokio::test]
async fn topics_can_be_deleted_everywhere_or_per_cluster() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    c.register_broker(&Registration::new("C1", "a", "127.0.1.1:10911").topics(&["T", "U"]))
        .await;
    c.register_broker(&Registration::new("C2", "b", "127.0.1.2:10911").topics(&["T"]))
        .await;
    c.call_ok(request(
        RequestCode::DELETE_TOPIC_IN_NAMESRV,
        &[("topic", "T"), ("clusterName", "C1")],
    ))
    .await;
    let t = c.route("T").await.expect("still on C2");
    assert_eq!(t.queue_datas.len(), 1);
    assert_eq!(t.queue_datas[0].broker_name, "b");
    c.call_ok(request(
        RequestCode::DELETE_TOPIC_IN_NAMESRV,
        &[("topic", "U")],
    ))
    .await;
    assert!(c.route("U").await.is_err());
    ns.shutdown().await;
}

/// StellMQ's paging of GET_ALL_TOPIC_LIST_FROM_NAMESERVER, as `mqadmin topicList` reads it
/// through the admin client: pages in name order; a request without a page size gets every
/// topic, as from RocketMQ.
#[tokio::test]
async fn the_topic_list_comes_a_page_at_a_time() {
    let ns = NameServer::start().await;
    let c = RawClient::new(ns.addr());
    c.register_broker(&broker_a(&["P3", "P1", "P5", "P2", "P4"]))
        .await;
    let admin = stellmq_client::AdminClient::new(ns.addr()).expect("admin");
    let mut seen = Vec::new();
    let mut pages = 0;
    let mut after: Option<String> = None;
    loop {
        let (page, more) = admin.topic_page(after.as_deref(), 2).await.expect("page");
        pages += 1;
        assert!(page.len() <= 2);
        seen.extend(page.iter().cloned());
        match page.last() {
            Some(last) if more => after = Some(last.clone()),
            _ => break,
        }
    }
    assert_eq!(seen, ["P1", "P2", "P3", "P4", "P5"]);
    assert_eq!(pages, 3);
    assert_eq!(admin.topic_list().await.expect("all").len(), 5);
    admin.shutdown().await;
    ns.shutdown().await;
}
