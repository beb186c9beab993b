//! A consumer's running info as RocketMQ's tools print and judge it
//! (`ConsumerRunningInfo.formatString`, `analyzeSubscription`, `analyzeProcessQueue`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use stellmq_remoting::protocol::body::{
    running_prop, ConsumerRunningInfo, ProcessQueueInfo, SubscriptionData,
};
use stellmq_remoting::protocol::message::UtcTime;

/// Java's `UtilAll.timeMillisToHumanString`: `yyyyMMddHHmmssSSS` (UTC).
fn compact_time(ms: i64) -> String {
    let t = UtcTime::from_ms(ms);
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
    )
}

/// Java's `ProcessQueueInfo.toString()`.
pub fn process_queue_text(q: &ProcessQueueInfo) -> String {
    format!(
        "ProcessQueueInfo [commitOffset={}, cachedMsgMinOffset={}, cachedMsgMaxOffset={}, cachedMsgCount={}, cachedMsgSizeInMiB={}, transactionMsgMinOffset={}, transactionMsgMaxOffset={}, transactionMsgCount={}, locked={}, tryUnlockTimes={}, lastLockTimestamp={}, droped={}, lastPullTimestamp={}, lastConsumeTimestamp={}]",
        q.commit_offset,
        q.cached_msg_min_offset,
        q.cached_msg_max_offset,
        q.cached_msg_count,
        q.cached_msg_size_in_mib,
        q.transaction_msg_min_offset,
        q.transaction_msg_max_offset,
        q.transaction_msg_count,
        q.locked,
        q.try_unlock_times,
        compact_time(q.last_lock_timestamp),
        q.droped,
        compact_time(q.last_pull_timestamp),
        compact_time(q.last_consume_timestamp)
    )
}

/// `ConsumerRunningInfo.formatString()`: properties, subscriptions, offsets, queue details,
/// rates (and the stack dump, when there is one).
pub fn format_running_info(info: &ConsumerRunningInfo) -> String {
    let mut s = String::from("#Consumer Properties#\n");
    for (k, v) in &info.properties {
        let _ = writeln!(s, "{k:<40}: {v}");
    }
    s.push_str("\n\n#Consumer Subscription#\n");
    for (i, sub) in info.subscription_set.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:03} Topic: {:<40} ClassFilter: {:<8} SubExpression: {}",
            i + 1,
            sub.topic,
            sub.class_filter_mode,
            sub.sub_string
        );
    }
    s.push_str("\n\n#Consumer Offset#\n");
    let _ = writeln!(
        s,
        "{:<64}  {:<32}  {:<4}  {:<20}",
        "#Topic", "#Broker Name", "#QID", "#Consumer Offset"
    );
    for (mq, q) in &info.mq_table.0 {
        let _ = writeln!(
            s,
            "{:<32}  {:<32}  {:<4}  {:<20}",
            mq.topic, mq.broker_name, mq.queue_id, q.commit_offset
        );
    }
    s.push_str("\n\n#Consumer MQ Detail#\n");
    let _ = writeln!(
        s,
        "{:<64}  {:<32}  {:<4}  {:<20}",
        "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo"
    );
    for (mq, q) in &info.mq_table.0 {
        let _ = writeln!(
            s,
            "{:<64}  {:<32}  {:<4}  {}",
            mq.topic,
            mq.broker_name,
            mq.queue_id,
            process_queue_text(q)
        );
    }
    s.push_str("\n\n#Consumer RT&TPS#\n");
    let _ = writeln!(
        s,
        "{:<64}  {:>14} {:>14} {:>14} {:>14} {:>18} {:>25}",
        "#Topic",
        "#Pull RT",
        "#Pull TPS",
        "#Consume RT",
        "#ConsumeOK TPS",
        "#ConsumeFailed TPS",
        "#ConsumeFailedMsgsInHour"
    );
    for (topic, r) in &info.status_table {
        let _ = writeln!(
            s,
            "{:<32}  {:>14.2} {:>14.2} {:>14.2} {:>14.2} {:>18.2} {:>25}",
            topic,
            r.pull_rt,
            r.pull_tps,
            r.consume_rt,
            r.consume_ok_tps,
            r.consume_failed_tps,
            r.consume_failed_msgs
        );
    }
    if let Some(jstack) = &info.jstack {
        s.push_str("\n\n#Consumer jstack#\n");
        s.push_str(jstack);
    }
    s
}

fn is_push(info: &ConsumerRunningInfo) -> bool {
    info.properties
        .get(running_prop::CONSUME_TYPE)
        .is_some_and(|t| t == "CONSUME_PASSIVELY")
}

