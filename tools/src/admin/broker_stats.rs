//! `brokerConsumeStats`: every group's progress on a broker, rows below a diff threshold
//! left out (`-l`), order topics only when asked (`-o`).
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use stellmq_client::{AdminClient, ClientError};

use super::Target;

#[derive(clap::Args, Debug)]
pub struct BrokerConsumeStats {
    #[command(flatten)]
    target: Target,
    /// request timeout Millis.
    #[arg(short = 't', long = "timeoutMillis", default_value_t = 50_000)]
    timeout_millis: i64,
    /// threshold of print diff: queues whose diff is below it are not printed.
    #[arg(short = 'l', long = "level", default_value_t = 0)]
    level: i64,
    /// order topic (true|false).
    #[arg(short = 'o', long = "order", default_value_t = false, action = clap::ArgAction::Set)]
    order: bool,
}

fn row(cols: [&str; 8]) {
    let [topic, group, broker, qid, bo, co, diff, last] = cols;
    crate::outln!(
        "{topic:<32}  {group:<32}  {broker:<24}  {qid:<4}  {bo:<16}  {co:<16}  {diff:<12}  {last}"
    );
}

pub async fn broker_consume_stats(
    admin: &AdminClient,
    a: BrokerConsumeStats,
) -> Result<(), ClientError> {
    row([
        "#Topic",
        "#Group",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
        "#LastTime",
    ]);
    let mut total = 0;
    for addr in a.target.addrs(admin).await? {
        let list = admin
            .broker_consume_stats_with(&addr, a.order, a.timeout_millis)
            .await?;
        total += list.total_diff;
        for (group, stats) in list.consume_stats_list.iter().flatten() {
            for (mq, w) in stats.iter().flat_map(|s| s.offset_table.0.iter()) {
                let diff = w.broker_offset - w.consumer_offset;
                if diff < a.level {
                    continue;
                }
                row([
                    &mq.topic,
                    group,
                    &mq.broker_name,
                    &mq.queue_id.to_string(),
                    &w.broker_offset.to_string(),
                    &w.consumer_offset.to_string(),
                    &diff.to_string(),
                    &super::format_time(w.last_timestamp),
                ]);
            }
        }
    }
    crate::outln!("\nDiff Total: {total}");
    Ok(())
}
