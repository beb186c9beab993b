//! `mqadmin` as users run it, against an in-process name server and broker. (Its usage
//! errors, which need no server, are tested in `tools/tests/cli.rs`.)

use stellmq_testkit::process::command;
use stellmq_testkit::Stack;

/// A name server and broker-a, registered.
async fn start() -> Stack {
    let stack = Stack::start().await;
    stack.broker().register_now().await;
    stack
}

/// Runs mqadmin with `-n ns`; returns (success, stdout, stderr).
pub(crate) async fn mqadmin(ns: &str, args: &[&str]) -> (bool, String, String) {
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
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs mqadmin with `-n ns` and returns its stdout; it must succeed.
pub(crate) async fn ok(ns: &str, args: &[&str]) -> String {
    let (success, out, err) = mqadmin(ns, args).await;
    assert!(success, "mqadmin {args:?} failed: {err}\n{out}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_messages_and_queries() {
    let s = start().await;
    let ns = s.ns_addr();
    let out = ok(
        ns,
        &[
            "updateTopic",
            "-t",
            "AdminTopic",
            "-c",
            "DefaultCluster",
            "-r",
            "2",
            "-w",
            "2",
        ],
    )
    .await;
    assert!(
        out.contains("create topic to") && out.contains("success"),
        "{out}"
    );
    assert!(ok(ns, &["topicList"])
        .await
        .lines()
        .any(|l| l == "AdminTopic"));
    let route = ok(ns, &["topicRoute", "-t", "AdminTopic"]).await;
    assert!(route.contains("\"writeQueueNums\":2"), "{route}");
    assert_eq!(
        ok(ns, &["topicClusterList", "-t", "AdminTopic"])
            .await
            .trim(),
        "DefaultCluster"
    );

    let sent = ok(
        ns,
        &[
            "sendMessage",
            "-t",
            "AdminTopic",
            "-p",
            "hello admin",
            "-k",
            "admin-key",
            "-c",
            "TagX",
            "-i",
            "1",
        ],
    )
    .await;
    assert!(sent.contains("SEND_OK"), "{sent}");
    let msg_id = sent
        .lines()
        .last()
        .and_then(|l| l.split_whitespace().last())
        .expect("msg id")
        .to_owned();
    assert_eq!(msg_id.len(), 32);
    s.broker()
        .store()
        .wait_dispatched(std::time::Duration::from_secs(10));

    let by_key = ok(
        ns,
        &["queryMsgByKey", "-t", "AdminTopic", "-k", "admin-key"],
    )
    .await;
    assert!(by_key.contains(&msg_id), "{by_key}");
    let by_id = ok(ns, &["queryMsgById", "-i", &msg_id]).await;
    assert!(
        by_id.contains("hello admin") && by_id.contains("[TagX]") && by_id.contains("[admin-key]"),
        "{by_id}"
    );
    let by_offset = ok(
        ns,
        &[
            "queryMsgByOffset",
            "-t",
            "AdminTopic",
            "-b",
            "broker-a",
            "-i",
            "1",
            "-o",
            "0",
        ],
    )
    .await;
    assert!(by_offset.contains("hello admin"), "{by_offset}");
    let status = ok(ns, &["topicStatus", "-t", "AdminTopic"]).await;
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("broker-a") && l.contains("  1  ")),
        "{status}"
    );
    let consumed = ok(ns, &["consumeMessage", "-t", "AdminTopic"]).await;
    assert!(consumed.contains("body: hello admin"), "{consumed}");
    let cq = ok(
        ns,
        &[
            "queryCq",
            "-t",
            "AdminTopic",
            "-q",
            "1",
            "-i",
            "0",
            "-c",
            "5",
        ],
    )
    .await;
    assert!(cq.contains("maxQueueIndex: 1"), "{cq}");
    let tags_code = stellmq_remoting::protocol::message::java_string_hash("TagX");
    assert!(
        cq.contains("idx: 0, physicOffset: ") && cq.contains(&format!("tagsCode: {tags_code}")),
        "{cq}"
    );
    let beyond = mqadmin(ns, &["queryCq", "-t", "AdminTopic", "-q", "1", "-i", "7"]).await;
    assert!(!beyond.0 && beyond.2.contains("Index 7"), "{beyond:?}");
    let printed = ok(ns, &["printMsg", "-t", "AdminTopic"]).await;
    assert!(printed.contains("BODY: hello admin"), "{printed}");
    // One message in, none consumed by a group yet: statsAll shows it with no consumer.
    let stats = ok(ns, &["statsAll", "-t", "AdminTopic"]).await;
    let row = stats
        .lines()
        .find(|l| l.starts_with("AdminTopic"))
        .unwrap_or_else(|| panic!("{stats}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(columns[columns.len() - 2..], ["1", "NO_CONSUMER"], "{row}");

    let missing = mqadmin(ns, &["queryMsgById", "-i", "nothex"]).await;
    assert!(!missing.0 && missing.2.contains("nothex"), "{missing:?}");
    let unknown = mqadmin(ns, &["topicRoute", "-t", "NoSuchTopic"]).await;
    assert!(
        !unknown.0 && unknown.2.contains("NoSuchTopic"),
        "{unknown:?}"
    );

    ok(
        ns,
        &["deleteTopic", "-t", "AdminTopic", "-c", "DefaultCluster"],
    )
    .await;
    assert!(!ok(ns, &["topicList"])
        .await
        .lines()
        .any(|l| l == "AdminTopic"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_groups_and_name_servers() {
    let s = start().await;
    let ns = s.ns_addr();
    let addr = s.addr().to_owned();
    let clusters = ok(ns, &["clusterList"]).await;
    assert!(
        clusters.contains("DefaultCluster")
            && clusters.contains(&addr)
            && clusters.contains("V4_9_4"),
        "{clusters}"
    );
    assert!(ok(ns, &["brokerStatus", "-b", &addr])
        .await
        .contains("commitLogMaxOffset"));
    // clusterList -m: today's messages in, from the runtime info's totals.
    for i in 0..3 {
        assert_eq!(s.send("StatsTopic", 0, &format!("m{i}"), &[]).await.code, 0);
    }
    let more = ok(ns, &["clusterList", "-m"]).await;
    let row = more
        .lines()
        .find(|l| l.starts_with("DefaultCluster"))
        .unwrap_or_else(|| panic!("{more}"));
    let figures: Vec<&str> = row.split_whitespace().collect();
    assert!(more.contains("#InTotalToday"), "{more}");
    assert_eq!(
        figures,
        ["DefaultCluster", "broker-a", "0", "0", "3", "0"],
        "{more}"
    );
    assert!(!ok(ns, &["clusterList", "-c", "NoSuchCluster"])
        .await
        .contains("broker-a"));
    ok(
        ns,
        &[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "defaultQueryMaxNum",
            "-v",
            "16",
        ],
    )
    .await;
    assert!(ok(ns, &["getBrokerConfig", "-c", "DefaultCluster"])
        .await
        .contains("defaultQueryMaxNum"));

    ok(
        ns,
        &[
            "updateSubGroup",
            "-g",
            "adminGroup",
            "-c",
            "DefaultCluster",
            "-r",
            "3",
        ],
    )
    .await;
    ok(ns, &["updateTopic", "-t", "Progress", "-b", &addr]).await;
    ok(ns, &["sendMessage", "-t", "Progress", "-p", "x", "-i", "0"]).await;
    s.broker().register_now().await;
    s.broker()
        .store()
        .wait_dispatched(std::time::Duration::from_secs(10));
    let progress = ok(
        ns,
        &["consumerProgress", "-g", "adminGroup", "-t", "Progress"],
    )
    .await;
    assert!(progress.contains("Diff Total:"), "{progress}");
    // A new group can start where another one is.
    let admin = stellmq_client::AdminClient::new(ns).expect("admin");
    admin
        .update_consumer_offset(&addr, "adminGroup", "Progress", 0, 1)
        .await
        .expect("offset");
    let cloned = ok(
        ns,
        &[
            "cloneGroupOffset",
            "-s",
            "adminGroup",
            "-d",
            "clonedGroup",
            "-t",
            "Progress",
            "-o",
            "true",
        ],
    )
    .await;
    assert!(cloned.contains("clone group offset success"), "{cloned}");
    let stats = admin
        .consume_stats(&addr, "clonedGroup", Some("Progress"))
        .await
        .expect("consume stats");
    assert!(
        stats
            .offset_table
            .0
            .iter()
            .any(|(mq, o)| mq.queue_id == 0 && o.consumer_offset == 1),
        "{stats:?}"
    );
    admin.shutdown().await;
    let consume = ok(ns, &["brokerConsumeStats", "-b", &addr]).await;
    assert!(consume.contains("Diff Total:"), "{consume}");
    let rt = ok(ns, &["clusterRT", "-a", "5"]).await;
    assert!(
        rt.lines().any(|l| l.starts_with("DefaultCluster")
            && l.contains("broker-a")
            && l.contains(" 5 ")),
        "{rt}"
    );
    ok(ns, &["deleteSubGroup", "-g", "adminGroup", "-b", &addr]).await;

    let wiped = ok(ns, &["wipeWritePerm", "-b", "broker-a"]).await;
    assert!(
        wiped.contains("wipe write perm of broker[broker-a]"),
        "{wiped}"
    );
    ok(ns, &["addWritePerm", "-b", "broker-a"]).await;
    ok(ns, &["updateKvConfig", "-s", "ns1", "-k", "k1", "-v", "v1"]).await;
    ok(
        ns,
        &[
            "updateOrderConf",
            "-t",
            "Progress",
            "-m",
            "put",
            "-v",
            "broker-a:8",
        ],
    )
    .await;
    assert!(ok(ns, &["updateOrderConf", "-t", "Progress", "-m", "get"])
        .await
        .contains("broker-a:8"));
    ok(ns, &["deleteKvConfig", "-s", "ns1", "-k", "k1"]).await;
    ok(
        ns,
        &[
            "updateNamesrvConfig",
            "-k",
            "orderMessageEnable",
            "-v",
            "true",
        ],
    )
    .await;
    assert!(ok(ns, &["getNamesrvConfig"])
        .await
        .contains("orderMessageEnable"));
    s.stop().await;
}
