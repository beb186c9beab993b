//! Send, pull with long polling, offsets, delay, retry and DLQ, queries: a name server and a
//! broker in process, driven over TCP as RocketMQ clients drive them.

use std::time::{Duration, Instant};

use stellmq_remoting::protocol::body::{
    fastjson, perm, MessageModel, SubscriptionGroupConfig, TopicRouteData,
};
use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::{batch, id, MessageRecord};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{
    eventually, heartbeat, request, send_header, send_request, Pull, Stack, TIMEOUT as T,
};

#[tokio::test]
async fn sync_oneway_and_batch_sends_are_stored_and_routed() {
    let stack = Stack::start().await;
    // Sync send (V2 header), auto-creating the topic from TBW102.
    let r = stack
        .send(
            "Orders",
            1,
            "hello",
            &[("KEYS", "order-1"), ("TAGS", "TagA")],
        )
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let h =
        SendMessageResponseHeader::from_ext_fields(&r.ext_fields).expect("send response header");
    assert_eq!(h.queue_id, 1);
    assert_eq!(h.queue_offset, 0);
    assert_eq!(h.msg_region.as_deref(), Some("DefaultRegion"));
    let (host, phys) = id::decode_offset_msg_id(&h.msg_id).expect("offset msg id");
    assert_eq!(
        host.to_string(),
        stack.addr(),
        "msgId names the broker's address"
    );

    // The long-name SEND_MESSAGE header works too.
    let v1 = RemotingCommand::request(
        RequestCode::SEND_MESSAGE,
        send_header("Orders", 1, &[]).to_ext_fields(),
    )
    .with_body(&b"v1"[..]);
    assert_eq!(stack.call(v1).await.code, 0);

    // Oneway: no answer, still stored.
    let mut oneway = send_request("Orders", 1, b"oneway", &[]);
    oneway.mark_oneway();
    stack
        .raw()
        .remoting()
        .invoke_oneway(stack.addr(), oneway)
        .await
        .expect("oneway sent");

    // Batch: consecutive offsets, comma-joined ids.
    let items: Vec<batch::BatchItem> = (0..3)
        .map(|i| batch::BatchItem {
            flag: 0,
            body: format!("b{i}").into_bytes().into(),
            properties: format!("KEYS\u{1}bk{i}\u{2}"),
        })
        .collect();
    let mut h = send_header("Orders", 2, &[]);
    h.batch = Some(true);
    let v2: stellmq_remoting::protocol::headers::SendMessageRequestHeaderV2 = h.into();
    let r = stack
        .call(
            RemotingCommand::request(RequestCode::SEND_BATCH_MESSAGE, v2.to_ext_fields())
                .with_body(batch::encode(&items)),
        )
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let bh = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).expect("header");
    assert_eq!(bh.msg_id.split(',').count(), 3);

    let q1 = stack.pull_until("g", "Orders", 1, 3).await;
    let bodies: Vec<_> = q1
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).to_string())
        .collect();
    assert_eq!(bodies, ["hello", "v1", "oneway"]);
    assert_eq!(q1[0].head.physical_offset, phys);
    assert_eq!(q1[0].properties.get("CLUSTER"), Some("DefaultCluster"));
    assert_eq!(
        q1[0].head.born_host.ip().to_string(),
        "127.0.0.1",
        "born host is the producer's socket"
    );
    let q2 = stack.pull_until("g", "Orders", 2, 3).await;
    assert_eq!(
        q2.iter().map(|m| m.head.queue_offset).collect::<Vec<_>>(),
        [0, 1, 2]
    );

    // The auto-created topic reaches the name server right away (asynchronously).
    let ask = || {
        stack.raw().remoting().invoke(
            stack.ns_addr(),
            request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "Orders")]),
            T,
        )
    };
    eventually("the route is registered", async || {
        ask().await.expect("route").code == 0
    })
    .await;
    let route = ask().await.expect("route");
    let route: TopicRouteData = fastjson::decode(&route.body).expect("route body");
    assert_eq!(
        route.queue_datas[0].write_queue_nums, 4,
        "min(producer's 4, TBW102's 8)"
    );
    assert_eq!(route.broker_datas[0].master_addr(), Some(stack.addr()));
    stack.stop().await;
}

