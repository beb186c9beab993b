//! Names from clients never reach a path: traversal and malformed topic and group names are
//! refused with RocketMQ's codes and change nothing on disk, and auto-creation is bounded.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use stellmq_remoting::protocol::body::{fastjson, MessageModel, SubscriptionGroupConfig};
use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::{batch, id};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use stellmq_testkit::{eventually, heartbeat, request, send_header, Pull, Stack};

const SYSTEM_ERROR: i32 = 1;
const MESSAGE_ILLEGAL: i32 = 13;
const NO_PERMISSION: i32 = 16;
const TOPIC_NOT_EXIST: i32 = 17;

/// Every path under `root`, relative to it.
fn tree(root: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path.clone());
            }
            out.insert(path.strip_prefix(root).expect("under root").to_owned());
        }
    }
    out
}

/// Paths of the temp dir, without the files that change on their own (config rewrites,
/// checkpoint) so that "nothing changed" means no directory or segment appeared or vanished.
fn layout(root: &Path) -> BTreeSet<PathBuf> {
    let commitlog = Path::new("store").join("commitlog");
    tree(root)
        .into_iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            // CommitLog segments are created ahead of use by the broker's allocator at any
            // moment; no topic name can make or remove one.
            let segment = p.starts_with(&commitlog) && p != &commitlog;
            !(s.ends_with(".tmp") || s.ends_with(".bak") || segment)
        })
        .collect()
}

fn msg_phys(response: &RemotingCommand) -> i64 {
    let h = SendMessageResponseHeader::from_ext_fields(&response.ext_fields).expect("header");
    id::decode_offset_msg_id(&h.msg_id).expect("id").1
}

