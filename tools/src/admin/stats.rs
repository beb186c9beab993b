//! `statsAll`: per topic and consumer group, accumulation, TPS in and out, and messages in
//! and out over 24 hours, from every master's VIEW_BROKER_STATS_DATA counters.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use stellmq_client::{AdminClient, ClientError};

#[derive(clap::Args, Debug)]
pub struct StatsAll {
    /// Only topics with traffic in the last 24 hours.
    #[arg(short = 'a', long = "activeTopic")]
    pub active: bool,
    /// Only this topic.
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,
}

pub async fn stats_all(admin: &AdminClient, a: StatsAll) -> Result<(), ClientError> {
    let topics = match a.topic {
        Some(topic) => vec![topic],
        None => admin.topic_list().await?,
    };
    crate::outln!(
        "{:<64}  {:<64} {:>12} {:>11} {:>11} {:>14} {:>14}",
        "#Topic",
        "#Consumer Group",
        "#Accumulation",
        "#InTPS",
        "#OutTPS",
        "#InMsg24Hour",
        "#OutMsg24Hour"
    );
    for topic in topics
        .iter()
        .filter(|t| !t.starts_with("%RETRY%") && !t.starts_with("%DLQ%"))
    {
        // A topic that vanished between the list and its route is skipped, as RocketMQ does.
        let _ = topic_rows(admin, topic, a.active).await;
    }
    Ok(())
}

async fn topic_rows(admin: &AdminClient, topic: &str, active: bool) -> Result<(), ClientError> {
    let masters = super::masters_of(admin, topic).await?;
    let (mut in_tps, mut in_day) = (0.0, 0i64);
    let mut groups = std::collections::BTreeSet::new();
    for broker in &masters {
        if let Ok(puts) = admin.broker_stats(broker, "TOPIC_PUT_NUMS", topic).await {
            in_tps += puts.stats_minute.tps;
            in_day += puts.stats_day.sum;
        }
        groups.extend(
            admin
                .topic_consumed_by(broker, topic)
                .await
                .unwrap_or_default(),
        );
    }
    if groups.is_empty() {
        if !active || in_day > 0 {
            crate::outln!(
                "{:<64}  {:<64} {:>12} {:>11.2} {:>11} {:>14} {:>14}",
                topic,
                "",
                0,
                in_tps,
                "",
                in_day,
                "NO_CONSUMER"
            );
        }
        return Ok(());
    }
    for group in groups {
        let (mut accumulation, mut out_tps, mut out_day) = (0i64, 0.0, 0i64);
        for broker in &masters {
            if let Ok(stats) = admin.consume_stats(broker, &group, Some(topic)).await {
                accumulation += stats
                    .offset_table
                    .0
                    .values()
                    .map(|o| (o.broker_offset - o.consumer_offset).max(0))
                    .sum::<i64>();
            }
            let key = format!("{topic}@{group}");
            if let Ok(gets) = admin.broker_stats(broker, "GROUP_GET_NUMS", &key).await {
                out_tps += gets.stats_minute.tps;
                out_day += gets.stats_day.sum;
            }
        }
        if !active || in_day > 0 || out_day > 0 {
            crate::outln!(
                "{:<64}  {:<64} {:>12} {:>11.2} {:>11.2} {:>14} {:>14}",
                topic,
                group,
                accumulation,
                in_tps,
                out_tps,
                in_day,
                out_day
            );
        }
    }
    Ok(())
}