#[tokio::test]
async fn long_polling_pull_is_woken_by_an_arriving_message() {
    let stack = Stack::start().await;
    assert_eq!(stack.send("Events", 0, "first", &[]).await.code, 0);
    let _ = stack.pull_until("g", "Events", 0, 1).await;

    let pull = stack.pull(
        Pull::new("g", "Events", 0, 1)
            .subscribe("*")
            .suspend(10_000),
    );
    let send = async {
        eventually("the pull is parked", async || {
            stack.broker().parked_pulls() == 1
        })
        .await;
        // That it stays unanswered while nothing comes is checked without waiting in
        // broker/src/processor/pull/tests.rs.
        let sent_at = Instant::now();
        assert_eq!(stack.send("Events", 0, "second", &[]).await.code, 0);
        sent_at
    };
    let (response, sent_at) = tokio::join!(pull, send);
    assert_eq!(response.code, 0, "{}", response.remark_str());
    assert!(
        sent_at.elapsed() < Duration::from_millis(400),
        "answered within milliseconds of the arrival"
    );
    let records = MessageRecord::decode_all(response.body.clone(), true).expect("records");
    assert_eq!(&records[0].body[..], b"second");
    assert_eq!(response.remark_str(), "FOUND");

    // With nothing arriving, the parked pull is answered PULL_NOT_FOUND at its deadline.
    let started = Instant::now();
    let r = stack
        .pull(Pull::new("g", "Events", 0, 2).subscribe("*").suspend(600))
        .await;
    assert_eq!(r.code, ResponseCode::PULL_NOT_FOUND.as_i32());
    assert!(started.elapsed() >= Duration::from_millis(550));
    for key in [
        "nextBeginOffset",
        "minOffset",
        "maxOffset",
        "suggestWhichBrokerId",
    ] {
        assert!(
            r.ext_fields.contains_key(key),
            "{key} present on every pull response"
        );
    }
    stack.stop().await;
}

#[tokio::test]
async fn pull_statuses_and_heartbeat_subscriptions_with_tags() {
    let stack = Stack::start().await;
    for (i, tag) in ["TagA", "TagB", "TagC", "TagA"].iter().enumerate() {
        assert_eq!(
            stack
                .send("Tagged", 0, &format!("m{i}"), &[("TAGS", tag)])
                .await
                .code,
            0
        );
    }
    // Dispatch is asynchronous (as in RocketMQ): pull once everything is in the queue.
    assert!(stack.broker().store().wait_dispatched(T));
    // No subscription flag and no heartbeat: SUBSCRIPTION_NOT_EXIST.
    let r = stack.pull(Pull::new("tg", "Tagged", 0, 0)).await;
    assert_eq!(r.code, ResponseCode::SUBSCRIPTION_NOT_EXIST.as_i32());
    // A heartbeat registers 'TagA || TagB'; pulls without the flag use it.
    let hb = stack
        .call(heartbeat(
            "127.0.1.1@1",
            "tg",
            &[("Tagged", "TagA || TagB")],
            MessageModel::Clustering,
        ))
        .await;
    assert_eq!(hb.code, 0, "{}", hb.remark_str());
    let r = stack.pull(Pull::new("tg", "Tagged", 0, 0)).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let tags: Vec<_> = MessageRecord::decode_all(r.body.clone(), true)
        .expect("records")
        .iter()
        .map(|m| m.properties.get("TAGS").unwrap_or("").to_owned())
        .collect();
    assert_eq!(tags, ["TagA", "TagB", "TagA"]);
    // Offset statuses.
    let r = stack
        .pull(Pull::new("tg", "Tagged", 0, 99).subscribe("*"))
        .await;
    assert_eq!(r.code, ResponseCode::PULL_OFFSET_MOVED.as_i32());
    // RocketMQ corrects to minOffset when it is 0, else to maxOffset.
    assert_eq!(r.ext_fields.get("nextBeginOffset"), Some("0"));
    let r = stack
        .pull(Pull::new("tg", "Tagged", 0, 4).subscribe("*"))
        .await;
    assert_eq!(
        (r.code, r.remark_str()),
        (ResponseCode::PULL_NOT_FOUND.as_i32(), "OFFSET_OVERFLOW_ONE")
    );
    let r = stack
        .pull(Pull::new("tg", "Tagged", 0, 2).subscribe("TagZ"))
        .await;
    assert_eq!(r.code, ResponseCode::PULL_RETRY_IMMEDIATELY.as_i32());
    let r = stack
        .pull(Pull::new("tg", "Tagged", 9, 0).subscribe("*"))
        .await;
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.as_i32(), "bad queue id");
    let r = stack
        .pull(Pull::new("tg", "Nope", 0, 0).subscribe("*"))
        .await;
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
    // SQL92 filtering is not offered: a clear error, not silence.
    let mut sql = request(
        RequestCode::PULL_MESSAGE,
        &[
            ("consumerGroup", "tg"),
            ("topic", "Tagged"),
            ("queueId", "0"),
            ("queueOffset", "0"),
            ("maxMsgNums", "32"),
            ("sysFlag", "4"),
            ("commitOffset", "0"),
            ("suspendTimeoutMillis", "0"),
            ("subVersion", "0"),
            ("subscription", "a > 1"),
            ("expressionType", "SQL92"),
        ],
    );
    sql.version = 401;
    let r = stack.call(sql).await;
    assert_eq!(r.code, 1);
    assert!(r.remark_str().contains("SQL92"), "{}", r.remark_str());
    stack.stop().await;
}

