//! In-process name servers on loopback, driven over TCP like brokers and clients drive them.

use std::time::{Duration, Instant};

use stellmq_namesrv::{NamesrvConfig, NamesrvHandle};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::{
    fastjson, ClusterInfo, DataVersion, KvTable, RegisterBrokerBody, TopicConfig, TopicList,
    TopicRouteData,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, GetRouteInfoRequestHeader, RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

const T: Duration = Duration::from_secs(5);

struct TestNamesrv {
    handle: NamesrvHandle,
    addr: String,
    _dir: tempfile::TempDir,
}

async fn start_with(dir: tempfile::TempDir, tweak: impl FnOnce(&mut NamesrvConfig)) -> TestNamesrv {
    let mut config = NamesrvConfig {
        listen_port: 0,
        bind_address: "127.0.0.1".into(),
        kv_config_path: dir.path().join("kvConfig.json"),
        config_store_path: dir.path().join("namesrv.properties"),
        ..Default::default()
    };
    tweak(&mut config);
    let handle = stellmq_namesrv::start(config)
        .await
        .expect("name server starts");
    let addr = handle.local_addr().to_string();
    TestNamesrv {
        handle,
        addr,
        _dir: dir,
    }
}

async fn start() -> TestNamesrv {
    start_with(tempfile::tempdir().expect("tempdir"), |_| {}).await
}

fn client() -> RemotingClient {
    RemotingClient::new(ClientConfig::default())
}

struct Broker<'a> {
    cluster: &'a str,
    name: &'a str,
    id: i64,
    addr: &'a str,
    topics: &'a [&'a str],
    version: i64,
}

fn registration(b: &Broker<'_>, compressed: bool) -> RemotingCommand {
    let mut body = RegisterBrokerBody::default();
    body.topic_config_serialize_wrapper.data_version = DataVersion {
        counter: b.version,
        state_version: 0,
        timestamp: 1,
    };
    for t in b.topics {
        body.topic_config_serialize_wrapper
            .topic_config_table
            .insert((*t).to_owned(), TopicConfig::with_queues(*t, 4, 4, 6));
    }
    let bytes = if compressed {
        body.encode_compressed()
    } else {
        fastjson::encode(&body)
    };
    let header = RegisterBrokerRequestHeader {
        broker_name: b.name.into(),
        broker_addr: b.addr.into(),
        cluster_name: b.cluster.into(),
        ha_server_addr: format!("{}-ha", b.addr),
        broker_id: b.id,
        compressed: Some(compressed),
        body_crc32: Some((crc32fast::hash(&bytes) & 0x7FFF_FFFF) as i32),
        heartbeat_timeout_millis: None,
        enable_acting_master: None,
    };
    RemotingCommand::request(RequestCode::REGISTER_BROKER, header.to_ext_fields()).with_body(bytes)
}

async fn register(client: &RemotingClient, ns: &str, b: &Broker<'_>) -> RemotingCommand {
    client
        .invoke_ok(ns, registration(b, false), T)
        .await
        .expect("registered")
}

async fn route(
    client: &RemotingClient,
    ns: &str,
    topic: &str,
) -> Result<TopicRouteData, (i32, String)> {
    let header = GetRouteInfoRequestHeader {
        topic: topic.into(),
        accept_standard_json_only: None,
    };
    let resp = client
        .invoke(
            ns,
            RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, header.to_ext_fields()),
            T,
        )
        .await
        .expect("answer");
    if resp.code == 0 {
        Ok(fastjson::decode(&resp.body).expect("route body"))
    } else {
        Err((resp.code, resp.remark_str().to_owned()))
    }
}

async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {what}");
}

fn request(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
    RemotingCommand::request(
        code,
        fields.iter().map(|(k, v)| (*k, *v)).collect::<ExtFields>(),
    )
}

