//! PULL_MESSAGE as a consumer sees it, over an in-memory connection to a real broker.

use std::time::Duration;

use stellmq_remoting::net::RemotingError;

use stellmq_remoting::protocol::headers::{CommandHeader, PullMessageResponseHeader};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{pull_request, send_request, Fixture};

const GROUP: &str = "pull_tests";

fn offsets(response: &RemotingCommand) -> PullMessageResponseHeader {
    PullMessageResponseHeader::from_ext_fields(&response.ext_fields).expect("a pull header")
}

fn bodies(response: &RemotingCommand) -> Vec<Vec<u8>> {
    assert_eq!(
        response.code,
        ResponseCode::SUCCESS.as_i32(),
        "{:?}",
        response.remark
    );
    MessageRecord::decode_all(response.body.clone(), true)
        .expect("records")
        .into_iter()
        .map(|r| r.body.to_vec())
        .collect()
}

async fn send(broker: &Fixture, body: &[u8]) {
    let response = broker.call(send_request("Feed", 0, body, "")).await;
    assert_eq!(response.code, ResponseCode::SUCCESS.as_i32());
}

#[tokio::test]
async fn a_pull_returns_what_was_sent_in_order_and_where_to_go_on() {
    let broker = Fixture::start().await;
    for body in [b"one", b"two"] {
        send(&broker, body).await;
    }
    broker.dispatched().await;
    let response = broker.call(pull_request(GROUP, "Feed", 0, 0, 0)).await;
    assert_eq!(bodies(&response), [b"one".to_vec(), b"two".to_vec()]);
    let h = offsets(&response);
    assert_eq!((h.next_begin_offset, h.min_offset, h.max_offset), (2, 0, 2));
}

#[tokio::test]
async fn a_pull_at_the_end_without_suspension_answers_not_found_at_once() {
    let broker = Fixture::start().await;
    send(&broker, b"one").await;
    broker.dispatched().await;
    let response = broker.call(pull_request(GROUP, "Feed", 0, 1, 0)).await;
    assert_eq!(response.code, ResponseCode::PULL_NOT_FOUND.as_i32());
    assert_eq!(offsets(&response).next_begin_offset, 1);
}

#[tokio::test]
async fn a_pull_far_past_the_end_is_moved() {
    let broker = Fixture::start().await;
    send(&broker, b"one").await;
    broker.dispatched().await;
    let response = broker.call(pull_request(GROUP, "Feed", 0, 500, 0)).await;
    assert_eq!(response.code, ResponseCode::PULL_OFFSET_MOVED.as_i32());
    // RocketMQ's correction: to the queue's start while nothing of it was deleted (minOffset
    // 0), else to its end.
    let h = offsets(&response);
    assert_eq!((h.next_begin_offset, h.min_offset, h.max_offset), (0, 0, 1));
}

/// A pull of `Feed` queue 0 from offset 1 that may wait `suspend_ms`, sent on a connection
/// of its own, once the broker holds it.
async fn held_pull(
    broker: &Fixture,
    suspend_ms: i64,
) -> tokio::task::JoinHandle<Result<RemotingCommand, RemotingError>> {
    let consumer = broker.connect(2);
    let poll = tokio::spawn(async move {
        let request = pull_request(GROUP, "Feed", 0, 1, suspend_ms);
        consumer
            .channel
            .invoke(request, Duration::from_secs(30))
            .await
    });
    crate::testing::eventually("the pull is parked", || {
        broker.state.consumption.hold.parked_count() == 1
    })
    .await;
    poll
}

#[tokio::test]
async fn a_long_poll_waits_for_the_next_message_and_gets_it() {
    let broker = Fixture::start().await;
    send(&broker, b"first").await;
    broker.dispatched().await;
    let poll = held_pull(&broker, 20_000).await;
    // A pass of the periodic check finds nothing new and the deadline far: it stays parked.
    broker.state.consumption.hold.check_all();
    tokio::task::yield_now().await;
    assert!(!poll.is_finished(), "nothing to read yet: the pull waits");
    assert_eq!(broker.state.consumption.hold.parked_count(), 1);
    send(&broker, b"second").await;
    let response = poll.await.expect("the poll ran").expect("answered");
    assert_eq!(bodies(&response), [b"second".to_vec()]);
    assert_eq!(broker.state.consumption.hold.parked_count(), 0);
}