#[tokio::test]
async fn consumer_offsets_survive_a_restart() {
    let mut stack = Stack::start().await;
    assert_eq!(stack.send("Offsets", 0, "m", &[]).await.code, 0);
    let update = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "og"),
            ("topic", "Offsets"),
            ("queueId", "0"),
            ("commitOffset", "1"),
        ],
    );
    assert_eq!(stack.call(update).await.code, 0);
    // A pull with the commit flag commits too.
    let _ = stack
        .pull(Pull::new("og", "Offsets", 1, 0).subscribe("*").commit(0))
        .await;
    stack.restart_broker(|_| {}).await;
    let query = |q: &str| {
        request(
            RequestCode::QUERY_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "og"),
                ("topic", "Offsets"),
                ("queueId", q),
            ],
        )
    };
    let r = stack.call(query("0")).await;
    assert_eq!((r.code, r.ext_fields.get("offset")), (0, Some("1")));
    let max = stack
        .call(request(
            RequestCode::GET_MAX_OFFSET,
            &[("topic", "Offsets"), ("queueId", "0")],
        ))
        .await;
    assert_eq!(max.ext_fields.get("offset"), Some("1"));
    assert_eq!(stack.send("Offsets", 0, "after restart", &[]).await.code, 0);
    assert!(stack.broker().store().wait_dispatched(T));
    let max = stack
        .call(request(
            RequestCode::GET_MAX_OFFSET,
            &[("topic", "Offsets"), ("queueId", "0")],
        ))
        .await;
    assert_eq!(max.ext_fields.get("offset"), Some("2"));
    stack.stop().await;
}

#[tokio::test]
async fn delay_messages_arrive_at_their_level() {
    let stack = Stack::start().await;
    let sent = Instant::now();
    let r = stack.send("Later", 0, "delayed", &[("DELAY", "4")]).await; // level 4 = 2 s here
    assert_eq!(r.code, 0, "{}", r.remark_str());
    // Dispatched first, so that a message wrongly made visible would be found.
    assert!(stack.broker().store().wait_dispatched(T));
    let early = stack
        .pull(Pull::new("g", "Later", 0, 0).subscribe("*"))
        .await;
    assert_ne!(early.code, 0, "not visible before its time");
    let got = stack.pull_until("g", "Later", 0, 1).await;
    assert_eq!(got.len(), 1);
    assert!(
        sent.elapsed() >= Duration::from_millis(1900),
        "arrived after {:?}",
        sent.elapsed()
    );
    assert_eq!(&got[0].body[..], b"delayed");
    assert_eq!(got[0].properties.get("REAL_TOPIC"), Some("Later"));
    assert!(got[0].properties.get("DELAY").is_none());
    // Delivery progress is exposed for slaves and tools.
    let offsets = stack
        .call(request(RequestCode::GET_ALL_DELAY_OFFSET, &[]))
        .await;
    assert!(
        String::from_utf8_lossy(&offsets.body).contains("4:1"),
        "{}",
        String::from_utf8_lossy(&offsets.body)
    );
    stack.stop().await;
}

