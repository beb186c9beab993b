//! The admin requests a RocketMQ 4.9 admin tool still sends besides the everyday ones, over
//! TCP against in-process servers: on the broker QUERY_CONSUME_TIME_SPAN (303),
//! QUERY_CORRECTION_OFFSET (308), DELETE_EXPIRED_COMMITLOG (329) with
//! CLEAN_EXPIRED_CONSUMEQUEUE (306), CLEAN_UNUSED_TOPIC (316), RESUME_CHECK_HALF_MESSAGE (323)
//! and GET_ALL_PRODUCER_INFO (328); on the name server REGISTER_TOPIC_IN_NAMESRV (217) and
//! GET_BROKER_MEMBER_GROUP (901).

use std::time::Duration;

use stellmq_client::AdminClient;
use stellmq_remoting::protocol::body::{
    fastjson, GetBrokerMemberGroupResponseBody, MessageModel, ProducerTableInfo,
    QueryConsumeQueueResponseBody, QueryConsumeTimeSpanBody, QueryCorrectionOffsetBody, QueueData,
    TopicConfig, TopicRouteData,
};
use stellmq_remoting::protocol::message::{now_ms, property, MessageRecord};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{heartbeat, request, send_request, NameServer, RawClient, Stack, TestBroker};

const DISPATCH: Duration = Duration::from_secs(10);

async fn create_topic(ns: &str, broker: &str, topic: &str, queues: i32) {
    let admin = AdminClient::new(ns).expect("admin");
    admin
        .create_topic(broker, &TopicConfig::with_queues(topic, queues, queues, 6))
        .await
        .expect("topic");
    admin.shutdown().await;
}

async fn commit(raw: &RawClient, group: &str, topic: &str, queue_id: i32, offset: i64) {
    let (q, o) = (queue_id.to_string(), offset.to_string());
    raw.call_ok(request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", group),
            ("topic", topic),
            ("queueId", &q),
            ("commitOffset", &o),
        ],
    ))
    .await;
}

