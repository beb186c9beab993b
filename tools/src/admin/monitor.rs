//! `startMonitoring`: RocketMQ's MonitorService. Every round it walks the consumer groups
//! (the name server's `%RETRY%` topics) and reports, per group and topic, the messages not
//! consumed yet (total, most on one queue, how far the group's last consumption lags the
//! newest message), the messages in the group's dead-letter topic, and what the members'
//! running info shows wrong (subscriptions that differ, blocked queues). RocketMQ logs the
//! reports; here they go to stdout. `--rounds` bounds the run for tests; SIGTERM or Ctrl-C
//! ends it with status 0.
#![allow(clippy::print_stdout)] // CLI output

use std::collections::BTreeMap;

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::{ConsumeStats, ConsumerRunningInfo, OffsetWrapper};

use super::running_info::{process_queue_warnings, same_subscription};

const PREFIX: &str = "[MONITOR] ";
const RETRY: &str = "%RETRY%";
const DLQ: &str = "%DLQ%";

#[derive(clap::Args, Debug)]
pub struct StartMonitoring {
    /// Milliseconds between the starts of two rounds (RocketMQ's MonitorConfig: one minute).
    #[arg(long = "roundInterval", default_value_t = 60_000)]
    round_interval: u64,
    /// Milliseconds before the first round (RocketMQ waits 20 s).
    #[arg(long = "initialDelay", default_value_t = 20_000)]
    initial_delay: u64,
    /// Rounds to run, then exit 0 (0: until SIGTERM or Ctrl-C, as RocketMQ).
    #[arg(long = "rounds", default_value_t = 0)]
    rounds: u64,
}

/// RocketMQ's `UndoneMsgs` of one group on one topic.
#[derive(Debug, Default, PartialEq)]
struct Undone {
    total: i64,
    single_max: i64,
    delay_max: i64,
}

/// Per topic: total and per-queue maximum of the not yet consumed messages.
fn undone_by_topic(stats: &ConsumeStats) -> BTreeMap<&str, Vec<&OffsetWrapper>> {
    let mut by_topic: BTreeMap<&str, Vec<&OffsetWrapper>> = BTreeMap::new();
    for (mq, w) in &stats.offset_table.0 {
        by_topic.entry(mq.topic.as_str()).or_default().push(w);
    }
    by_topic
}

fn sum_undone(queues: &[&OffsetWrapper]) -> Undone {
    let mut u = Undone::default();
    for w in queues {
        let diff = w.broker_offset - w.consumer_offset;
        u.single_max = u.single_max.max(diff);
        u.total += diff.max(0);
    }
    u
}

/// Store time of the newest message of a queue, if any.
async fn newest_store_time(
    admin: &AdminClient,
    addr: &str,
    topic: &str,
    queue_id: i32,
) -> Option<i64> {
    let max = admin.max_offset(addr, topic, queue_id).await.ok()?;
    if max <= 0 {
        return None;
    }
    let (_, _, records) = admin
        .pull(addr, "TOOLS_CONSUMER", topic, queue_id, max - 1, 0)
        .await
        .ok()?;
    records.first().map(|m| m.head.store_timestamp)
}

/// How far the group's last consumption lags the newest message, worst queue of `topic`.
async fn delay_max(
    admin: &AdminClient,
    addr: &str,
    group_topic: &str,
    stats: &ConsumeStats,
) -> i64 {
    let mut worst = 0;
    for (mq, w) in stats
        .offset_table
        .0
        .iter()
        .filter(|(mq, _)| mq.topic == group_topic)
    {
        if w.last_timestamp <= 0 {
            continue;
        }
        if let Some(newest) = newest_store_time(admin, addr, &mq.topic, mq.queue_id).await {
            worst = worst.max(newest - w.last_timestamp);
        }
    }
    worst
}

async fn report_undone(admin: &AdminClient, group: &str) -> Result<(), ClientError> {
    for addr in super::masters_of(admin, &format!("{RETRY}{group}")).await? {
        let stats = admin.consume_stats(&addr, group, None).await?;
        for (topic, queues) in undone_by_topic(&stats) {
            if topic.starts_with(RETRY) {
                continue;
            }
            let mut u = sum_undone(&queues);
            u.delay_max = delay_max(admin, &addr, topic, &stats).await;
            crate::outln!(
                "{PREFIX}reportUndoneMsgs: UndoneMsgs [consumerGroup={group}, topic={topic}, undoneMsgsTotal={}, undoneMsgsSingleMQ={}, undoneMsgsDelayTimeMills={}]",
                u.total,
                u.single_max,
                u.delay_max
            );
        }
    }
    Ok(())
}

