//! QUERY_CONSUME_TIME_SPAN and QUERY_CORRECTION_OFFSET as admin tools send them, over an
//! in-memory connection to a real broker.

use stellmq_remoting::protocol::body::{
    fastjson, QueryConsumeTimeSpanBody, QueryCorrectionOffsetBody,
};
use stellmq_remoting::protocol::{RequestCode, ResponseCode};

use crate::testing::{assert_success, request, send_request, Fixture};

/// Three messages in queue 0 of `Span`.
async fn three_sent(broker: &Fixture) {
    for body in ["a", "b", "c"] {
        assert_success(
            &broker
                .call(send_request("Span", 0, body.as_bytes(), ""))
                .await,
        );
    }
    broker.dispatched().await;
}

#[tokio::test]
async fn time_spans_follow_the_queues_and_the_groups_offset() {
    let broker = Fixture::start().await;
    three_sent(&broker).await;
    broker.state.offsets.commit("spans", "Span", 0, 2);
    let answer = broker
        .call(request(
            RequestCode::QUERY_CONSUME_TIME_SPAN,
            &[("topic", "Span"), ("group", "spans")],
        ))
        .await;
    assert_success(&answer);
    let body: QueryConsumeTimeSpanBody = fastjson::decode(&answer.body).expect("a body");
    let queues = broker
        .state
        .topics
        .get("Span")
        .expect("created")
        .write_queue_nums;
    assert_eq!(body.consume_time_span_set.len(), queues as usize);
    let first = &body.consume_time_span_set[0];
    assert_eq!(first.message_queue.queue_id, 0);
    assert_eq!(first.message_queue.broker_name, "broker-fixture");
    assert!(first.min_time_stamp > 0 && first.min_time_stamp <= first.max_time_stamp);
    let second_stored = broker
        .state
        .store
        .message_store_timestamp("Span", 0, 1)
        .expect("stored");
    assert_eq!(first.consume_time_stamp, second_stored, "the last consumed");
    assert!(first.delay_time >= 0);
    let empty = &body.consume_time_span_set[1];
    assert_eq!((empty.min_time_stamp, empty.max_time_stamp), (-1, -1));
    assert_eq!(empty.delay_time, 0);

    let unknown = broker
        .call(request(
            RequestCode::QUERY_CONSUME_TIME_SPAN,
            &[("topic", "Nowhere"), ("group", "spans")],
        ))
        .await;
    assert_eq!(unknown.code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
}

async fn correction(broker: &Fixture, filtered: &str) -> Vec<(i64, i64)> {
    let answer = broker
        .call(request(
            RequestCode::QUERY_CORRECTION_OFFSET,
            &[
                ("topic", "Span"),
                ("compareGroup", "compared"),
                ("filterGroups", filtered),
            ],
        ))
        .await;
    assert_success(&answer);
    let body: QueryCorrectionOffsetBody = fastjson::decode(&answer.body).expect("a body");
    body.correction_offsets.0.into_iter().collect()
}

#[tokio::test]
async fn the_correction_offset_is_the_slowest_other_group_unless_the_compared_one_is_behind() {
    let broker = Fixture::start().await;
    three_sent(&broker).await;
    let offsets = &broker.state.offsets;
    offsets.commit("fast", "Span", 0, 3);
    offsets.commit("slow", "Span", 0, 1);
    offsets.commit("compared", "Span", 0, 2);
    assert_eq!(correction(&broker, "compared").await, [(0, 1)]);
    assert_eq!(correction(&broker, "compared,slow").await, [(0, i64::MAX)]);
    offsets.commit("compared", "Span", 0, 3);
    assert_eq!(correction(&broker, "compared,slow").await, [(0, 3)]);
}
