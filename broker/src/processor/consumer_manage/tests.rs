//! Orderly queue locks as consumers see them, over an in-memory connection to a real broker.

use stellmq_remoting::protocol::body::{
    fastjson, LockBatchRequestBody, LockBatchResponseBody, MessageQueue,
};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

use crate::testing::{assert_success, send_request, Fixture};

fn queue(topic: &str) -> MessageQueue {
    MessageQueue {
        broker_name: "broker-fixture".into(),
        queue_id: 0,
        topic: topic.into(),
    }
}

fn locking(code: RequestCode, client: &str, mq: &MessageQueue) -> RemotingCommand {
    let body = LockBatchRequestBody {
        consumer_group: "og".into(),
        client_id: client.into(),
        mq_set: vec![mq.clone()],
        only_this_broker: false,
    };
    RemotingCommand::request(code, ExtFields::default()).with_body(fastjson::encode(&body))
}

/// The queues a LOCK_BATCH_MQ for `client` got.
async fn lock(broker: &Fixture, client: &str, mq: &MessageQueue) -> Vec<MessageQueue> {
    let response = broker
        .call(locking(RequestCode::LOCK_BATCH_MQ, client, mq))
        .await;
    assert_success(&response);
    fastjson::decode::<LockBatchResponseBody>(&response.body)
        .expect("a lock answer")
        .lock_ok_mq_set
}

#[tokio::test]
async fn an_orderly_queue_lock_is_held_by_one_client_until_it_lets_go() {
    let broker = Fixture::start().await;
    // Locks are only kept for queues that exist.
    assert_success(&broker.call(send_request("O", 0, b"first", "")).await);
    let mq = queue("O");
    assert_eq!(lock(&broker, "a", &mq).await, std::slice::from_ref(&mq));
    assert!(lock(&broker, "b", &mq).await.is_empty(), "held by a");
    assert_eq!(
        lock(&broker, "a", &mq).await,
        std::slice::from_ref(&mq),
        "a renews"
    );
    assert_success(
        &broker
            .call(locking(RequestCode::UNLOCK_BATCH_MQ, "a", &mq))
            .await,
    );
    assert_eq!(lock(&broker, "b", &mq).await, [mq], "free once a let go");
}

#[tokio::test]
async fn a_queue_of_no_topic_is_never_locked() {
    let broker = Fixture::start().await;
    assert!(lock(&broker, "a", &queue("NoSuchTopic")).await.is_empty());
}