#[tokio::test]
async fn send_back_retries_then_dead_letters() {
    let stack = Stack::start().await;
    let group = SubscriptionGroupConfig {
        retry_max_times: 2,
        ..SubscriptionGroupConfig::new("rg")
    };
    let r = stack
        .call(
            request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[])
                .with_body(fastjson::encode(&group)),
        )
        .await;
    assert_eq!(r.code, 0);
    let r = stack.send("Work", 0, "job", &[("KEYS", "job-1")]).await;
    let h = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).expect("header");
    let (_, mut phys) = id::decode_offset_msg_id(&h.msg_id).expect("id");
    let back = |offset: i64| {
        request(
            RequestCode::CONSUMER_SEND_MSG_BACK,
            &[
                ("offset", &offset.to_string()),
                ("group", "rg"),
                ("delayLevel", "0"),
                ("originMsgId", &h.msg_id),
            ],
        )
    };
    // Two retries through %RETRY%rg (delay level 3 + reconsumeTimes, 1-2 s here).
    for attempt in 1..=2 {
        let r = stack.call(back(phys)).await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
        let retried = stack.pull_until("rg", "%RETRY%rg", 0, attempt).await;
        let m = retried.last().expect("redelivered");
        assert_eq!(m.head.reconsume_times, attempt as i32);
        assert_eq!(m.properties.get("RETRY_TOPIC"), Some("Work"));
        assert_eq!(
            m.properties.get("ORIGIN_MESSAGE_ID"),
            Some(h.msg_id.as_str())
        );
        phys = m.head.physical_offset;
    }
    // The third failure exceeds retryMaxTimes: dead letter queue.
    assert_eq!(stack.call(back(phys)).await.code, 0);
    let dead = stack.pull_until("any", "%DLQ%rg", 0, 1).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(&dead[0].body[..], b"job");
    stack.stop().await;
}

#[tokio::test]
async fn queries_by_key_unique_key_and_id() {
    let stack = Stack::start().await;
    let r = stack
        .send(
            "Q",
            0,
            "findme",
            &[
                ("KEYS", "k1 k2"),
                ("UNIQ_KEY", "C0A8000100002A9F0000000000000001"),
            ],
        )
        .await;
    let h = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).expect("header");
    assert!(stack.broker().store().wait_dispatched(T));
    let by_key = |key: &str, unique: bool| {
        let mut q = request(
            RequestCode::QUERY_MESSAGE,
            &[
                ("topic", "Q"),
                ("key", key),
                ("maxNum", "32"),
                ("beginTimestamp", "0"),
                ("endTimestamp", &i64::MAX.to_string()),
            ],
        );
        if unique {
            q.ext_fields.insert("_UNIQUE_KEY_QUERY", "true");
        }
        q
    };
    for (key, unique) in [("k2", false), ("C0A8000100002A9F0000000000000001", true)] {
        let r = stack.call(by_key(key, unique)).await;
        assert_eq!(r.code, 0, "{key}: {}", r.remark_str());
        let found = MessageRecord::decode_all(r.body.clone(), true).expect("records");
        assert_eq!(&found[0].body[..], b"findme");
        assert!(r.ext_fields.contains_key("indexLastUpdatePhyoffset"));
    }
    let missing = stack.call(by_key("nope", false)).await;
    assert_eq!(missing.code, ResponseCode::QUERY_NOT_FOUND.as_i32());

    let (_, phys) = id::decode_offset_msg_id(&h.msg_id).expect("id");
    let view = stack
        .call(request(
            RequestCode::VIEW_MESSAGE_BY_ID,
            &[("offset", &phys.to_string())],
        ))
        .await;
    assert_eq!(view.code, 0);
    assert_eq!(
        &MessageRecord::decode_all(view.body.clone(), true).expect("record")[0].body[..],
        b"findme"
    );
    let bad = stack
        .call(request(
            RequestCode::VIEW_MESSAGE_BY_ID,
            &[("offset", "123456789")],
        ))
        .await;
    assert_eq!(bad.code, 1);
    assert!(bad
        .remark_str()
        .contains("can not find message by the offset"));
    stack.stop().await;
}

#[tokio::test]
async fn topic_auto_creation_follows_the_switch() {
    let stack = Stack::start_with(|c| c.broker.auto_create_topic_enable = false).await;
    let r = stack.send("NewTopic", 0, "x", &[]).await;
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
    assert!(
        r.remark_str()
            .contains("topic[NewTopic] not exist, apply first please!"),
        "{}",
        r.remark_str()
    );
    let create = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", "NewTopic"),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "2"),
            ("writeQueueNums", "2"),
            (
                "perm",
                &perm::to_display(6).len().to_string().replace('3', "6"),
            ),
            ("topicFilterType", "SINGLE_TAG"),
            ("order", "false"),
        ],
    );
    assert_eq!(stack.call(create).await.code, 0);
    assert_eq!(stack.send("NewTopic", 1, "x", &[]).await.code, 0);
    assert_eq!(
        stack.send("NewTopic", 5, "x", &[]).await.code,
        1,
        "queue id beyond the topic's queues"
    );
    stack.stop().await;
}