#[tokio::test]
async fn traversal_topics_are_refused_and_delete_nothing() {
    let stack = Stack::start().await;
    let outside = stack.dir().join("some").join("dir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("keep.txt"), b"precious").expect("write");

    // Positive precondition: a real topic's queues exist and deleting it removes them.
    let r = stack.send("Doomed", 0, "bye", &[]).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let r = stack.send("Kept", 0, "stay", &[]).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let cq = stack.dir().join("store").join("consumequeue");
    eventually("queues dispatched", async || {
        cq.join("Doomed").exists() && cq.join("Kept").exists()
    })
    .await;
    let r = stack
        .call(request(
            RequestCode::DELETE_TOPIC_IN_BROKER,
            &[("topic", "Doomed")],
        ))
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    assert!(
        !cq.join("Doomed").exists(),
        "a real delete removes the queues"
    );

    let before = layout(stack.dir());
    let outside_abs = outside.to_string_lossy().into_owned();
    for topic in [
        "../commitlog",
        "..",
        outside_abs.as_str(),
        "Kept/../../commitlog",
        "a\0b",
    ] {
        for code in [
            RequestCode::DELETE_TOPIC_IN_BROKER,
            RequestCode::UPDATE_AND_CREATE_TOPIC,
        ] {
            let r = stack.call(request(code, &[("topic", topic)])).await;
            assert_eq!(r.code, SYSTEM_ERROR, "{code} {topic:?} refused");
            assert!(
                r.remark_str().contains("illegal characters"),
                "{code} {topic:?}: {}",
                r.remark_str()
            );
        }
        let r = stack.send(topic, 0, "x", &[]).await;
        assert_eq!(
            r.code,
            SYSTEM_ERROR,
            "send to {topic:?}: {}",
            r.remark_str()
        );
    }
    let long = "t".repeat(128);
    let r = stack
        .call(request(
            RequestCode::UPDATE_AND_CREATE_TOPIC,
            &[("topic", &long)],
        ))
        .await;
    assert_eq!(r.code, SYSTEM_ERROR);
    assert!(
        r.remark_str().contains("longer than topic max length"),
        "{}",
        r.remark_str()
    );

    assert_eq!(layout(stack.dir()), before, "nothing appeared or vanished");
    assert_eq!(
        std::fs::read(outside.join("keep.txt")).expect("still there"),
        b"precious"
    );
    let got = stack.pull_until("g", "Kept", 0, 1).await;
    assert_eq!(got.len(), 1, "the CommitLog still serves");
    stack.stop().await;
}

#[tokio::test]
async fn bad_group_names_are_refused_and_consumption_goes_on() {
    let stack = Stack::start().await;
    let r = stack.send("Work", 0, "job", &[]).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let phys = msg_phys(&r);
    let back = |group: &str| {
        request(
            RequestCode::CONSUMER_SEND_MSG_BACK,
            &[
                ("offset", &phys.to_string()),
                ("group", group),
                ("delayLevel", "0"),
            ],
        )
    };
    // Positive precondition: a good group's send-back creates its retry topic.
    let r = stack.call(back("good")).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());

    let before = layout(stack.dir());
    for group in ["../../escape", "a/b", "..", "x y"] {
        let r = stack.call(back(group)).await;
        assert_eq!(
            r.code,
            SYSTEM_ERROR,
            "send-back for {group:?}: {}",
            r.remark_str()
        );
        assert!(
            r.remark_str().contains("illegal characters"),
            "{}",
            r.remark_str()
        );
        let r = stack
            .pull(Pull::new(group, "Work", 0, 0).subscribe("*").suspend(0))
            .await;
        assert_eq!(r.code, SYSTEM_ERROR, "pull as {group:?}");
        let r = stack
            .call(
                request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[])
                    .with_body(fastjson::encode(&SubscriptionGroupConfig::new(group))),
            )
            .await;
        assert_eq!(r.code, SYSTEM_ERROR, "create group {group:?}");
        let r = stack
            .call(heartbeat(
                "c1",
                group,
                &[("Work", "*")],
                MessageModel::Clustering,
            ))
            .await;
        assert_eq!(r.code, 0, "a heartbeat skips the bad group");
    }
    // Too long for a group, and a valid group whose retry topic would not fit a file name.
    let r = stack.call(back(&"g".repeat(256))).await;
    assert_eq!(r.code, SYSTEM_ERROR, "{}", r.remark_str());
    let r = stack.call(back(&"g".repeat(250))).await;
    assert_eq!(r.code, SYSTEM_ERROR, "{}", r.remark_str());
    assert!(r.remark_str().contains("max length"), "{}", r.remark_str());
    // The broker's own groups are not for clients.
    let r = stack
        .call(request(
            RequestCode::UPDATE_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "CID_RMQ_SYS_TRANS"),
                ("topic", "Work"),
                ("queueId", "0"),
                ("commitOffset", "5"),
            ],
        ))
        .await;
    assert_eq!(r.code, NO_PERMISSION, "{}", r.remark_str());

    let groups = stack
        .call(request(RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, &[]))
        .await;
    let listed = String::from_utf8_lossy(&groups.body).into_owned();
    assert!(listed.contains("\"good\""), "{listed}");
    assert!(
        !listed.contains("escape") && !listed.contains("x y"),
        "{listed}"
    );
    let after: BTreeSet<PathBuf> = layout(stack.dir()).difference(&before).cloned().collect();
    assert!(
        after
            .iter()
            .all(|p| !p.to_string_lossy().contains("escape")),
        "{after:?}"
    );

    // Consumption is not stuck: new messages are dispatched and pulled.
    let r = stack.send("Work", 0, "after", &[]).await;
    assert_eq!(r.code, 0);
    assert_eq!(stack.pull_until("g2", "Work", 0, 2).await.len(), 2);
    stack.stop().await;
}

#[tokio::test]
async fn offsets_are_kept_only_for_real_queues() {
    let stack = Stack::start().await;
    let r = stack.send("Real", 0, "x", &[]).await;
    assert_eq!(r.code, 0);
    let commit = |topic: &str, queue: &str| {
        request(
            RequestCode::UPDATE_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "og"),
                ("topic", topic),
                ("queueId", queue),
                ("commitOffset", "1"),
            ],
        )
    };
    assert_eq!(stack.call(commit("Real", "0")).await.code, 0);
    let r = stack.call(commit("Ghost", "0")).await;
    assert_eq!(r.code, TOPIC_NOT_EXIST, "{}", r.remark_str());
    let r = stack.call(commit("Real", "100000")).await;
    assert_eq!(r.code, SYSTEM_ERROR, "{}", r.remark_str());
    let all = stack
        .call(request(RequestCode::GET_ALL_CONSUMER_OFFSET, &[]))
        .await;
    let body = String::from_utf8_lossy(&all.body).into_owned();
    assert!(
        body.contains("Real@og") && !body.contains("Ghost"),
        "{body}"
    );
    stack.stop().await;
}