#[tokio::test]
async fn a_queue_the_topic_does_not_have_is_refused() {
    let broker = Fixture::start().await;
    send(&broker, b"one").await;
    broker.dispatched().await;
    let response = broker.call(pull_request(GROUP, "Feed", 0, 0, 0)).await;
    assert_eq!(response.code, ResponseCode::SUCCESS.as_i32());
    let response = broker.call(pull_request(GROUP, "Feed", 64, 0, 0)).await;
    assert_eq!(response.code, ResponseCode::SYSTEM_ERROR.as_i32());
    let remark = response.remark.unwrap_or_default();
    assert!(remark.contains("queueId[64] is illegal"), "{remark}");
}

#[tokio::test]
async fn a_slave_behind_the_consumer_sends_it_to_the_master_at_the_same_offset() {
    let slave = Fixture::start_slave_with(|_| {}).await;
    // The topic is known (copied from the master) but the slave holds none of its messages
    // yet: a consumer that read 5 of them from the master asks for the sixth.
    let topic = stellmq_remoting::protocol::body::TopicConfig::with_queues("Feed", 1, 1, 6);
    slave.state.topics.update(topic).expect("a topic");
    let response = slave.call(pull_request(GROUP, "Feed", 0, 5, 0)).await;
    assert_eq!(response.code, ResponseCode::PULL_RETRY_IMMEDIATELY.as_i32());
    let h = offsets(&response);
    assert_eq!(h.next_begin_offset, 5, "not moved back to the start");
    assert_eq!(h.suggest_which_broker_id, 0, "to the master");

    let checking = Fixture::start_slave_with(|c| c.broker.offset_check_in_slave = true).await;
    let topic = stellmq_remoting::protocol::body::TopicConfig::with_queues("Feed", 1, 1, 6);
    checking.state.topics.update(topic).expect("a topic");
    let response = checking.call(pull_request(GROUP, "Feed", 0, 5, 0)).await;
    assert_eq!(
        response.code,
        ResponseCode::PULL_OFFSET_MOVED.as_i32(),
        "offsetCheckInSlave"
    );
}

#[tokio::test]
async fn a_long_poll_with_nothing_arriving_is_answered_not_found_at_its_deadline() {
    let broker = Fixture::start().await;
    send(&broker, b"first").await;
    broker.dispatched().await;
    let poll = held_pull(&broker, 15_000).await;
    broker.advance(Duration::from_secs(14));
    broker.state.consumption.hold.check_all();
    tokio::task::yield_now().await;
    assert!(
        !poll.is_finished(),
        "a second before its deadline it still waits"
    );
    broker.advance(Duration::from_secs(2));
    broker.state.consumption.hold.check_all();
    let response = poll.await.expect("the poll ran").expect("answered");
    assert_eq!(response.code, ResponseCode::PULL_NOT_FOUND.as_i32());
    assert_eq!(offsets(&response).next_begin_offset, 1);
}

#[tokio::test]
async fn a_runtime_permission_change_reaches_the_next_pull() {
    let broker = Fixture::start().await;
    send(&broker, b"m").await;
    broker.dispatched().await;
    let update = |perm: &'static str| {
        crate::testing::request(RequestCode::UPDATE_BROKER_CONFIG, &[]).with_body(perm.as_bytes())
    };
    // Write-only: pulls are refused, and served again once readable.
    let changed = broker.call(update("brokerPermission=2\n")).await;
    assert_eq!(changed.code, ResponseCode::SUCCESS.as_i32());
    let refused = broker.call(pull_request(GROUP, "Feed", 0, 0, 0)).await;
    assert_eq!(refused.code, ResponseCode::NO_PERMISSION.as_i32());
    assert!(refused
        .remark
        .is_some_and(|r| r.contains("pulling message is forbidden")));
    let changed = broker.call(update("brokerPermission=6\n")).await;
    assert_eq!(changed.code, ResponseCode::SUCCESS.as_i32());
    let served = broker.call(pull_request(GROUP, "Feed", 0, 0, 0)).await;
    assert_eq!(bodies(&served), vec![b"m".to_vec()]);
}