async fn max_offset(raw: &RawClient, topic: &str, queue_id: i32) -> i64 {
    let q = queue_id.to_string();
    let r = raw
        .call_ok(request(
            RequestCode::GET_MAX_OFFSET,
            &[("topic", topic), ("queueId", &q)],
        ))
        .await;
    r.ext_fields
        .get("offset")
        .and_then(|o| o.parse().ok())
        .expect("offset")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_time_span_shows_where_a_group_stands_in_time() {
    let stack = Stack::start().await;
    create_topic(stack.ns_addr(), stack.addr(), "Span", 2).await;
    let before = now_ms();
    for i in 0..3 {
        assert_eq!(stack.send("Span", 0, &format!("m{i}"), &[]).await.code, 0);
    }
    stack.broker().store().wait_dispatched(DISPATCH);
    commit(stack.raw(), "span-g", "Span", 0, 1).await;
    let span = |topic: &str| {
        request(
            RequestCode::QUERY_CONSUME_TIME_SPAN,
            &[("topic", topic), ("group", "span-g")],
        )
    };
    let r = stack.call(span("Span")).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let body: QueryConsumeTimeSpanBody = fastjson::decode(&r.body).expect("time span body");
    assert_eq!(body.consume_time_span_set.len(), 2);
    let q0 = &body.consume_time_span_set[0];
    assert_eq!(q0.message_queue.broker_name, "broker-a");
    assert!(q0.min_time_stamp >= before, "{q0:?}");
    assert!(q0.max_time_stamp >= q0.min_time_stamp, "{q0:?}");
    // The group consumed offset 0: its last consumed message is the first one.
    assert_eq!(q0.consume_time_stamp, q0.min_time_stamp, "{q0:?}");
    assert!(
        q0.delay_time >= 0 && q0.delay_time <= now_ms() - before,
        "{q0:?}"
    );
    assert!(!q0.min_time_stamp_str.is_empty());
    let q1 = &body.consume_time_span_set[1];
    assert_eq!(
        (q1.min_time_stamp, q1.max_time_stamp, q1.delay_time),
        (-1, -1, 0)
    );

    let r = stack.call(span("NoSuchTopic")).await;
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
    assert!(r.remark_str().contains("not exist"), "{}", r.remark_str());
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correction_offset_is_the_lowest_offset_of_the_other_groups() {
    let stack = Stack::start().await;
    create_topic(stack.ns_addr(), stack.addr(), "Corr", 2).await;
    for i in 0..4 {
        stack.send("Corr", 0, &format!("m{i}"), &[]).await;
    }
    stack.broker().store().wait_dispatched(DISPATCH);
    for (group, offset) in [("ga", 2), ("gb", 1), ("gc", 3)] {
        commit(stack.raw(), group, "Corr", 0, offset).await;
    }
    let correction = |compare: &str, filter: &str| {
        request(
            RequestCode::QUERY_CORRECTION_OFFSET,
            &[
                ("topic", "Corr"),
                ("compareGroup", compare),
                ("filterGroups", filter),
            ],
        )
    };
    let offsets = |r: RemotingCommand| {
        assert_eq!(r.code, 0, "{}", r.remark_str());
        fastjson::decode::<QueryCorrectionOffsetBody>(&r.body)
            .expect("correction body")
            .correction_offsets
            .0
    };
    assert_eq!(offsets(stack.call(correction("gb", "")).await)[&0], 1);
    assert_eq!(offsets(stack.call(correction("ga", "gb")).await)[&0], 2);
    // The compared group is behind everyone else considered.
    assert_eq!(
        offsets(stack.call(correction("gb", "gb")).await)[&0],
        i64::MAX
    );
    stack.stop().await;
}

/// Sends `n` messages of `size` bytes to queue 0 of `topic`.
async fn fill(stack: &Stack, topic: &str, n: usize, size: usize) {
    let body = "x".repeat(size);
    for _ in 0..n {
        assert_eq!(stack.send(topic, 0, &body, &[]).await.code, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_commit_log_and_consume_queues_are_deleted_on_request() {
    let stack = Stack::start_with(|c| {
        c.store.mapped_file_size_commit_log = 64 * 1024;
        c.store.max_message_size = 32 * 1024;
        c.store.file_reserved_time = 0;
    })
    .await;
    for topic in ["Old", "Filler", "New"] {
        create_topic(stack.ns_addr(), stack.addr(), topic, 1).await;
    }
    // Old lives in the first CommitLog file only; Filler runs into the second, New is there.
    fill(&stack, "Old", 5, 8 * 1024).await;
    fill(&stack, "Filler", 8, 8 * 1024).await;
    fill(&stack, "New", 1, 10).await;
    stack.broker().store().wait_dispatched(DISPATCH);
    let cq = stack.dir().join("store").join("consumequeue");
    assert!(cq.join("Old").exists());

    let r = stack
        .call(request(RequestCode::DELETE_EXPIRED_COMMITLOG, &[]))
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    assert!(stack.broker().store().commit_log_min_offset() >= 64 * 1024);
    // Retention keeps a consume queue's last file, so Old still has one.
    assert!(cq.join("Old").exists());

    let r = stack
        .call(request(RequestCode::CLEAN_EXPIRED_CONSUMEQUEUE, &[]))
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    assert!(!cq.join("Old").exists(), "Old's consume queue is deleted");
    assert_eq!(max_offset(stack.raw(), "Old", 0).await, 0);
    assert_eq!(max_offset(stack.raw(), "Filler", 0).await, 8);
    assert_eq!(max_offset(stack.raw(), "New", 0).await, 1);
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_queues_of_topics_no_longer_configured_are_deleted() {
    let ns = NameServer::start().await;
    let mut broker = TestBroker::start(ns.addr(), |_| {}).await;
    for topic in ["Ghost", "Kept"] {
        create_topic(ns.addr(), broker.addr(), topic, 1).await;
        let raw = RawClient::new(broker.addr());
        assert_eq!(raw.call(send_request(topic, 0, b"m", &[])).await.code, 0);
        raw.shutdown().await;
    }
    broker.store().wait_dispatched(DISPATCH);
    // Ghost leaves the metadata while the broker is down; its consume queue stays on disk.
    let root = broker.config().store.store_path_root_dir.clone();
    broker
        .restart(|_| stellmq_testkit::forget_topic(&root, "Ghost"))
        .await;
    let cq = root.join("consumequeue");
    assert!(cq.join("Ghost").exists() && cq.join("Kept").exists());

    let raw = RawClient::new(broker.addr());
    let r = raw
        .call(request(RequestCode::CLEAN_UNUSED_TOPIC, &[]))
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    assert!(
        !cq.join("Ghost").exists(),
        "Ghost's consume queue is deleted"
    );
    assert!(cq.join("Kept").exists());
    assert_eq!(max_offset(&raw, "Kept", 0).await, 1);
    raw.shutdown().await;
    broker.shutdown().await;
    ns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_message_is_put_back_for_another_check() {
    let stack = Stack::start().await;
    let half = "RMQ_SYS_TRANS_HALF_TOPIC";
    let r = stack
        .call(send_request(
            "Tx",
            0,
            b"half",
            &[(property::TRAN_MSG, "true"), (property::PGROUP, "pg")],
        ))
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let msg_id = r.ext_fields.get("msgId").expect("msgId").to_owned();
    stack.broker().store().wait_dispatched(DISPATCH);
    assert_eq!(max_offset(stack.raw(), half, 0).await, 1);

    let resume = |id: &str| request(RequestCode::RESUME_CHECK_HALF_MESSAGE, &[("msgId", id)]);
    let r = stack.call(resume(&msg_id)).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    stack.broker().store().wait_dispatched(DISPATCH);
    assert_eq!(max_offset(stack.raw(), half, 0).await, 2);
    // The copy is the same half message, its check count back at 0.
    let entry = stack
        .call(request(
            RequestCode::QUERY_CONSUME_QUEUE,
            &[
                ("topic", half),
                ("queueId", "0"),
                ("index", "1"),
                ("count", "1"),
            ],
        ))
        .await;
    let entry: QueryConsumeQueueResponseBody = fastjson::decode(&entry.body).expect("cq body");
    let offset = entry.queue_data[0].physic_offset.to_string();
    let view = stack
        .call(request(
            RequestCode::VIEW_MESSAGE_BY_ID,
            &[("offset", &offset)],
        ))
        .await;
    let (copy, _) = MessageRecord::decode(&view.body, false).expect("record");
    assert_eq!(&copy.body[..], b"half");
    assert_eq!(
        copy.properties.get(property::TRANSACTION_CHECK_TIMES),
        Some("0")
    );
    assert_eq!(copy.properties.get(property::REAL_TOPIC), Some("Tx"));

    let r = stack.call(resume("not-an-id")).await;
    assert_eq!(r.code, 1);
    assert!(r.remark_str().contains("bad msgId"), "{}", r.remark_str());
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_producer_is_listed_by_group() {
    let stack = Stack::start().await;
    let before = now_ms();
    let r = stack
        .call(heartbeat(
            "127.0.0.5@p1",
            "cg",
            &[],
            MessageModel::Clustering,
        ))
        .await;
    assert_eq!(r.code, 0);
    let r = stack
        .call(request(RequestCode::GET_ALL_PRODUCER_INFO, &[]))
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let table: ProducerTableInfo = fastjson::decode(&r.body).expect("producer table");
    let pg = table.data.get("pg").expect("group pg");
    assert_eq!(pg.len(), 1);
    assert_eq!(pg[0].client_id, "127.0.0.5@p1");
    assert_eq!(pg[0].language, "JAVA");
    assert!(pg[0].remote_ip.starts_with("127.0.0.1:"), "{:?}", pg[0]);
    assert!(pg[0].last_update_timestamp >= before - 1000, "{:?}", pg[0]);
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_name_server_registers_topics_and_lists_broker_members() {
    let stack = Stack::start().await;
    stack.broker().register_now().await;
    let ns = RawClient::new(stack.ns_addr());
    let register = |topic: &str, broker: &str| {
        let route = TopicRouteData {
            queue_datas: vec![QueueData {
                broker_name: broker.into(),
                read_queue_nums: 3,
                write_queue_nums: 3,
                perm: 6,
                topic_sys_flag: 0,
            }],
            ..Default::default()
        };
        request(RequestCode::REGISTER_TOPIC_IN_NAMESRV, &[("topic", topic)])
            .with_body(fastjson::encode(&route))
    };
    assert_eq!(ns.call(register("Registered", "broker-a")).await.code, 0);
    let route = ns.route("Registered").await.expect("a route");
    assert_eq!(route.queue_datas[0].write_queue_nums, 3);
    assert_eq!(route.broker_datas[0].master_addr(), Some(stack.addr()));
    // As in RocketMQ: an unknown broker registers nothing, and still answers SUCCESS.
    assert_eq!(ns.call(register("Nowhere", "broker-x")).await.code, 0);
    assert_eq!(
        ns.route("Nowhere").await.map_err(|(code, _)| code),
        Err(ResponseCode::TOPIC_NOT_EXIST.as_i32())
    );
    let bad = request(RequestCode::REGISTER_TOPIC_IN_NAMESRV, &[("topic", "Bad")])
        .with_body(&b"not json"[..]);
    assert_eq!(ns.call(bad).await.code, 1);

    let members = |broker: &str| {
        request(
            RequestCode::GET_BROKER_MEMBER_GROUP,
            &[("clusterName", "DefaultCluster"), ("brokerName", broker)],
        )
    };
    let r = ns.call(members("broker-a")).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let group = fastjson::decode::<GetBrokerMemberGroupResponseBody>(&r.body)
        .expect("member group")
        .broker_member_group;
    assert_eq!(group.cluster, "DefaultCluster");
    assert_eq!(
        group.broker_addrs.0.get(&0).map(String::as_str),
        Some(stack.addr())
    );
    let r = ns.call(members("broker-x")).await;
    let group = fastjson::decode::<GetBrokerMemberGroupResponseBody>(&r.body)
        .expect("member group")
        .broker_member_group;
    assert!(group.broker_addrs.0.is_empty());
    ns.shutdown().await;
    stack.stop().await;
}
