//! Consumer offsets, consume stats and offset resets as mqadmin and consumers see them, over
//! in-memory connections to a real broker.

use std::time::Duration;

use stellmq_remoting::protocol::body::{
    fastjson, ConsumeStats, GroupList, MessageQueue, ResetOffsetBody,
};
use stellmq_remoting::protocol::{RequestCode, ResponseCode};

use crate::testing::{assert_success, heartbeat, request, send_request, Fixture};

async fn three_sent_and_two_consumed(broker: &Fixture) {
    for body in [b"m0", b"m1", b"m2"] {
        assert_success(&broker.call(send_request("Stats", 0, body, "")).await);
    }
    broker.dispatched().await;
    let commit = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "sg"),
            ("topic", "Stats"),
            ("queueId", "0"),
            ("commitOffset", "2"),
        ],
    );
    assert_success(&broker.call(commit).await);
}

fn q0() -> MessageQueue {
    MessageQueue {
        broker_name: "broker-fixture".into(),
        queue_id: 0,
        topic: "Stats".into(),
    }
}

#[tokio::test]
async fn consume_stats_and_who_consumes_follow_committed_offsets() {
    let broker = Fixture::start().await;
    three_sent_and_two_consumed(&broker).await;
    let stats = broker
        .call(request(
            RequestCode::GET_CONSUME_STATS,
            &[("consumerGroup", "sg"), ("topic", "Stats")],
        ))
        .await;
    assert_success(&stats);
    let stats: ConsumeStats = fastjson::decode(&stats.body).expect("stats");
    let q0 = &stats.offset_table.0[&q0()];
    assert_eq!((q0.broker_offset, q0.consumer_offset), (3, 2));
    let who = broker
        .call(request(
            RequestCode::QUERY_TOPIC_CONSUME_BY_WHO,
            &[("topic", "Stats")],
        ))
        .await;
    let groups = fastjson::decode::<GroupList>(&who.body).expect("groups");
    assert_eq!(groups.group_list, ["sg"]);
}

#[tokio::test]
async fn an_offset_reset_is_refused_with_nobody_online_and_told_to_consumers_otherwise() {
    let broker = Fixture::start().await;
    three_sent_and_two_consumed(&broker).await;
    let reset = || {
        request(
            RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
            &[
                ("topic", "Stats"),
                ("group", "sg"),
                ("timestamp", "0"),
                ("isForce", "true"),
            ],
        )
    };
    // Nobody online: CONSUMER_NOT_ONLINE (mqadmin then falls back to another way).
    let offline = broker.call(reset()).await;
    assert_eq!(offline.code, ResponseCode::CONSUMER_NOT_ONLINE.as_i32());

    let mut consumer = broker.connect(9);
    let joined = consumer
        .channel
        .invoke(
            heartbeat("127.0.1.9@9", "sg", "Stats"),
            Duration::from_secs(10),
        )
        .await
        .expect("answered");
    assert_success(&joined);
    let response = broker.call(reset()).await;
    assert_success(&response);
    let body: ResetOffsetBody = fastjson::decode(&response.body).expect("a reset body");
    assert_eq!(body.offset_table.0[&q0()], 0);
    // The consumer is told (after the membership notice its heartbeat caused).
    let told = loop {
        let asked = tokio::time::timeout(Duration::from_secs(10), consumer.asked.recv())
            .await
            .expect("told within 10 s")
            .expect("connected");
        if asked.code != RequestCode::NOTIFY_CONSUMER_IDS_CHANGED.as_i32() {
            break asked;
        }
    };
    assert_eq!(
        told.code,
        RequestCode::RESET_CONSUMER_CLIENT_OFFSET.as_i32()
    );
    let offset = broker
        .call(request(
            RequestCode::QUERY_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "sg"),
                ("topic", "Stats"),
                ("queueId", "0"),
            ],
        ))
        .await;
    assert_eq!(offset.ext_fields.get("offset"), Some("0"));
}

/// GET_ALL_CONSUMER_OFFSET as a slave asks: `stellmqOffsetsSince` with the last answer's
/// mark gets only the changes.
async fn offsets_since(
    broker: &Fixture,
    since: Option<&str>,
) -> (
    stellmq_remoting::protocol::body::ConsumerOffsetSerializeWrapper,
    String,
    bool,
) {
    let mut asked = request(RequestCode::GET_ALL_CONSUMER_OFFSET, &[]);
    if let Some(mark) = since {
        asked.ext_fields.insert("stellmqOffsetsSince", mark);
    }
    let answer = broker.call(asked).await;
    assert_success(&answer);
    let mark = answer
        .ext_fields
        .get("stellmqOffsetsAt")
        .expect("every answer carries its mark")
        .to_owned();
    let delta = answer.ext_fields.get("stellmqOffsetsDelta") == Some("true");
    (fastjson::decode(&answer.body).expect("a body"), mark, delta)
}

#[tokio::test]
async fn a_slave_with_a_mark_copies_only_what_changed_since() {
    let broker = Fixture::start().await;
    let offsets = &broker.state.offsets;
    offsets.commit("g1", "T", 0, 5);
    offsets.commit("g2", "T", 0, 7);
    let (whole, mark, delta) = offsets_since(&broker, None).await;
    assert!(!delta);
    assert_eq!(whole.offset_table.len(), 2);

    let (nothing, same, delta) = offsets_since(&broker, Some(&mark)).await;
    assert!(delta);
    assert!(nothing.offset_table.is_empty() && nothing.removed_keys.is_empty());
    assert_eq!(same, mark);

    offsets.commit("g2", "T", 1, 9);
    offsets.remove_group("g1");
    let (changes, later, delta) = offsets_since(&broker, Some(&mark)).await;
    assert!(delta);
    assert_eq!(changes.offset_table.keys().collect::<Vec<_>>(), ["T@g2"]);
    assert_eq!(changes.offset_table["T@g2"].0.get(&1), Some(&9));
    assert_eq!(changes.removed_keys, ["T@g1"]);
    assert_ne!(later, mark);

    // A mark of another process (the master restarted) or garbled: the whole table.
    for foreign in ["1:1", "not a mark"] {
        let (all, _, delta) = offsets_since(&broker, Some(foreign)).await;
        assert!(!delta, "{foreign}");
        assert_eq!(all.offset_table.keys().collect::<Vec<_>>(), ["T@g2"]);
    }
}

#[tokio::test]
async fn changes_applied_on_a_slave_match_the_masters_table() {
    let master = Fixture::start().await;
    let slave = Fixture::start_slave_with(|_| {}).await;
    master.state.offsets.commit("g1", "T", 0, 5);
    master.state.offsets.commit("g2", "T", 0, 7);
    let (whole, mark, _) = offsets_since(&master, None).await;
    slave.state.offsets.replace_from_master(whole);
    master.state.offsets.commit("g2", "T", 0, 8);
    master.state.offsets.commit("g3", "T", 2, 1);
    master.state.offsets.remove_group("g1");
    let (changes, _, delta) = offsets_since(&master, Some(&mark)).await;
    assert!(delta);
    slave.state.offsets.apply_changes_from_master(changes);
    assert_eq!(
        slave.state.offsets.wrapper(),
        master.state.offsets.wrapper()
    );
}