#[tokio::test]
async fn routes_are_assembled_across_brokers_and_clusters() {
    let ns = start().await;
    let c = client();
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C1",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T1", "TBW102"],
            version: 1,
        },
    )
    .await;
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C1",
            name: "a",
            id: 1,
            addr: "127.0.1.2:10911",
            topics: &["T1"],
            version: 1,
        },
    )
    .await;
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C1",
            name: "b",
            id: 0,
            addr: "127.0.1.3:10911",
            topics: &["T1"],
            version: 1,
        },
    )
    .await;
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C2",
            name: "c",
            id: 0,
            addr: "127.0.1.4:10911",
            topics: &["T2"],
            version: 1,
        },
    )
    .await;

    let t1 = route(&c, &ns.addr, "T1").await.expect("T1 route");
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

    let t2 = route(&c, &ns.addr, "T2").await.expect("T2 route");
    assert_eq!(t2.broker_datas.len(), 1);
    assert_eq!(t2.broker_datas[0].cluster, "C2");

    let (code, remark) = route(&c, &ns.addr, "Nope")
        .await
        .expect_err("unknown topic");
    assert_eq!(code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
    assert!(
        remark.starts_with("No topic route info in name server for the topic: Nope"),
        "{remark}"
    );

    let info = c
        .invoke_ok(
            &ns.addr,
            request(RequestCode::GET_BROKER_CLUSTER_INFO, &[]),
            T,
        )
        .await
        .expect("info");
    let info: ClusterInfo = fastjson::decode(&info.body).expect("cluster info");
    assert_eq!(
        info.cluster_addr_table["C1"].iter().collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(info.broker_addr_table["a"].broker_addrs.0.len(), 2);

    let by_cluster = c
        .invoke_ok(
            &ns.addr,
            request(RequestCode::GET_TOPICS_BY_CLUSTER, &[("cluster", "C2")]),
            T,
        )
        .await
        .expect("topics");
    let by_cluster: TopicList = fastjson::decode(&by_cluster.body).expect("list");
    assert_eq!(by_cluster.topic_list, ["T2"]);

    let all = c
        .invoke_ok(
            &ns.addr,
            request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]),
            T,
        )
        .await
        .expect("all");
    let all: TopicList = fastjson::decode(&all.body).expect("list");
    assert_eq!(all.topic_list, ["T1", "T2", "TBW102"]);

    let system = c
        .invoke_ok(
            &ns.addr,
            request(RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS, &[]),
            T,
        )
        .await
        .expect("sys");
    let system: TopicList = fastjson::decode(&system.body).expect("list");
    assert_eq!(system.topic_list, ["C1", "a", "b", "C2", "c"]);
    assert!(system.broker_addr.is_some());
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn route_json_dialect_follows_the_request_version() {
    let ns = start().await;
    let c = client();
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T"],
            version: 1,
        },
    )
    .await;

    let mut old = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")]);
    old.version = 333; // the C++ SDK
    let body = c.invoke_ok(&ns.addr, old, T).await.expect("route").body;
    let text = String::from_utf8(body.to_vec()).expect("utf8");
    assert!(
        text.contains(r#""brokerAddrs":{0:"127.0.1.1:10911"}"#),
        "{text}"
    );
    assert!(!text.contains(' '), "compact, no whitespace");

    let mut new = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")]);
    new.version = 401;
    let text = String::from_utf8(
        c.invoke_ok(&ns.addr, new, T)
            .await
            .expect("route")
            .body
            .to_vec(),
    )
    .expect("utf8");
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
    let text = String::from_utf8(
        c.invoke_ok(&ns.addr, asked, T)
            .await
            .expect("route")
            .body
            .to_vec(),
    )
    .expect("utf8");
    assert!(text.contains(r#"{"0":"#), "{text}");
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn slave_registration_returns_its_master() {
    let ns = start().await;
    let c = client();
    let lone_slave = register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 1,
            addr: "127.0.1.2:10911",
            topics: &[],
            version: 1,
        },
    )
    .await;
    let h = RegisterBrokerResponseHeader::from_ext_fields(&lone_slave.ext_fields).expect("header");
    assert_eq!(h.master_addr, None, "no master registered yet");

    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T"],
            version: 1,
        },
    )
    .await;
    let resp = register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 1,
            addr: "127.0.1.2:10911",
            topics: &[],
            version: 1,
        },
    )
    .await;
    let h = RegisterBrokerResponseHeader::from_ext_fields(&resp.ext_fields).expect("header");
    assert_eq!(h.master_addr.as_deref(), Some("127.0.1.1:10911"));
    assert_eq!(h.ha_server_addr.as_deref(), Some("127.0.1.1:10911-ha"));
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn silent_brokers_expire() {
    let ns = start_with(tempfile::tempdir().expect("tempdir"), |c| {
        c.scan_not_active_broker_interval = 100;
        c.broker_channel_expired_time = 400;
    })
    .await;
    let c = client();
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T"],
            version: 1,
        },
    )
    .await;
    route(&c, &ns.addr, "T").await.expect("registered");
    let started = Instant::now();
    eventually("the silent broker expires", async || {
        route(&c, &ns.addr, "T").await.is_err()
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "not before its timeout"
    );
    assert_eq!(ns.handle.routes().live_broker_count(), 0);

    // A broker that keeps registering stays.
    let keep = Broker {
        cluster: "C",
        name: "b",
        id: 0,
        addr: "127.0.1.2:10911",
        topics: &["U"],
        version: 1,
    };
    for _ in 0..10 {
        register(&c, &ns.addr, &keep).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    route(&c, &ns.addr, "U").await.expect("still registered");
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn a_dropped_broker_connection_removes_the_broker_at_once() {
    let ns = start().await;
    let broker_conn = client();
    register(
        &broker_conn,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T"],
            version: 1,
        },
    )
    .await;
    let c = client();
    route(&c, &ns.addr, "T").await.expect("registered");
    broker_conn.shutdown().await;
    eventually("the broker is removed", async || {
        route(&c, &ns.addr, "T").await.is_err()
    })
    .await;
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn name_servers_are_independent() {
    let ns1 = start().await;
    let ns2 = start().await;
    let c = client();
    let b = Broker {
        cluster: "C",
        name: "a",
        id: 0,
        addr: "127.0.1.1:10911",
        topics: &["T"],
        version: 1,
    };
    register(&c, &ns1.addr, &b).await;
    route(&c, &ns1.addr, "T").await.expect("on ns1");
    assert!(
        route(&c, &ns2.addr, "T").await.is_err(),
        "ns2 knows nothing of ns1's brokers"
    );
    register(&c, &ns2.addr, &b).await;
    c.invoke_ok(
        &ns1.addr,
        request(
            RequestCode::UNREGISTER_BROKER,
            &[
                ("brokerName", "a"),
                ("brokerAddr", "127.0.1.1:10911"),
                ("clusterName", "C"),
                ("brokerId", "0"),
            ],
        ),
        T,
    )
    .await
    .expect("unregistered");
    assert!(route(&c, &ns1.addr, "T").await.is_err());
    route(&c, &ns2.addr, "T").await.expect("still on ns2");
    ns1.handle.shutdown().await;
    ns2.handle.shutdown().await;
}

#[tokio::test]
async fn malformed_requests_get_errors_and_the_server_keeps_serving() {
    let ns = start().await;
    let c = client();
    let b = Broker {
        cluster: "C",
        name: "a",
        id: 0,
        addr: "127.0.1.1:10911",
        topics: &["T"],
        version: 1,
    };

    let mut garbage = registration(&b, false);
    garbage.body = bytes::Bytes::from_static(b"{\"topicConfigSerializeWrapper\":[oops");
    garbage.ext_fields.remove("bodyCrc32");
    let resp = c.invoke(&ns.addr, garbage, T).await.expect("answer");
    assert_eq!(resp.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(
        resp.remark_str().contains("malformed"),
        "{}",
        resp.remark_str()
    );

    let mut bad_zlib = registration(&b, true);
    bad_zlib.body = bytes::Bytes::from_static(b"definitely not zlib");
    bad_zlib.ext_fields.remove("bodyCrc32");
    assert_eq!(
        c.invoke(&ns.addr, bad_zlib, T).await.expect("answer").code,
        1
    );

    let mut bad_crc = registration(&b, false);
    bad_crc.ext_fields.insert("bodyCrc32", "12345");
    let resp = c.invoke(&ns.addr, bad_crc, T).await.expect("answer");
    assert_eq!((resp.code, resp.remark_str()), (1, "crc32 not match"));

    let mut missing = registration(&b, false);
    missing.ext_fields.remove("brokerId");
    let resp = c.invoke(&ns.addr, missing, T).await.expect("answer");
    assert_eq!(resp.code, 1);
    assert!(
        resp.remark_str().contains("brokerId"),
        "{}",
        resp.remark_str()
    );

    let mut bad_number = registration(&b, false);
    bad_number.ext_fields.insert("brokerId", "zero");
    assert_eq!(
        c.invoke(&ns.addr, bad_number, T)
            .await
            .expect("answer")
            .code,
        1
    );

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
    assert_eq!(c.invoke(&ns.addr, dv, T).await.expect("answer").code, 1);

    assert!(
        route(&c, &ns.addr, "T").await.is_err(),
        "nothing was registered by the bad requests"
    );
    register(&c, &ns.addr, &b).await;
    route(&c, &ns.addr, "T")
        .await
        .expect("served after the errors");
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn compressed_and_cpp_style_registrations_work() {
    let ns = start().await;
    let c = client();
    let b = Broker {
        cluster: "C",
        name: "a",
        id: 0,
        addr: "127.0.1.1:10911",
        topics: &["T"],
        version: 1,
    };
    c.invoke_ok(&ns.addr, registration(&b, true), T)
        .await
        .expect("compressed registration");
    assert_eq!(
        route(&c, &ns.addr, "T").await.expect("route").queue_datas[0].read_queue_nums,
        4
    );

    // Numbers as JSON numbers and an empty body, as some clients send.
    let raw = r#"{"brokerName":"z","brokerAddr":"127.0.1.9:10911","clusterName":"C","haServerAddr":"x","brokerId":0,"compressed":false,"bodyCrc32":0}"#;
    let fields: ExtFields = serde_json::from_str(raw).expect("fields");
    c.invoke_ok(
        &ns.addr,
        RemotingCommand::request(RequestCode::REGISTER_BROKER, fields),
        T,
    )
    .await
    .expect("registered");
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn data_version_queries_report_changes() {
    let ns = start().await;
    let c = client();
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T"],
            version: 7,
        },
    )
    .await;
    let fields = [
        ("brokerName", "a"),
        ("brokerAddr", "127.0.1.1:10911"),
        ("clusterName", "C"),
        ("brokerId", "0"),
    ];
    let same = DataVersion {
        counter: 7,
        state_version: 0,
        timestamp: 1,
    };
    let resp = c
        .invoke_ok(
            &ns.addr,
            request(RequestCode::QUERY_DATA_VERSION, &fields).with_body(fastjson::encode(&same)),
            T,
        )
        .await
        .expect("answer");
    assert_eq!(resp.ext_fields.get("changed"), Some("false"));
    let stored: DataVersion = fastjson::decode(&resp.body).expect("stored version");
    assert_eq!(stored, same);
    let newer = DataVersion { counter: 8, ..same };
    let resp = c
        .invoke_ok(
            &ns.addr,
            request(RequestCode::QUERY_DATA_VERSION, &fields).with_body(fastjson::encode(&newer)),
            T,
        )
        .await
        .expect("answer");
    assert_eq!(resp.ext_fields.get("changed"), Some("true"));
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn kv_config_is_served_and_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kv_path = dir.path().join("kvConfig.json");
    let ns = start_with(dir, |_| {}).await;
    let c = client();
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
    c.invoke_ok(&ns.addr, put("", "T", "a:4;b:4"), T)
        .await
        .expect("put");
    c.invoke_ok(&ns.addr, put("", "U", "a:2"), T)
        .await
        .expect("put");
    let got = c
        .invoke_ok(
            &ns.addr,
            request(
                RequestCode::GET_KV_CONFIG,
                &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "T")],
            ),
            T,
        )
        .await
        .expect("get");
    assert_eq!(got.ext_fields.get("value"), Some("a:4;b:4"));
    c.invoke_ok(
        &ns.addr,
        request(
            RequestCode::DELETE_KV_CONFIG,
            &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "U")],
        ),
        T,
    )
    .await
    .expect("delete");
    let missing = c
        .invoke(
            &ns.addr,
            request(
                RequestCode::GET_KV_CONFIG,
                &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "U")],
            ),
            T,
        )
        .await
        .expect("answer");
    assert_eq!(missing.code, ResponseCode::QUERY_NOT_FOUND.as_i32());
    assert_eq!(
        missing.remark_str(),
        "No config item, Namespace: ORDER_TOPIC_CONFIG Key: U"
    );

    // The file is Java's format, then a new name server reads it back.
    let file = std::fs::read_to_string(&kv_path).expect("persisted");
    assert!(file.contains("\"configTable\""), "{file}");
    let dir = ns._dir;
    ns.handle.shutdown().await;
    let ns = start_with(dir, |_| {}).await;
    let list = c
        .invoke_ok(
            &ns.addr,
            request(
                RequestCode::GET_KVLIST_BY_NAMESPACE,
                &[("namespace", "ORDER_TOPIC_CONFIG")],
            ),
            T,
        )
        .await
        .expect("list");
    let table: KvTable = fastjson::decode(&list.body).expect("kv table");
    assert_eq!(table.table.len(), 1);
    assert_eq!(table.table["T"], "a:4;b:4");
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn order_topic_conf_is_served_when_enabled_at_runtime() {
    let ns = start().await;
    let c = client();
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T"],
            version: 1,
        },
    )
    .await;
    c.invoke_ok(
        &ns.addr,
        request(
            RequestCode::PUT_KV_CONFIG,
            &[
                ("namespace", "ORDER_TOPIC_CONFIG"),
                ("key", "T"),
                ("value", "a:4"),
            ],
        ),
        T,
    )
    .await
    .expect("put");
    assert_eq!(
        route(&c, &ns.addr, "T")
            .await
            .expect("route")
            .order_topic_conf,
        None,
        "off by default"
    );

    let update = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[])
        .with_body(&b"orderMessageEnable=true\n"[..]);
    c.invoke_ok(&ns.addr, update, T)
        .await
        .expect("config updated");
    assert_eq!(
        route(&c, &ns.addr, "T")
            .await
            .expect("route")
            .order_topic_conf
            .as_deref(),
        Some("a:4")
    );

    let config = c
        .invoke_ok(&ns.addr, request(RequestCode::GET_NAMESRV_CONFIG, &[]), T)
        .await
        .expect("config");
    let text = String::from_utf8(config.body.to_vec()).expect("utf8");
    assert!(text.contains("orderMessageEnable=true\n"), "{text}");

    let forbidden = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[])
        .with_body(&b"kvConfigPath=/etc/passwd\n"[..]);
    let resp = c.invoke(&ns.addr, forbidden, T).await.expect("answer");
    assert_eq!(resp.code, ResponseCode::NO_PERMISSION.as_i32());
    let invalid = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[])
        .with_body(&b"scanNotActiveBrokerInterval=soon\n"[..]);
    assert_eq!(
        c.invoke(&ns.addr, invalid, T).await.expect("answer").code,
        1
    );
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn write_permission_can_be_wiped_and_restored() {
    let ns = start().await;
    let c = client();
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T", "U"],
            version: 1,
        },
    )
    .await;
    let wiped = c
        .invoke_ok(
            &ns.addr,
            request(
                RequestCode::WIPE_WRITE_PERM_OF_BROKER,
                &[("brokerName", "a")],
            ),
            T,
        )
        .await
        .expect("wipe");
    assert_eq!(wiped.ext_fields.get("wipeTopicCount"), Some("2"));
    assert_eq!(
        route(&c, &ns.addr, "T").await.expect("route").queue_datas[0].perm,
        4
    );
    let added = c
        .invoke_ok(
            &ns.addr,
            request(
                RequestCode::ADD_WRITE_PERM_OF_BROKER,
                &[("brokerName", "a")],
            ),
            T,
        )
        .await
        .expect("add");
    assert_eq!(added.ext_fields.get("addTopicCount"), Some("2"));
    assert_eq!(
        route(&c, &ns.addr, "T").await.expect("route").queue_datas[0].perm,
        6
    );
    ns.handle.shutdown().await;
}

