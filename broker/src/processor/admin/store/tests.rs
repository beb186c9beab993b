//! DELETE_EXPIRED_COMMITLOG, CLEAN_EXPIRED_CONSUMEQUEUE and CLEAN_UNUSED_TOPIC as mqadmin's
//! deleteExpiredCommitLog, cleanExpiredCQ and cleanUnusedTopic send them, over an in-memory
//! connection to a real broker.

use stellmq_remoting::protocol::RequestCode;

use crate::testing::{assert_success, pull_request, request, send_request, Fixture};

async fn stored(broker: &Fixture, topic: &str) {
    assert_success(&broker.call(send_request(topic, 0, b"m", "")).await);
}

#[tokio::test]
async fn unused_topics_lose_their_queues_and_used_ones_keep_them() {
    let broker = Fixture::start().await;
    stored(&broker, "Kept").await;
    stored(&broker, "Gone").await;
    broker.dispatched().await;
    // Out of the table, as after a topic deleted while its queues stayed on disk.
    assert!(broker.state.topics.delete("Gone").is_some());
    assert_success(
        &broker
            .call(request(RequestCode::CLEAN_UNUSED_TOPIC, &[]))
            .await,
    );
    let left = broker.state.store.topics();
    assert!(left.contains(&"Kept".to_owned()), "{left:?}");
    assert!(!left.contains(&"Gone".to_owned()), "{left:?}");
    assert_eq!(broker.state.store.max_offset_in_queue("Kept", 0), 1);
    assert_eq!(broker.state.store.max_offset_in_queue("Gone", 0), 0);
}

#[tokio::test]
async fn nothing_live_is_deleted_by_the_expiry_requests() {
    let broker = Fixture::start().await;
    stored(&broker, "Live").await;
    broker.dispatched().await;
    for code in [
        RequestCode::DELETE_EXPIRED_COMMITLOG,
        RequestCode::CLEAN_EXPIRED_CONSUMEQUEUE,
    ] {
        assert_success(&broker.call(request(code, &[])).await);
    }
    assert_eq!(broker.state.store.max_offset_in_queue("Live", 0), 1);
    let pulled = broker
        .call(pull_request("store_tests", "Live", 0, 0, 0))
        .await;
    assert_success(&pulled);
    assert!(!pulled.body.is_empty(), "the message is still served");
}
