//! RocketMQ 5.5's lite topic commands of mqadmin against a real name server and broker:
//! a LITE parent topic and a bound group made with mqadmin, lite messages over TCP, a lite
//! subscription and POP_LITE_MESSAGE, then getBrokerLiteInfo, getParentTopicInfo,
//! getLiteTopicInfo, getLiteClientInfo, getLiteGroupInfo and triggerLiteDispatch.

use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::lite::{LiteSubscriptionCtlRequestBody, LiteSubscriptionDto};
use stellmq_remoting::protocol::headers::{CommandHeader, PopLiteMessageRequestHeader};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};
use stellmq_testkit::process::command;
use stellmq_testkit::Stack;

async fn mqadmin(ns: &str, args: &[&str]) -> (bool, String) {
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
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_describes_lite_topics_clients_and_lag() {
    let s = Stack::start().await;
    s.broker().register_now().await;
    let ns = s.ns_addr().to_owned();
    let ok = |r: (bool, String)| {
        assert!(r.0, "{}", r.1);
        r.1
    };
    ok(mqadmin(
        &ns,
        &[
            "updateTopic",
            "-c",
            "DefaultCluster",
            "-t",
            "Chat",
            "-a",
            "+message.type=LITE,+lite.topic.expiration=60",
        ],
    )
    .await);
    ok(mqadmin(
        &ns,
        &[
            "updateSubGroup",
            "-c",
            "DefaultCluster",
            "-g",
            "readers",
            "--attributes",
            "+lite.bind.topic=Chat",
        ],
    )
    .await);
    s.broker().register_now().await;

    let ctl = LiteSubscriptionCtlRequestBody {
        subscription_set: vec![LiteSubscriptionDto {
            action: "PARTIAL_ADD".into(),
            client_id: "client-9".into(),
            group: "readers".into(),
            topic: "Chat".into(),
            lite_topic_set: vec!["room-1".into(), "room-2".into()],
            version: None,
        }],
    };
    let r = s
        .call(
            RemotingCommand::request(RequestCode::LITE_SUBSCRIPTION_CTL, ExtFields::default())
                .with_body(fastjson::encode(&ctl)),
        )
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    for (body, room) in [("a", "room-1"), ("b", "room-1"), ("c", "room-2")] {
        let r = s.send("Chat", 0, body, &[("__LITE_TOPIC", room)]).await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
    }
    let pop = PopLiteMessageRequestHeader {
        client_id: "client-9".into(),
        consumer_group: "readers".into(),
        topic: "Chat".into(),
        max_msg_num: 1,
        invisible_time: 60_000,
        poll_time: 3_000,
        born_time: 0,
        attempt_id: None,
    };
    let r = s
        .call(RemotingCommand::request(
            RequestCode::POP_LITE_MESSAGE,
            pop.to_ext_fields(),
        ))
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());

    let out = ok(mqadmin(&ns, &["getBrokerLiteInfo", "-c", "DefaultCluster", "-d"]).await);
    assert!(
        out.contains("#Current LMQ") && out.contains("Topic Meta: {\"Chat\":60}"),
        "{out}"
    );
    assert!(
        out.contains("Group Meta: {\"Chat\":[\"readers\"]}"),
        "{out}"
    );
    let out = ok(mqadmin(&ns, &["getParentTopicInfo", "-p", "Chat"]).await);
    assert!(
        out.contains("Parent Topic Info: [Chat]") && out.contains("[readers]"),
        "{out}"
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("broker-"))
        .expect("a broker row");
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cols[1..4], ["60", "2", "2"], "{out}");
    let out = ok(mqadmin(
        &ns,
        &["getLiteTopicInfo", "-p", "Chat", "-l", "room-1", "-s"],
    )
    .await);
    assert!(
        out.contains("Lite Topic Info: [Chat] [room-1] [%LMQ%$Chat$room-1]"),
        "{out}"
    );
    assert!(out.contains("[client-9@readers]"), "{out}");
    let out = ok(mqadmin(
        &ns,
        &[
            "getLiteClientInfo",
            "-p",
            "Chat",
            "-g",
            "readers",
            "-c",
            "client-9",
            "-s",
        ],
    )
    .await);
    assert!(
        out.contains("Lite Topics: [") && out.contains("%LMQ%$Chat$room-2"),
        "{out}"
    );
    let out = ok(mqadmin(&ns, &["getLiteGroupInfo", "-p", "Chat", "-g", "readers"]).await);
    assert!(out.contains("Total Lag Count: "), "{out}");
    assert!(out.contains("------TopK by lag count-----"), "{out}");
    let out = ok(mqadmin(
        &ns,
        &[
            "getLiteGroupInfo",
            "-p",
            "Chat",
            "-g",
            "readers",
            "-l",
            "room-2",
        ],
    )
    .await);
    assert!(
        out.contains("#BrokerOffset") && out.contains("Total Lag Count:"),
        "{out}"
    );
    let out = ok(mqadmin(&ns, &["triggerLiteDispatch", "-p", "Chat", "-g", "readers"]).await);
    assert!(
        out.contains("Group And Topic Info: [readers] [Chat]") && out.contains("dispatched"),
        "{out}"
    );
    // A group not bound to a LITE topic: the broker's refusal shows as an error row.
    ok(mqadmin(
        &ns,
        &["updateSubGroup", "-c", "DefaultCluster", "-g", "plain"],
    )
    .await);
    let out = ok(mqadmin(&ns, &["triggerLiteDispatch", "-p", "Chat", "-g", "plain"]).await);
    assert!(out.contains("error"), "{out}");
}
