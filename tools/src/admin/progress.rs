//! `consumerProgress`: a group's offsets per queue, with `-s true` the client each queue is
//! allocated to (from the members' running info, as RocketMQ 4.9.8).
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use std::collections::HashMap;

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::MessageQueue;

#[derive(clap::Args, Debug)]
pub struct ConsumerProgress {
    #[arg(short = 'g', long = "groupName")]
    group: String,
    #[arg(short = 't', long = "topicName")]
    topic: Option<String>,
    /// Show Client IP per Queue (true|false).
    #[arg(short = 's', long = "showClientIP", default_value_t = false, action = clap::ArgAction::Set)]
    show_client_ip: bool,
}

/// The masters that know the group's offsets: those hosting its retry topic, else all.
async fn group_brokers(admin: &AdminClient, group: &str) -> Result<Vec<String>, ClientError> {
    match super::masters_of(admin, &format!("%RETRY%{group}")).await {
        Ok(masters) => Ok(masters),
        Err(_) => Ok(admin
            .master_addrs(None)
            .await?
            .into_iter()
            .map(|(_, a)| a)
            .collect()),
    }
}

/// Queue -> IP of the member consuming it, from each member's running info; empty when
/// the group has no online member.
async fn allocation(admin: &AdminClient, group: &str) -> HashMap<MessageQueue, String> {
    let mut owners = HashMap::new();
    let Ok(broker) = super::consumer::group_broker(admin, group).await else {
        return owners;
    };
    let Ok(conn) = admin.consumer_connection(&broker, group).await else {
        return owners;
    };
    for c in &conn.connection_set {
        let Ok(info) = admin
            .consumer_running_info(&broker, group, &c.client_id, false)
            .await
        else {
            continue;
        };
        let ip = c.client_id.split('@').next().unwrap_or_default().to_owned();
        for mq in info.mq_table.0.keys() {
            owners.insert(mq.clone(), ip.clone());
        }
    }
    owners
}

fn header(show_ip: bool) {
    if show_ip {
        crate::outln!(
            "{:<32}  {:<32}  {:<4}  {:<20}  {:<20}  {:<20} {:<20}  {}",
            "#Topic",
            "#Broker Name",
            "#QID",
            "#Broker Offset",
            "#Consumer Offset",
            "#Client IP",
            "#Diff",
            "#LastTime"
        );
    } else {
        crate::outln!(
            "{:<32}  {:<32}  {:<4}  {:<20}  {:<20}  {:<20}  {}",
            "#Topic",
            "#Broker Name",
            "#QID",
            "#Broker Offset",
            "#Consumer Offset",
            "#Diff",
            "#LastTime"
        );
    }
}

pub async fn consumer_progress(
    admin: &AdminClient,
    a: ConsumerProgress,
) -> Result<(), ClientError> {
    let owners = if a.show_client_ip {
        allocation(admin, &a.group).await
    } else {
        HashMap::new()
    };
    header(a.show_client_ip);
    let (mut total_diff, mut tps) = (0, 0.0);
    for addr in group_brokers(admin, &a.group).await? {
        let stats = admin
            .consume_stats(&addr, &a.group, a.topic.as_deref())
            .await?;
        tps += stats.consume_tps;
        for (mq, w) in &stats.offset_table.0 {
            let diff = w.broker_offset - w.consumer_offset;
            total_diff += diff;
            let last = super::format_time(w.last_timestamp);
            let (topic, broker, qid) = (&mq.topic, &mq.broker_name, mq.queue_id);
            let (bo, co) = (w.broker_offset, w.consumer_offset);
            if a.show_client_ip {
                let ip = owners.get(mq).map_or("N/A", String::as_str);
                crate::outln!(
                    "{topic:<32}  {broker:<32}  {qid:<4}  {bo:<20}  {co:<20}  {ip:<20} {diff:<20}  {last}"
                );
            } else {
                crate::outln!(
                    "{topic:<32}  {broker:<32}  {qid:<4}  {bo:<20}  {co:<20}  {diff:<20}  {last}"
                );
            }
        }
    }
    crate::outln!();
    crate::outln!("Consume TPS: {tps:.2}");
    crate::outln!("Diff Total: {total_diff}");
    Ok(())
}
