//! RocketMQ 5 POP consumption over remoting: a name server and a broker in process, driven
//! through the client crate's `PopClient` (what the gRPC proxy uses) and raw requests.

use std::time::{Duration, Instant};

use stellmq_client::pop::{AckStatus, PopClient, PopRequest, PopResult, PopStatus};
use stellmq_client::ExpressionType;
use stellmq_remoting::protocol::body::{fastjson, SubscriptionGroupConfig};
use stellmq_remoting::protocol::message::property;
use stellmq_remoting::protocol::{RequestCode, ResponseCode};
use stellmq_testkit::{request, Stack};

const T: Duration = Duration::from_secs(10);

/// A stack whose revive service looks every 100 ms.
async fn stack() -> Stack {
    Stack::start_with(|c| c.broker.revive_interval = 100).await
}

fn pop_req(group: &str, topic: &str) -> PopRequest {
    PopRequest::new("broker-a", group, topic)
        .max_nums(32)
        .invisible_time_ms(1_500)
}

async fn send_n(stack: &Stack, topic: &str, n: usize, tags: &str) {
    for i in 0..n {
        let r = stack
            .send(topic, 0, &format!("m{i}"), &[("TAGS", tags)])
            .await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
    }
    assert!(
        stack.broker().store().wait_dispatched(T),
        "sent messages reach their queues"
    );
}

async fn pop(client: &PopClient, stack: &Stack, req: &PopRequest) -> PopResult {
    client
        .pop(stack.addr(), req, T)
        .await
        .expect("POP answered")
}

fn bodies(result: &PopResult) -> Vec<String> {
    let mut out: Vec<String> = result
        .messages
        .iter()
        .map(|m| String::from_utf8_lossy(&m.message.body).into_owned())
        .collect();
    out.sort();
    out
}