#[tokio::test]
async fn topics_can_be_deleted_everywhere_or_per_cluster() {
    let ns = start().await;
    let c = client();
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C1",
            name: "a",
            id: 0,
            addr: "127.0.1.1:10911",
            topics: &["T", "U"],
            version: 1,
        },
    )
    .await;
    register(
        &c,
        &ns.addr,
        &Broker {
            cluster: "C2",
            name: "b",
            id: 0,
            addr: "127.0.1.2:10911",
            topics: &["T"],
            version: 1,
        },
    )
    .await;
    c.invoke_ok(
        &ns.addr,
        request(
            RequestCode::DELETE_TOPIC_IN_NAMESRV,
            &[("topic", "T"), ("clusterName", "C1")],
        ),
        T,
    )
    .await
    .expect("delete");
    let t = route(&c, &ns.addr, "T").await.expect("still on C2");
    assert_eq!(t.queue_datas.len(), 1);
    assert_eq!(t.queue_datas[0].broker_name, "b");
    c.invoke_ok(
        &ns.addr,
        request(RequestCode::DELETE_TOPIC_IN_NAMESRV, &[("topic", "U")]),
        T,
    )
    .await
    .expect("delete");
    assert!(route(&c, &ns.addr, "U").await.is_err());
    ns.handle.shutdown().await;
}