#[tokio::test]
async fn bad_requests_get_errors_and_the_broker_keeps_serving() {
    let stack = Stack::start().await;
    let mut no_topic = send_request("T", 0, b"x", &[]);
    no_topic.ext_fields.remove("b");
    let r = stack.call(no_topic).await;
    assert_eq!(r.code, 1);
    assert!(r.remark_str().contains("'b'"), "{}", r.remark_str());
    for (topic, code) in [
        ("bad topic!", 1),
        ("SCHEDULE_TOPIC_XXXX", 16),
        (&"x".repeat(128)[..], 1),
    ] {
        assert_eq!(stack.send(topic, 0, "x", &[]).await.code, code, "{topic}");
    }
    let garbage_hb = request(RequestCode::HEART_BEAT, &[]).with_body(&b"{not json"[..]);
    assert_eq!(stack.call(garbage_hb).await.code, 1);
    let garbage_batch = {
        let mut h = send_header("T", 0, &[]);
        h.batch = Some(true);
        let v2: stellmq_remoting::protocol::headers::SendMessageRequestHeaderV2 = h.into();
        RemotingCommand::request(RequestCode::SEND_BATCH_MESSAGE, v2.to_ext_fields())
            .with_body(&b"\x00\x00\x00\x05xx"[..])
    };
    assert_eq!(
        stack.call(garbage_batch).await.code,
        ResponseCode::MESSAGE_ILLEGAL.as_i32()
    );
    let huge = stack
        .call(send_request("T", 0, &vec![b'x'; 1024 * 1024 + 1], &[]))
        .await;
    assert_eq!(huge.code, ResponseCode::MESSAGE_ILLEGAL.as_i32());
    let bad_lock = request(RequestCode::LOCK_BATCH_MQ, &[]).with_body(&b"[]"[..]);
    assert_eq!(stack.call(bad_lock).await.code, 1);
    assert_eq!(
        stack
            .call(RemotingCommand::request_code(9999, Default::default()))
            .await
            .code,
        3
    );
    assert_eq!(stack.send("T", 0, "still fine", &[]).await.code, 0);
    stack.stop().await;
}

/// A listenPort whose VIP neighbour (port - 2) is free too.
fn port_with_free_vip_neighbour() -> u16 {
    for _ in 0..50 {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
        let port = probe.local_addr().expect("addr").port();
        drop(probe);
        if port > 1026 && std::net::TcpListener::bind(("127.0.0.1", port - 2)).is_ok() {
            return port;
        }
    }
    panic!("no free port pair");
}

/// Java clients before 4.5.1 send to listenPort - 2 (the VIP channel) by default.
#[tokio::test]
async fn the_vip_channel_serves_sends_on_listen_port_minus_two() {
    let port = port_with_free_vip_neighbour();
    let mut stack = Stack::start_with(|c| c.broker.listen_port = port).await;
    let vip = format!("127.0.0.1:{}", port - 2);
    let r = stack
        .raw()
        .remoting()
        .invoke(&vip, send_request("Vip", 0, b"via vip", &[]), T)
        .await
        .expect("VIP channel answers");
    assert_eq!(r.code, 0, "{}", r.remark_str());
    assert_eq!(stack.pull_until("vip", "Vip", 0, 1).await.len(), 1);
    stack.restart_broker(|c| c.broker.listen_port = 0).await;
    assert!(
        std::net::TcpStream::connect(&vip).is_err(),
        "the VIP channel closes with the broker"
    );
    stack.stop().await;
}

/// With slaveReadEnable, a consumer reading data no longer in memory (past
/// accessMessageInMemoryMaxRatio of RAM behind the head) is pointed at the group's
/// whichBrokerWhenConsumeSlowly (1); otherwise at the group's brokerId (0).
#[tokio::test]
async fn slave_read_suggests_the_slave_for_data_out_of_memory() {
    for (slave_read, ratio, expected) in [(true, 40, "0"), (true, 0, "1"), (false, 0, "0")] {
        let stack = Stack::start_with(|c| {
            c.broker.slave_read_enable = slave_read;
            c.store.access_message_in_memory_max_ratio = ratio;
        })
        .await;
        for i in 0..3 {
            let r = stack.send("Slow", 0, &format!("s{i}"), &[]).await;
            assert_eq!(r.code, 0);
        }
        assert!(stack.broker().store().wait_dispatched(T));
        let r = stack
            .pull(Pull::new("slow", "Slow", 0, 0).subscribe("*"))
            .await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
        assert_eq!(
            r.ext_fields.get("suggestWhichBrokerId"),
            Some(expected),
            "slaveReadEnable={slave_read} accessMessageInMemoryMaxRatio={ratio}"
        );
        stack.stop().await;
    }
}