/// Pops until something comes (or `within` passes).
async fn pop_until_found(
    client: &PopClient,
    stack: &Stack,
    req: &PopRequest,
    within: Duration,
) -> PopResult {
    let start = Instant::now();
    loop {
        let r = pop(client, stack, req).await;
        if r.status == PopStatus::Found || start.elapsed() > within {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn pop_then_ack_is_not_redelivered() {
    let stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopAck", 3, "a").await;
    let got = pop(&client, &stack, &pop_req("g1", "PopAck")).await;
    assert_eq!(got.status, PopStatus::Found);
    assert_eq!(bodies(&got), ["m0", "m1", "m2"]);
    for m in &got.messages {
        assert_eq!(
            m.message.record.properties.get(property::POP_CK),
            Some(m.extra_info.as_str())
        );
        assert!(m
            .message
            .record
            .properties
            .contains(property::FIRST_POP_TIME));
        assert_eq!(m.message.topic(), "PopAck");
        assert_eq!(m.message.reconsume_times(), 0);
    }
    // Popped messages are invisible to the next POP.
    assert_eq!(
        pop(&client, &stack, &pop_req("g1", "PopAck")).await.status,
        PopStatus::NoNewMessage
    );
    // One ack, then the other two in one batch ack.
    let first = &got.messages[0].extra_info;
    assert_eq!(
        client
            .ack(stack.addr(), "g1", "PopAck", first, T)
            .await
            .expect("ack"),
        AckStatus::Ok
    );
    assert_eq!(
        client
            .ack(stack.addr(), "g1", "PopAck", first, T)
            .await
            .expect("ack again"),
        AckStatus::Ok
    );
    let rest: Vec<&str> = got.messages[1..]
        .iter()
        .map(|m| m.extra_info.as_str())
        .collect();
    assert_eq!(
        client
            .batch_ack(stack.addr(), "g1", "PopAck", &rest, T)
            .await
            .expect("batch ack"),
        AckStatus::Ok
    );
    // That they stay acked past their invisible time is checked on the broker's clock in
    // broker/src/processor/pop/tests.rs.
    // Another group reads everything on its own.
    assert_eq!(
        bodies(&pop(&client, &stack, &pop_req("g2", "PopAck")).await),
        ["m0", "m1", "m2"]
    );
    stack.stop().await;
}

#[tokio::test]
async fn unacked_messages_come_back_through_the_retry_topic() {
    let stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopRevive", 2, "a").await;
    let got = pop(
        &client,
        &stack,
        &pop_req("g", "PopRevive").invisible_time_ms(1_000),
    )
    .await;
    assert_eq!(bodies(&got), ["m0", "m1"]);
    let first_pop = got.pop_time;
    let acked = &got.messages[0];
    client
        .ack(stack.addr(), "g", "PopRevive", &acked.extra_info, T)
        .await
        .expect("ack");
    let back = pop_until_found(
        &client,
        &stack,
        &pop_req("g", "PopRevive"),
        Duration::from_secs(6),
    )
    .await;
    assert_eq!(back.messages.len(), 1, "only the unacked one comes back");
    let m = &back.messages[0];
    assert_ne!(
        String::from_utf8_lossy(&m.message.body),
        String::from_utf8_lossy(&acked.message.body)
    );
    assert_eq!(m.message.reconsume_times(), 1);
    assert_eq!(m.message.topic(), "PopRevive");
    assert_eq!(m.message.queue.topic, "%RETRY%g_PopRevive");
    assert!(
        m.extra_info.split(' ').nth(4) == Some("1"),
        "a retry handle: {}",
        m.extra_info
    );
    let props = &m.message.record.properties;
    assert_eq!(
        props.get(property::FIRST_POP_TIME),
        Some(first_pop.to_string().as_str())
    );
    assert_eq!(props.get(property::RETRY_TOPIC), Some("PopRevive"));
    assert!(props.contains(property::ORIGIN_MESSAGE_ID));
    // Acking the retried copy ends it.
    assert_eq!(
        client
            .ack(stack.addr(), "g", "PopRevive", &m.extra_info, T)
            .await
            .expect("ack"),
        AckStatus::Ok
    );
    stack.stop().await;
}

#[tokio::test]
async fn change_invisible_time_extends_and_shortens() {
    let stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopChange", 2, "a").await;
    let got = pop(
        &client,
        &stack,
        &pop_req("g", "PopChange").invisible_time_ms(1_000),
    )
    .await;
    assert_eq!(got.messages.len(), 2);
    // Extend the first to 30 s (far beyond what the rest of the test takes, even on a
    // loaded machine), shorten the second to 0.
    let extended = client
        .change_invisible_time(
            stack.addr(),
            "g",
            "PopChange",
            &got.messages[0].extra_info,
            30_000,
            T,
        )
        .await
        .expect("extended");
    assert_ne!(extended, got.messages[0].extra_info);
    client
        .change_invisible_time(
            stack.addr(),
            "g",
            "PopChange",
            &got.messages[1].extra_info,
            0,
            T,
        )
        .await
        .expect("shortened");
    // The old handle is spent.
    let old = client
        .ack(
            stack.addr(),
            "g",
            "PopChange",
            &got.messages[0].extra_info,
            T,
        )
        .await
        .expect("answered");
    assert!(matches!(old, AckStatus::NoExist { .. }), "{old:?}");
    // Popped again for long, so only the extended one could come back below.
    let back = pop_until_found(
        &client,
        &stack,
        &pop_req("g", "PopChange").invisible_time_ms(30_000),
        Duration::from_secs(3),
    )
    .await;
    assert_eq!(
        bodies(&back),
        ["m1"],
        "the shortened one is back, the extended one is not"
    );
    // The new handle acks it (that it stays invisible past its first deadline is checked
    // on the broker's clock in broker/src/processor/pop/tests.rs).
    assert_eq!(
        client
            .ack(stack.addr(), "g", "PopChange", &extended, T)
            .await
            .expect("ack"),
        AckStatus::Ok
    );
    stack.stop().await;
}

#[tokio::test]
async fn handles_from_changes_in_one_millisecond_stay_valid() {
    let stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopChain", 1, "a").await;
    let got = pop(
        &client,
        &stack,
        &pop_req("g", "PopChain").invisible_time_ms(30_000),
    )
    .await;
    // Back-to-back changes: several land in one millisecond, where the new checkpoint takes
    // the next free one; every handle returned must name the checkpoint made.
    let mut handle = got.messages[0].extra_info.clone();
    for _ in 0..40 {
        handle = client
            .change_invisible_time(stack.addr(), "g", "PopChain", &handle, 30_000, T)
            .await
            .expect("the handle of the previous change is valid");
    }
    assert_eq!(
        client
            .ack(stack.addr(), "g", "PopChain", &handle, T)
            .await
            .expect("ack"),
        AckStatus::Ok
    );
    stack.stop().await;
}

#[tokio::test]
async fn in_flight_messages_survive_a_restart() {
    let mut stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopRestart", 4, "a").await;
    let got = pop(
        &client,
        &stack,
        &pop_req("g", "PopRestart").invisible_time_ms(3_000),
    )
    .await;
    assert_eq!(bodies(&got), ["m0", "m1", "m2", "m3"]);
    let handle = |body: &str| {
        got.messages
            .iter()
            .find(|m| &m.message.body[..] == body.as_bytes())
            .map(|m| m.extra_info.clone())
            .expect("popped")
    };
    for body in ["m0", "m1"] {
        let acked = client
            .ack(stack.addr(), "g", "PopRestart", &handle(body), T)
            .await
            .expect("ack");
        assert_eq!(acked, AckStatus::Ok);
    }
    stack.restart_broker(|_| {}).await;
    // Still in flight after the restart: nothing new to pop, and a handle of before the
    // restart still acks (the checkpoints were rebuilt from the revive log).
    let r = pop(&client, &stack, &pop_req("g", "PopRestart")).await;
    assert_eq!(r.status, PopStatus::NoNewMessage);
    let acked = client
        .ack(stack.addr(), "g", "PopRestart", &handle("m2"), T)
        .await
        .expect("ack");
    assert_eq!(acked, AckStatus::Ok);
    let back = pop_until_found(
        &client,
        &stack,
        &pop_req("g", "PopRestart"),
        Duration::from_secs(6),
    )
    .await;
    assert_eq!(
        bodies(&back),
        ["m3"],
        "the unacked one comes back, the acked ones do not"
    );
    assert_eq!(back.messages[0].message.reconsume_times(), 1);
    // The acked ones were in m3's batch: had their acks been lost they would have come back
    // with it.
    assert_eq!(
        pop(&client, &stack, &pop_req("g", "PopRestart"))
            .await
            .status,
        PopStatus::NoNewMessage
    );
    stack.stop().await;
}

#[tokio::test]
async fn retries_end_in_the_dead_letter_queue() {
    let stack = stack().await;
    let client = PopClient::new(Default::default());
    let group = SubscriptionGroupConfig {
        retry_max_times: 1,
        ..SubscriptionGroupConfig::new("dg")
    };
    let r = stack
        .call(
            request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[])
                .with_body(fastjson::encode(&group)),
        )
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    send_n(&stack, "PopDlq", 1, "a").await;
    let req = pop_req("dg", "PopDlq").invisible_time_ms(500);
    assert_eq!(pop(&client, &stack, &req).await.messages.len(), 1);
    let second = pop_until_found(&client, &stack, &req, Duration::from_secs(5)).await;
    assert_eq!(second.messages[0].message.reconsume_times(), 1);
    // Not acked again: past retryMaxTimes it goes to %DLQ%dg instead of coming back.
    let dlq = stack.raw().pull_until("inspector", "%DLQ%dg", 0, 1).await;
    assert_eq!(&dlq[0].body[..], b"m0");
    assert_eq!(dlq[0].head.reconsume_times, 2);
    stack.stop().await;
}

#[tokio::test]
async fn long_polling_pop_wakes_on_a_new_message() {
    let stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopPoll", 1, "a").await; // creates the topic
    let req = pop_req("g", "PopPoll");
    let first = pop(&client, &stack, &req).await;
    assert_eq!(first.messages.len(), 1);
    client
        .ack(
            stack.addr(),
            "g",
            "PopPoll",
            &first.messages[0].extra_info,
            T,
        )
        .await
        .expect("ack");
    // Nothing: held for up to 5 s, but a send wakes it.
    let waiting = {
        let addr = stack.addr().to_owned();
        let req = req.clone().poll_time_ms(5_000);
        tokio::spawn(async move {
            let client = PopClient::new(Default::default());
            let started = Instant::now();
            let r = client.pop(&addr, &req, T).await.expect("answered");
            (r, started.elapsed())
        })
    };
    stellmq_testkit::eventually("the POP is held", async || {
        stack.broker().parked_pops() == 1
    })
    .await;
    let info = stack
        .call(request(
            RequestCode::POLLING_INFO,
            &[
                ("consumerGroup", "g"),
                ("topic", "PopPoll"),
                ("queueId", "0"),
            ],
        ))
        .await;
    assert_eq!(info.code, 0, "{}", info.remark_str());
    send_n(&stack, "PopPoll", 1, "b").await;
    let (r, waited) = waiting.await.expect("task");
    assert_eq!(r.status, PopStatus::Found);
    client
        .ack(stack.addr(), "g", "PopPoll", &r.messages[0].extra_info, T)
        .await
        .expect("ack");
    assert!(
        waited < Duration::from_secs(4),
        "woken by the message, not the timeout: {waited:?}"
    );
    // And one that times out says so.
    let started = Instant::now();
    let r = pop(&client, &stack, &req.clone().poll_time_ms(700)).await;
    assert_eq!(r.status, PopStatus::NoNewMessage);
    assert!(started.elapsed() >= Duration::from_millis(600));
    // A notification waits the same way.
    let has = client
        .notification(stack.addr(), "g", "PopPoll", -1, 300, false, None, T)
        .await
        .expect("notification");
    assert!(!has);
    send_n(&stack, "PopPoll", 1, "c").await;
    let has = client
        .notification(stack.addr(), "g", "PopPoll", -1, 3_000, false, None, T)
        .await
        .expect("notification");
    assert!(has);
    stack.stop().await;
}

#[tokio::test]
async fn tag_filters_select_messages() {
    let stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopTags", 2, "TagA").await;
    send_n(&stack, "PopTags", 2, "TagB").await;
    send_n(&stack, "PopTags", 1, "TagC").await;
    let req = pop_req("g", "PopTags").expression(ExpressionType::Tag, "TagA || TagC");
    let got = pop(&client, &stack, &req).await;
    let tags: Vec<&str> = got
        .messages
        .iter()
        .filter_map(|m| m.message.tags())
        .collect();
    assert_eq!(tags.len(), 3, "{tags:?}");
    assert!(tags.iter().all(|t| *t != "TagB"));
    stack.stop().await;
}

#[tokio::test]
async fn hostile_pop_requests_get_clear_errors() {
    let stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopBad", 1, "a").await;
    // Unknown topic.
    let e = client
        .pop(stack.addr(), &pop_req("g", "NoSuchTopic"), T)
        .await
        .expect_err("refused");
    assert_eq!(
        e.remote_code(),
        Some(ResponseCode::TOPIC_NOT_EXIST.as_i32()),
        "{e}"
    );
    // Huge maxMsgNums.
    let e = client
        .pop(stack.addr(), &pop_req("g", "PopBad").max_nums(100_000), T)
        .await
        .expect_err("refused");
    assert_eq!(e.remote_code(), Some(ResponseCode::SYSTEM_ERROR.as_i32()));
    assert!(e.to_string().contains("greater than 32"), "{e}");
    // A queue that does not exist.
    let e = client
        .pop(stack.addr(), &pop_req("g", "PopBad").queue_id(500), T)
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("queueId[500] is illegal"), "{e}");
    // A bad group name, the broker's own group.
    let e = client
        .pop(stack.addr(), &pop_req("../g", "PopBad"), T)
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("illegal characters"), "{e}");
    let e = client
        .pop(
            stack.addr(),
            &pop_req("CID_RMQ_SYS_REVIVE_GROUP", "PopBad"),
            T,
        )
        .await
        .expect_err("refused");
    assert_eq!(
        e.remote_code(),
        Some(ResponseCode::NO_PERMISSION.as_i32()),
        "{e}"
    );
    // Bad receipt handles, by hand.
    for extra in [
        "garbage",
        "1 2 3 4 0 broker-a 0 x",
        "1 2 3 4 9 broker-a 0 0",
        "",
    ] {
        let r = stack
            .call(request(
                RequestCode::ACK_MESSAGE,
                &[
                    ("consumerGroup", "g"),
                    ("topic", "PopBad"),
                    ("queueId", "0"),
                    ("extraInfo", extra),
                    ("offset", "0"),
                ],
            ))
            .await;
        assert_ne!(r.code, 0, "{extra:?} accepted");
        assert!(!r.remark_str().is_empty());
    }
    // A well-formed handle nobody popped.
    let r = stack
        .call(request(
            RequestCode::ACK_MESSAGE,
            &[
                ("consumerGroup", "g"),
                ("topic", "PopBad"),
                ("queueId", "0"),
                ("extraInfo", "0 1 99999999999999 1 0 broker-a 0 0"),
                ("offset", "0"),
            ],
        ))
        .await;
    assert_eq!(r.code, ResponseCode::NO_MESSAGE.as_i32());
    assert!(
        r.remark_str().contains("no message in flight"),
        "{}",
        r.remark_str()
    );
    // A batch ack body that is not JSON, and one with nothing in it.
    let r = stack
        .call(request(RequestCode::BATCH_ACK_MESSAGE, &[]).with_body(&b"{not json"[..]))
        .await;
    assert_ne!(r.code, 0);
    let r = stack
        .call(request(RequestCode::BATCH_ACK_MESSAGE, &[]).with_body(&br#"{"acks":[]}"#[..]))
        .await;
    assert_eq!(r.code, ResponseCode::NO_MESSAGE.as_i32());
    // Missing header fields are named.
    let r = stack
        .call(request(
            RequestCode::POP_MESSAGE,
            &[("consumerGroup", "g"), ("topic", "PopBad")],
        ))
        .await;
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(r.remark_str().contains("queueId"), "{}", r.remark_str());
    // The broker still serves.
    assert_eq!(
        pop(&client, &stack, &pop_req("g", "PopBad"))
            .await
            .messages
            .len(),
        1
    );
    stack.stop().await;
}

#[tokio::test]
async fn sql92_filters_and_peek() {
    let stack = Stack::start_with(|c| {
        c.broker.revive_interval = 100;
        c.broker.enable_property_filter = true;
    })
    .await;
    let client = PopClient::new(Default::default());
    for (i, region) in ["eu", "us", "eu"].iter().enumerate() {
        let r = stack
            .send("PopSql", 0, &format!("m{i}"), &[("region", region)])
            .await;
        assert_eq!(r.code, 0);
    }
    assert!(stack.broker().store().wait_dispatched(T));
    // PEEK reads without popping.
    let peek = stack
        .call(request(
            RequestCode::PEEK_MESSAGE,
            &[
                ("consumerGroup", "g"),
                ("topic", "PopSql"),
                ("queueId", "0"),
                ("maxMsgNums", "32"),
            ],
        ))
        .await;
    assert_eq!(peek.code, 0, "{}", peek.remark_str());
    let peeked =
        stellmq_remoting::protocol::message::MessageRecord::decode_all(peek.body.clone(), false)
            .expect("records");
    assert_eq!(peeked.len(), 3);
    let req = pop_req("g", "PopSql").expression(ExpressionType::Sql92, "region = 'eu'");
    assert_eq!(bodies(&pop(&client, &stack, &req).await), ["m0", "m2"]);
    let bad = pop_req("g2", "PopSql").expression(ExpressionType::Sql92, "region = = 'eu'");
    let e = client
        .pop(stack.addr(), &bad, T)
        .await
        .expect_err("refused");
    assert_eq!(
        e.remote_code(),
        Some(ResponseCode::SUBSCRIPTION_PARSE_FAILED.as_i32()),
        "{e}"
    );
    stack.stop().await;
}

#[tokio::test]
async fn held_pops_are_bounded() {
    let stack = Stack::start_with(|c| {
        c.broker.revive_interval = 100;
        c.broker.max_pop_polling_size = 1;
    })
    .await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopFull", 1, "a").await;
    let req = pop_req("g", "PopFull");
    let got = pop(&client, &stack, &req).await;
    client
        .ack(stack.addr(), "g", "PopFull", &got.messages[0].extra_info, T)
        .await
        .expect("ack");
    let held = {
        let addr = stack.addr().to_owned();
        let req = req.clone().poll_time_ms(1_500);
        tokio::spawn(async move {
            let client = PopClient::new(Default::default());
            client.pop(&addr, &req, T).await.expect("answered").status
        })
    };
    stellmq_testkit::eventually("the first POP is held", async || {
        stack.broker().parked_pops() == 1
    })
    .await;
    let second = pop(&client, &stack, &req.clone().poll_time_ms(1_500)).await;
    assert_eq!(second.status, PopStatus::PollingFull);
    assert_eq!(held.await.expect("task"), PopStatus::NoNewMessage);
    // Extreme born and poll times are answered, not overflowed.
    let r = stack
        .call(request(
            RequestCode::POP_MESSAGE,
            &[
                ("consumerGroup", "g"),
                ("topic", "PopFull"),
                ("queueId", "-1"),
                ("maxMsgNums", "1"),
                ("invisibleTime", "1000"),
                ("pollTime", "9223372036854775807"),
                ("bornTime", "-9223372036854775808"),
            ],
        ))
        .await;
    assert_eq!(
        r.code,
        ResponseCode::POLLING_TIMEOUT.as_i32(),
        "{}",
        r.remark_str()
    );
    stack.stop().await;
}

#[tokio::test]
async fn pop_under_acl_needs_sub_on_the_topic_and_group() {
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir_all(home.path().join("conf")).expect("conf dir");
    std::fs::write(
        home.path().join("conf/plain_acl.yml"),
        "accounts:\n  - accessKey: popper01\n    secretKey: 12345678\n    admin: false\n    \
         defaultTopicPerm: DENY\n    defaultGroupPerm: SUB\n    topicPerms:\n      - PopAcl=PUB|SUB\n",
    )
    .expect("acl file");
    let path = home.path().display().to_string();
    let stack = Stack::start_with(move |c| {
        c.broker.revive_interval = 100;
        c.broker.acl_enable = true;
        c.broker.rocketmq_home = path;
    })
    .await;
    let credentials = stellmq_client::SessionCredentials::new("popper01", "12345678");
    let config = stellmq_remoting::net::ClientConfig {
        credentials: Some(credentials.clone()),
        ..Default::default()
    };
    let mut send = stellmq_testkit::send_request("PopAcl", 0, b"m0", &[]);
    stellmq_remoting::protocol::signature::sign(&mut send, &credentials);
    assert_eq!(stack.call(send).await.code, 0);
    assert!(stack.broker().store().wait_dispatched(T));
    let client = PopClient::new(config);
    let req = pop_req("g", "PopAcl").invisible_time_ms(500);
    assert_eq!(bodies(&pop(&client, &stack, &req).await), ["m0"]);
    // Not acked: it comes back from %RETRY%g_PopAcl, and its ack (naming that topic) passes.
    let back = pop_until_found(&client, &stack, &req, Duration::from_secs(5)).await;
    assert_eq!(bodies(&back), ["m0"]);
    let acked = client
        .ack(stack.addr(), "g", "PopAcl", &back.messages[0].extra_info, T)
        .await
        .expect("ack");
    assert_eq!(acked, AckStatus::Ok);
    // Unsigned, or another topic: NO_PERMISSION.
    let unsigned = PopClient::new(Default::default());
    let e = unsigned
        .pop(stack.addr(), &req, T)
        .await
        .expect_err("refused");
    assert_eq!(
        e.remote_code(),
        Some(ResponseCode::NO_PERMISSION.as_i32()),
        "{e}"
    );
    let e = client
        .pop(stack.addr(), &pop_req("g", "Other"), T)
        .await
        .expect_err("refused");
    assert_eq!(
        e.remote_code(),
        Some(ResponseCode::NO_PERMISSION.as_i32()),
        "{e}"
    );
    stack.stop().await;
}

/// The revive log is replicated: when the master is gone and its slave is started as the
/// master, batches in flight are rebuilt there, acked messages stay acked and unacked ones
/// come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_messages_survive_a_slave_taking_over() {
    use stellmq_testkit::{wait_for, NameServer, RawClient, Role, TestBroker};
    let ns = NameServer::start().await;
    let master = TestBroker::start(ns.addr(), |c| {
        c.broker.revive_interval = 100;
        Role::SyncMaster.apply(c);
    })
    .await;
    let mut slave = master
        .start_slave(1, |c| c.broker.revive_interval = 100)
        .await;
    stellmq_testkit::eventually("the slave is connected", async || {
        master.ha_master().is_some_and(|ha| ha.has_slaves())
    })
    .await;
    let raw = RawClient::new(master.addr());
    for i in 0..3 {
        let r = raw.send("PopSwitch", 0, &format!("m{i}"), &[]).await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
    }
    let on_slave = RawClient::new(slave.addr());
    stellmq_testkit::eventually("the slave has the topic", async || {
        let r = on_slave
            .call(request(RequestCode::GET_ALL_TOPIC_CONFIG, &[]))
            .await;
        String::from_utf8_lossy(&r.body).contains("PopSwitch")
    })
    .await;
    assert!(master.store().wait_dispatched(T));
    let client = PopClient::new(Default::default());
    let req = pop_req("g", "PopSwitch").invisible_time_ms(3_000);
    let got = client.pop(master.addr(), &req, T).await.expect("pop");
    assert_eq!(bodies(&got), ["m0", "m1", "m2"]);
    let m0 = got
        .messages
        .iter()
        .find(|m| &m.message.body[..] == b"m0")
        .expect("m0");
    let acked = client
        .ack(master.addr(), "g", "PopSwitch", &m0.extra_info, T)
        .await
        .expect("ack");
    assert_eq!(acked, AckStatus::Ok);
    let end = master.store().commit_log_max_offset();
    wait_for("the slave has every record", T, || {
        slave.store().commit_log_max_offset() == end
    })
    .await;
    raw.shutdown().await;
    master.shutdown().await;
    slave.restart(|c| Role::AsyncMaster.apply(c)).await;
    let addr = slave.addr().to_owned();
    let r = client.pop(&addr, &req, T).await.expect("pop");
    assert_eq!(r.status, PopStatus::NoNewMessage, "{:?}", bodies(&r));
    let start = Instant::now();
    let mut back = Vec::new();
    while back.len() < 2 && start.elapsed() < Duration::from_secs(8) {
        let r = client.pop(&addr, &req, T).await.expect("pop");
        back.extend(bodies(&r));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    back.sort();
    assert_eq!(
        back,
        ["m1", "m2"],
        "the unacked come back on the new master"
    );
    on_slave.shutdown().await;
    slave.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test]
async fn an_orderly_batch_in_flight_survives_a_restart() {
    let mut stack = stack().await;
    let client = PopClient::new(Default::default());
    send_n(&stack, "PopFifoRestart", 2, "a").await;
    let req = pop_req("g", "PopFifoRestart")
        .queue_id(0)
        .order(true)
        .invisible_time_ms(2_500);
    assert_eq!(bodies(&pop(&client, &stack, &req).await), ["m0", "m1"]);
    stack.restart_broker(|_| {}).await;
    // consumerOrderInfo.json kept the batch: still held after the restart...
    assert_eq!(
        pop(&client, &stack, &req).await.status,
        PopStatus::NoNewMessage
    );
    // ...until its invisible time passed; then the same messages, counted.
    let again = pop_until_found(&client, &stack, &req, Duration::from_secs(5)).await;
    assert_eq!(bodies(&again), ["m0", "m1"]);
    assert!(again
        .messages
        .iter()
        .all(|m| m.message.reconsume_times() == 1));
    stack.stop().await;
}
