//! `exportMetadata`, `exportConfigs` and `exportMetrics` run as users run them (the
//! `mqadmin` binary) against an in-process name server and broker: each writes its JSON
//! file under `-f`, user topics and groups only (retry and DLQ topics with `-s`).

use std::path::Path;

use serde_json::Value;
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::body::{
    fastjson, ConsumerOffsetSerializeWrapper, SubscriptionGroupConfig, TopicConfig,
};
use stellmq_testkit::process::command;
use stellmq_testkit::Stack;

async fn ok(ns: &str, args: &[&str]) -> String {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["-n".to_owned(), ns.to_owned()]);
    let out = tokio::task::spawn_blocking(move || {
        command("mqadmin")
            .args(&all)
            .env_remove("NAMESRV_ADDR")
            .output()
    })
    .await
    .expect("join")
    .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mqadmin {args:?}: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn read(dir: &Path, file: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(file)).expect("written");
    serde_json::from_str(&text).expect("json")
}

/// A stack with topic `Exported` (3 queues), its retry topic, and group `export-g`.
async fn stack() -> Stack {
    let stack = Stack::start().await;
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    for topic in ["Exported", "%RETRY%export-g"] {
        admin
            .create_topic(stack.addr(), &TopicConfig::with_queues(topic, 3, 3, 6))
            .await
            .expect("topic");
    }
    admin
        .create_group(stack.addr(), &SubscriptionGroupConfig::new("export-g"))
        .await
        .expect("group");
    admin.shutdown().await;
    stack.broker().register_now().await;
    stack
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_metadata_by_cluster_and_broker() {
    let stack = stack().await;
    let ns = stack.ns_addr();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let out = ok(ns, &["exportMetadata", "-c", "DefaultCluster", "-f", d]).await;
    assert!(out.contains("metadata.json success"), "{out}");
    let all = read(dir.path(), "metadata.json");
    let topics = &all["topicConfigTable"];
    assert_eq!(topics["Exported"]["readQueueNums"], 3, "{all}");
    assert!(
        topics.get("%RETRY%export-g").is_none(),
        "no retry topic without -s: {all}"
    );
    assert!(topics.get("TBW102").is_none(), "no system topic: {all}");
    assert!(
        all["subscriptionGroupTable"].get("export-g").is_some(),
        "{all}"
    );
    assert!(all["exportTime"].as_i64().unwrap_or(0) > 0, "{all}");

    ok(
        ns,
        &["exportMetadata", "-b", stack.addr(), "-t", "-s", "-f", d],
    )
    .await;
    let topics = read(dir.path(), "topic.json");
    assert!(
        topics["topicConfigTable"].get("%RETRY%export-g").is_some(),
        "{topics}"
    );
    assert!(topics.get("subscriptionGroupTable").is_none(), "{topics}");
    ok(
        ns,
        &["exportMetadata", "-c", "DefaultCluster", "-g", "-f", d],
    )
    .await;
    let groups = read(dir.path(), "subscriptionGroup.json");
    assert!(
        groups["subscriptionGroupTable"].get("export-g").is_some(),
        "{groups}"
    );
    assert!(groups.get("topicConfigTable").is_none(), "{groups}");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_configs_and_metrics_of_a_cluster() {
    let stack = stack().await;
    let ns = stack.ns_addr();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    ok(ns, &["exportConfigs", "-c", "DefaultCluster", "-f", d]).await;
    let configs = read(dir.path(), "configs.json");
    assert_eq!(configs["clusterScale"]["masterBrokerSize"], 1, "{configs}");
    assert_eq!(configs["clusterScale"]["slaveBrokerSize"], 0, "{configs}");
    assert_eq!(configs["clusterScale"]["namesrvSize"], 1, "{configs}");
    let brokers = configs["brokerConfigs"].as_object().expect("brokers");
    let (name, props) = brokers.iter().next().expect("one broker");
    assert_eq!(props["brokerName"], name.as_str(), "{configs}");
    assert_eq!(props["brokerClusterName"], "DefaultCluster", "{configs}");

    ok(ns, &["exportMetrics", "-c", "DefaultCluster", "-f", d]).await;
    let metrics = read(dir.path(), "metrics.json");
    let report = &metrics["evaluateReport"][name.as_str()];
    // Exported and the broker's own reply topic; export-g and any default groups.
    assert!(
        report["runtimeQuota"]["topicSize"].as_u64().unwrap_or(0) >= 1,
        "{metrics}"
    );
    assert!(
        report["runtimeQuota"]["groupSize"].as_u64().unwrap_or(0) >= 1,
        "{metrics}"
    );
    assert!(
        metrics["totalData"]["totalTps"]
            .get("totalNormalInTps")
            .is_some(),
        "{metrics}"
    );
    stack.stop().await;
}

/// `rocksDBConfigToJson` with the name server's `-n` dropped: it reads a store, offline.
fn offline(args: &[&str]) -> std::process::Output {
    command("mqadmin")
        .args(args)
        .env_remove("NAMESRV_ADDR")
        .output()
        .expect("runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_brokers_metadata_store_prints_as_rocketmqs_json() {
    let mut stack = stack().await;
    let commit = stellmq_testkit::request(
        stellmq_remoting::protocol::RequestCode::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "export-g"),
            ("topic", "Exported"),
            ("queueId", "2"),
            ("commitOffset", "0"),
        ],
    );
    stack.raw().call_ok(commit).await;
    let config = stack
        .broker()
        .config()
        .store
        .store_path_root_dir
        .join("config");
    let path = config.to_string_lossy().into_owned();

    let busy = tokio::task::spawn_blocking({
        let path = path.clone();
        move || offline(&["rocksDBConfigToJson", "-p", &path, "-t", "topics"])
    })
    .await
    .expect("join");
    assert!(!busy.status.success(), "a running broker holds the store");
    assert!(
        String::from_utf8_lossy(&busy.stderr).contains("is the broker stopped?"),
        "{}",
        String::from_utf8_lossy(&busy.stderr)
    );

    stack.stop_broker().await;
    let printed = |kind: &str| {
        let out = offline(&["rocksDBConfigToJson", "-p", &path, "-t", kind]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let print = |kind: &str| serde_json::from_slice::<Value>(&printed(kind)).expect("JSON");
    let topics = print("topics");
    assert_eq!(topics["topicConfigTable"]["Exported"]["readQueueNums"], 3);
    assert!(topics["dataVersion"]["counter"].as_i64() > Some(0));
    let groups = print("subscriptionGroups");
    assert_eq!(
        groups["subscriptionGroupTable"]["export-g"]["groupName"],
        "export-g"
    );
    // RocketMQ's dialect: queue ids as bare integer keys.
    let offsets: ConsumerOffsetSerializeWrapper =
        fastjson::decode(&printed("consumerOffsets")).expect("RocketMQ's JSON");
    assert_eq!(
        offsets.offset_table["Exported@export-g"].0.get(&2),
        Some(&0)
    );
    let unknown = offline(&["rocksDBConfigToJson", "-p", &path, "-t", "acl"]);
    assert!(!unknown.status.success());
    stack.stop().await;
}
