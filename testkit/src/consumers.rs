//! Consumers of the Rust client that record what they receive, and a wait for a consumer
//! group to have consumed everything: the positive precondition before asserting that
//! something was never delivered.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_client::{ConsumeResult, ConsumerConfig, PushConsumer};
use stellmq_remoting::protocol::body::{fastjson, ConsumeFromWhere, ConsumeStats};
use stellmq_remoting::protocol::RequestCode;

use crate::raw::{request, RawClient};

/// Bodies a consumer has received.
pub type Bodies = Arc<Mutex<BTreeSet<String>>>;

/// A consumer of `group` (also its instance name) reading from the first offset.
pub fn consumer_config(ns_addr: &str, group: &str) -> ConsumerConfig {
    ConsumerConfig {
        namesrv_addr: ns_addr.to_owned(),
        group: group.into(),
        instance_name: group.into(),
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        ..Default::default()
    }
}

/// A push consumer of `topic` with `expression` whose listener records every body it gets.
pub async fn recording_consumer(
    config: ConsumerConfig,
    topic: &str,
    expression: &str,
) -> (PushConsumer, Bodies) {
    let seen: Bodies = Bodies::default();
    let recorder = seen.clone();
    let consumer = PushConsumer::start_concurrently(config, &[(topic, expression)], move |msgs| {
        let mut seen = recorder.lock();
        for m in msgs {
            seen.insert(String::from_utf8_lossy(&m.body).into_owned());
        }
        ConsumeResult::Success
    })
    .await
    .expect("the consumer starts");
    (consumer, seen)
}

/// Whether the offsets `group` committed on the broker have reached the end of every queue
/// of `topic` there: every message the broker will ever hand the group from these queues has
/// been consumed (a consumer commits an offset only once everything below it is consumed).
pub async fn group_consumed_all(broker: &RawClient, group: &str, topic: &str) -> bool {
    let r = broker
        .call(request(
            RequestCode::GET_CONSUME_STATS,
            &[("consumerGroup", group), ("topic", topic)],
        ))
        .await;
    if r.code != 0 {
        return false;
    }
    let stats: ConsumeStats = fastjson::decode(&r.body).expect("consume stats");
    let queues = stats.offset_table.0.values();
    // Messages not dispatched yet leave the broker's offsets at 0, where an idle group
    // would count as done: some message must be there.
    queues.clone().any(|o| o.broker_offset > 0)
        && queues.clone().all(|o| o.consumer_offset >= o.broker_offset)
}

/// Waits up to `timeout` for [`group_consumed_all`]. Consumers commit offsets with their
/// pulls and every 5 s, so allow for that.
pub async fn wait_consumed_all(broker: &RawClient, group: &str, topic: &str, timeout: Duration) {
    crate::wait::eventually_within(
        &format!(
            "group {group} consumes every message of {topic} on {}",
            broker.addr()
        ),
        timeout,
        async || group_consumed_all(broker, group, topic).await,
    )
    .await;
}