fn subscriptions(info: &ConsumerRunningInfo) -> Vec<&SubscriptionData> {
    let mut subs: Vec<&SubscriptionData> = info.subscription_set.iter().collect();
    subs.sort_by(|a, b| a.topic.cmp(&b.topic));
    subs
}

/// `analyzeSubscription`: push consumers running for over two minutes must all subscribe
/// alike (judged on the first one's type and start time, as RocketMQ does).
pub fn same_subscription(infos: &BTreeMap<String, ConsumerRunningInfo>, now_ms: i64) -> bool {
    let Some(first) = infos.values().next() else {
        return true;
    };
    let started: i64 = first
        .properties
        .get(running_prop::CONSUMER_START_TIMESTAMP)
        .and_then(|t| t.parse().ok())
        .unwrap_or(now_ms);
    if !is_push(first) || now_ms - started <= 2 * 60 * 1000 {
        return true;
    }
    let expected = subscriptions(first);
    infos.values().all(|i| subscriptions(i) == expected)
}

/// `analyzeProcessQueue`: queues an orderly push consumer cannot lock, and queues a
/// concurrent one has held messages of for over a minute without consuming.
pub fn process_queue_warnings(client_id: &str, info: &ConsumerRunningInfo, now_ms: i64) -> String {
    let mut s = String::new();
    if !is_push(info) {
        return s;
    }
    let orderly = info
        .properties
        .get(running_prop::CONSUME_ORDERLY)
        .is_some_and(|v| v == "true");
    for (mq, q) in &info.mq_table.0 {
        let mq_text = format!(
            "MessageQueue [topic={}, brokerName={}, queueId={}]",
            mq.topic, mq.broker_name, mq.queue_id
        );
        if orderly {
            if !q.locked {
                let _ = writeln!(
                    s,
                    "{client_id} {mq_text} can't lock for a while, {}ms",
                    now_ms - q.last_lock_timestamp
                );
            } else if q.droped && q.try_unlock_times > 0 {
                let _ = writeln!(
                    s,
                    "{client_id} {mq_text} unlock {} times, still failed",
                    q.try_unlock_times
                );
            }
        } else {
            let idle = now_ms - q.last_consume_timestamp;
            if idle > 60_000 && q.cached_msg_count > 0 {
                let _ = writeln!(
                    s,
                    "{client_id} {mq_text} can't consume for a while, maybe blocked, {idle}ms"
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_remoting::protocol::body::MessageQueue;

    fn info(push: bool, started: i64, topic: &str) -> ConsumerRunningInfo {
        let mut i = ConsumerRunningInfo::default();
        let kind = if push {
            "CONSUME_PASSIVELY"
        } else {
            "CONSUME_ACTIVELY"
        };
        i.properties
            .insert(running_prop::CONSUME_TYPE.into(), kind.into());
        i.properties.insert(
            running_prop::CONSUMER_START_TIMESTAMP.into(),
            started.to_string(),
        );
        i.subscription_set
            .push(SubscriptionData::tags(topic, "*", 1));
        i
    }

    #[test]
    fn subscriptions_are_compared_once_push_consumers_ran_a_while() {
        let now = 10_000_000;
        let table = |a: ConsumerRunningInfo, b: ConsumerRunningInfo| {
            BTreeMap::from([("a".to_owned(), a), ("b".to_owned(), b)])
        };
        assert!(!same_subscription(
            &table(info(true, 0, "T"), info(true, 0, "U")),
            now
        ));
        assert!(same_subscription(
            &table(info(true, 0, "T"), info(true, 0, "T")),
            now
        ));
        // Just started, or pull consumers: not judged.
        assert!(same_subscription(
            &table(info(true, now - 1000, "T"), info(true, 0, "U")),
            now
        ));
        assert!(same_subscription(
            &table(info(false, 0, "T"), info(false, 0, "U")),
            now
        ));
    }

    #[test]
    fn blocked_queues_are_reported() {
        let mut i = info(true, 0, "T");
        let mq = MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: 2,
        };
        i.mq_table.0.insert(
            mq,
            ProcessQueueInfo {
                cached_msg_count: 3,
                last_consume_timestamp: 0,
                ..Default::default()
            },
        );
        let text = process_queue_warnings("c1", &i, 120_000);
        assert!(
            text.contains("c1 MessageQueue [topic=T, brokerName=b, queueId=2] can't consume"),
            "{text}"
        );
        assert!(format_running_info(&i).contains("#Consumer MQ Detail#"));
    }
}