/// Messages in the group's dead-letter topic, when it has one.
async fn report_dlq(admin: &AdminClient, group: &str) -> Result<(), ClientError> {
    let dlq = format!("{DLQ}{group}");
    let Ok(route) = admin.topic_route(&dlq).await else {
        return Ok(());
    };
    let mut total = 0;
    for (_, addr, queues) in stellmq_client::route::readable_masters(&route) {
        for q in 0..queues {
            let max = admin.max_offset(addr, &dlq, q).await?;
            let min = admin.min_offset(addr, &dlq, q).await?;
            total += (max - min).max(0);
        }
    }
    crate::outln!(
        "{PREFIX}reportDlqMsgs: DlqMsgs [consumerGroup={group}, topic={dlq}, dlqMsgsTotal={total}]"
    );
    Ok(())
}

async fn report_running_info(admin: &AdminClient, group: &str) -> Result<(), ClientError> {
    let broker = super::consumer::group_broker(admin, group).await?;
    let conn = admin.consumer_connection(&broker, group).await?;
    let mut infos: BTreeMap<String, ConsumerRunningInfo> = BTreeMap::new();
    for c in &conn.connection_set {
        if let Ok(info) = admin
            .consumer_running_info(&broker, group, &c.client_id, false)
            .await
        {
            infos.insert(c.client_id.clone(), info);
        }
    }
    let now = stellmq_client::admin::now_ms();
    if !infos.is_empty() && !same_subscription(&infos, now) {
        crate::outln!(
            "{PREFIX}reportConsumerRunningInfo: ConsumerGroup: {group}, Subscription different"
        );
    }
    for (client_id, info) in &infos {
        let warnings = process_queue_warnings(client_id, info, now);
        if !warnings.is_empty() {
            crate::outln!("{PREFIX}reportConsumerRunningInfo: ConsumerGroup: {group}, ClientId: {client_id}, {warnings}");
        }
    }
    Ok(())
}

/// One round: every consumer group, errors of one group not stopping the others.
async fn round(admin: &AdminClient) -> Result<(), ClientError> {
    crate::outln!("{PREFIX}=========================================beginRound");
    let topics = admin.topic_list().await?;
    for group in topics.iter().filter_map(|t| t.strip_prefix(RETRY)) {
        for result in [
            report_undone(admin, group).await,
            report_dlq(admin, group).await,
            report_running_info(admin, group).await,
        ] {
            if let Err(e) = result {
                eprintln!("{PREFIX}group {group}: {e}");
            }
        }
    }
    crate::outln!("{PREFIX}=========================================endRound");
    Ok(())
}

async fn rounds(admin: &AdminClient, a: &StartMonitoring) -> Result<(), ClientError> {
    use std::time::Duration;
    tokio::time::sleep(Duration::from_millis(a.initial_delay)).await;
    let mut ticks = tokio::time::interval(Duration::from_millis(a.round_interval.max(1)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut done = 0;
    while a.rounds == 0 || done < a.rounds {
        ticks.tick().await;
        if let Err(e) = round(admin).await {
            eprintln!("{PREFIX}round failed: {e}");
        }
        done += 1;
    }
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
async fn stopped() -> Result<(), ClientError> {
    let io = |e: std::io::Error| ClientError::Invalid(format!("cannot watch for signals: {e}"));
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(io)?;
    tokio::select! {
        _ = term.recv() => Ok(()),
        r = tokio::signal::ctrl_c() => r.map_err(io),
    }
}

pub async fn start_monitoring(admin: &AdminClient, a: StartMonitoring) -> Result<(), ClientError> {
    tokio::select! {
        r = rounds(admin, &a) => r,
        r = stopped() => {
            crate::outln!("{PREFIX}stopped");
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undone_counts_only_lagging_queues() {
        let w = |broker_offset, consumer_offset| OffsetWrapper {
            broker_offset,
            consumer_offset,
            ..Default::default()
        };
        let (a, b, c) = (w(10, 4), w(5, 5), w(3, 7));
        let u = sum_undone(&[&a, &b, &c]);
        assert_eq!((u.total, u.single_max), (6, 6));
    }
}
