//! The two ways `mqbench consumer` fetches messages, and the loop that reports and stops.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_client::admin::now_ms;
use stellmq_client::route::readable_masters;
use stellmq_client::{
    AdminClient, ClientError, ConsumeResult, ConsumerConfig, PushConsumer, ReceivedMessage,
};
use stellmq_remoting::protocol::body::ConsumeFromWhere;
use tokio::task::JoinSet;

use super::{ConsumeStats, ConsumerArgs, Engine};

/// How long the broker may hold a pull that finds nothing (long polling).
const SUSPEND_MS: i64 = 15_000;
/// How often the watcher checks the stop conditions.
const TICK: Duration = Duration::from_millis(5);

/// Runs the benchmark: the start line, `Consumer Started.`, a line every report interval and
/// the `[Complete]` line once `--duration` has passed or `-q` messages have arrived.
pub async fn run(a: ConsumerArgs) -> Result<(), ClientError> {
    a.validate().map_err(ClientError::Invalid)?;
    let group = a.group_name(now_ms());
    crate::outln!("{}", a.start_line(&group));
    let stats = Arc::new(ConsumeStats::default());
    let elapsed = match a.engine {
        Engine::Pull => run_pull(&a, &group, &stats).await?,
        Engine::Push => run_push(&a, &group, &stats).await?,
    };
    crate::outln!("{}", stats.complete_line(elapsed));
    Ok(())
}

/// The pull engine; returns the time from its start to the stop condition.
async fn run_pull(
    a: &ConsumerArgs,
    group: &str,
    stats: &Arc<ConsumeStats>,
) -> Result<Duration, ClientError> {
    let admin = Arc::new(AdminClient::connect(
        &crate::namesrv_addr(&a.namesrv),
        &a.tls.client_tls(),
        a.acl.credentials(),
    )?);
    let route = admin.topic_route(&a.topic).await?;
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for (_, addr, queues) in readable_masters(&route) {
        for queue_id in 0..queues {
            let target = PullTarget {
                admin: admin.clone(),
                stats: stats.clone(),
                addr: addr.to_owned(),
                topic: a.topic.clone(),
                group: group.to_owned(),
                queue_id,
                from: a.consume_from_where,
                timestamp: a.start_timestamp(now_ms()),
            };
            tasks.spawn(target.run());
        }
    }
    crate::outln!("Consumer Started.");
    watch(a, stats).await;
    let elapsed = started.elapsed();
    // Pulls held by the broker would keep tasks waiting up to SUSPEND_MS: drop them.
    tasks.shutdown().await;
    admin.shutdown().await;
    Ok(elapsed)
}

/// One queue's long-polling loop in the pull engine.
struct PullTarget {
    admin: Arc<AdminClient>,
    stats: Arc<ConsumeStats>,
    addr: String,
    topic: String,
    group: String,
    queue_id: i32,
    from: ConsumeFromWhere,
    timestamp: i64,
}

impl PullTarget {
    /// Where the queue is read from: its first offset, its last, or the first at a time.
    async fn start_offset(&self) -> Result<i64, ClientError> {
        let (admin, addr, topic, queue) = (&self.admin, &self.addr, &self.topic, self.queue_id);
        match self.from {
            ConsumeFromWhere::ConsumeFromFirstOffset | ConsumeFromWhere::ConsumeFromMinOffset => {
                admin.min_offset(addr, topic, queue).await
            }
            ConsumeFromWhere::ConsumeFromTimestamp => {
                admin
                    .search_offset(addr, topic, queue, self.timestamp)
                    .await
            }
            _ => admin.max_offset(addr, topic, queue).await,
        }
    }