#[tokio::test]
async fn auto_creation_is_bounded_in_count_and_rate() {
    let stack = Stack::start_with(|c| {
        c.broker.auto_create_rate_per_second = 3;
    })
    .await;
    // A burst: at most a second's worth is created, the rest is refused with a reason.
    let mut created = 0;
    let mut refused = 0;
    for i in 0..10 {
        let r = stack.send(&format!("Burst{i}"), 0, "x", &[]).await;
        match r.code {
            0 => created += 1,
            TOPIC_NOT_EXIST => {
                assert!(
                    r.remark_str().contains("autoCreateRatePerSecond"),
                    "{}",
                    r.remark_str()
                );
                refused += 1;
            }
            other => panic!("unexpected {other}: {}", r.remark_str()),
        }
    }
    assert!((1..=4).contains(&created), "created {created}");
    assert!(refused >= 6, "refused {refused}");
    // That the rate refills with time is broker/src/limits.rs's unit test (on given instants).
    stack.stop().await;

    let existing = {
        let probe = Stack::start().await;
        let all = probe
            .call(request(RequestCode::GET_ALL_TOPIC_CONFIG, &[]))
            .await;
        let n = String::from_utf8_lossy(&all.body)
            .matches("\"topicName\"")
            .count();
        probe.stop().await;
        n
    };
    let stack = Stack::start_with(|c| {
        c.broker.auto_create_topic_limit = existing + 2;
    })
    .await;
    assert_eq!(stack.send("New1", 0, "x", &[]).await.code, 0);
    assert_eq!(stack.send("New2", 0, "x", &[]).await.code, 0);
    let r = stack.send("New3", 0, "x", &[]).await;
    assert_eq!(r.code, TOPIC_NOT_EXIST);
    assert!(
        r.remark_str().contains("autoCreateTopicLimit"),
        "{}",
        r.remark_str()
    );
    let r = stack
        .call(request(
            RequestCode::UPDATE_AND_CREATE_TOPIC,
            &[
                ("topic", "ByAdmin"),
                ("defaultTopic", "TBW102"),
                ("readQueueNums", "1"),
                ("writeQueueNums", "1"),
                ("perm", "6"),
                ("topicFilterType", "SINGLE_TAG"),
            ],
        ))
        .await;
    assert_eq!(r.code, 0, "admins are not limited: {}", r.remark_str());
    stack.stop().await;
}

#[tokio::test]
async fn batches_are_bounded_in_count_and_size() {
    let stack = Stack::start_with(|c| {
        c.broker.max_batch_message_count = 3;
        c.store.max_message_size = 4096;
    })
    .await;
    let batch_request = |n: usize, body_len: usize| {
        let items: Vec<batch::BatchItem> = (0..n)
            .map(|i| batch::BatchItem {
                flag: 0,
                body: vec![b'a' + i as u8; body_len].into(),
                properties: String::new(),
            })
            .collect();
        let mut h = send_header("Batched", 0, &[]);
        h.batch = Some(true);
        let v2: stellmq_remoting::protocol::headers::SendMessageRequestHeaderV2 = h.into();
        RemotingCommand::request(RequestCode::SEND_BATCH_MESSAGE, v2.to_ext_fields())
            .with_body(batch::encode(&items))
    };
    let r = stack.call(batch_request(3, 10)).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let r = stack.call(batch_request(4, 10)).await;
    assert_eq!(r.code, MESSAGE_ILLEGAL);
    assert!(
        r.remark_str().contains("maxBatchMessageCount"),
        "{}",
        r.remark_str()
    );
    let r = stack.call(batch_request(3, 2000)).await;
    assert_eq!(
        r.code, MESSAGE_ILLEGAL,
        "a batch body is bounded by maxMessageSize"
    );
    assert_eq!(stack.pull_until("g", "Batched", 0, 3).await.len(), 3);
    stack.stop().await;
}