    async fn run(self) {
        let mut offset = match self.start_offset().await {
            Ok(offset) => offset,
            Err(e) => {
                eprintln!("mqbench: queue {}: no start offset: {e}", self.queue_id);
                return;
            }
        };
        loop {
            let pulled = self
                .admin
                .pull(
                    &self.addr,
                    &self.group,
                    &self.topic,
                    self.queue_id,
                    offset,
                    SUSPEND_MS,
                )
                .await;
            match pulled {
                Ok((0, next, records)) => {
                    let stamps = records
                        .iter()
                        .map(|m| (m.head.born_timestamp, m.head.store_timestamp));
                    self.stats.record(now_ms(), stamps);
                    offset = next;
                }
                Ok((_, next, _)) => {
                    offset = next.max(offset);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}

/// The push engine (the client's PushConsumer, as RocketMQ's benchmark); returns the time
/// from its start to the stop condition.
async fn run_push(
    a: &ConsumerArgs,
    group: &str,
    stats: &Arc<ConsumeStats>,
) -> Result<Duration, ClientError> {
    let (expression_type, expression) = a
        .subscription()
        .map_err(|e| ClientError::Invalid(format!("cannot read the -e expression file: {e}")))?;
    let config = ConsumerConfig {
        namesrv_addr: crate::namesrv_addr(&a.namesrv),
        group: group.to_owned(),
        instance_name: now_ms().to_string(),
        consume_from_where: a.consume_from_where,
        consume_timestamp: a.start_timestamp(now_ms()),
        consume_thread_count: a.thread_count(),
        expression_type,
        tls: a.tls.client_tls(),
        credentials: a.acl.credentials(),
        enable_msg_trace: a.trace,
        ..Default::default()
    };
    if expression != "*" {
        crate::outln!("Expression: {expression}");
    }
    let started = Instant::now();
    let (listener_stats, fail_rate) = (stats.clone(), a.fail_rate);
    let consumer = PushConsumer::start_concurrently(
        config,
        &[(a.topic.as_str(), expression.as_str())],
        move |messages| listen(&listener_stats, fail_rate, messages),
    )
    .await?;
    crate::outln!("Consumer Started.");
    watch(a, stats).await;
    let elapsed = started.elapsed();
    consumer.shutdown().await;
    Ok(elapsed)
}

/// The push listener: count, then fail a `fail_rate` share of calls (RocketMQ's `-r`).
fn listen(stats: &ConsumeStats, fail_rate: f64, messages: &[ReceivedMessage]) -> ConsumeResult {
    let stamps = messages
        .iter()
        .map(|m| (m.record.head.born_timestamp, m.record.head.store_timestamp));
    stats.record(now_ms(), stamps);
    if fail_rate > 0.0 && rand::random::<f64>() < fail_rate {
        stats.fail();
        ConsumeResult::ReconsumeLater
    } else {
        ConsumeResult::Success
    }
}

/// Prints a report line every interval until `--duration` has passed or `-q` messages
/// have arrived.
async fn watch(a: &ConsumerArgs, stats: &ConsumeStats) {
    watch_until(a.quantity, a.duration, a.report_every_ms(), stats).await;
}

/// Prints a report line every `every_ms` until `duration_secs` have passed (0 = no limit) or
/// `quantity` messages have arrived (0 = no limit); also for `mqbench grpc-consumer`.
pub(crate) async fn watch_until(
    quantity: u64,
    duration_secs: u64,
    every_ms: u64,
    stats: &ConsumeStats,
) {
    let started = Instant::now();
    let deadline = (duration_secs > 0).then(|| started + Duration::from_secs(duration_secs));
    let every = Duration::from_millis(every_ms);
    let (mut next_report, mut prev) = (started + every, stats.snapshot());
    while !finished(quantity, deadline, stats.received()) {
        if Instant::now() >= next_report {
            let cur = stats.snapshot();
            crate::outln!("{}", stats.report_line(now_ms(), &prev, &cur));
            (prev, next_report) = (cur, next_report + every);
        }
        tokio::time::sleep(TICK).await;
    }
}

/// Whether the run is over: `quantity` messages received (0 = no limit) or past `deadline`.
fn finished(quantity: u64, deadline: Option<Instant>, received: u64) -> bool {
    (quantity > 0 && received >= quantity) || deadline.is_some_and(|d| Instant::now() >= d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_the_count_or_the_deadline() {
        let later = Some(Instant::now() + Duration::from_secs(60));
        assert!(!finished(0, None, 1_000));
        assert!(!finished(10, later, 9));
        assert!(finished(10, later, 10));
        assert!(finished(0, Some(Instant::now()), 0));
    }
}
