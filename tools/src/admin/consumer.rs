//! Commands about a consumer group's running members and its config: `consumerStatus`
//! (each member's running info, GET_CONSUMER_RUNNING_INFO through a broker),
//! `getConsumerStatus` (the offsets each member holds, INVOKE_BROKER_TO_GET_CONSUMER_STATUS)
//! and `getConsumerConfig` (the group's subscription group config on every broker).
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use std::collections::BTreeMap;
use std::path::PathBuf;

use stellmq_client::admin::now_ms;
use stellmq_client::{AdminClient, ClientError};

use super::running_info::{format_running_info, process_queue_warnings, same_subscription};

/// The master of the first broker hosting `group`'s retry topic: a broker its members are
/// connected to (as RocketMQ's tools find one).
pub(super) async fn group_broker(admin: &AdminClient, group: &str) -> Result<String, ClientError> {
    let route = admin.topic_route(&format!("%RETRY%{group}")).await?;
    route
        .broker_datas
        .iter()
        .find_map(|b| b.master_addr().map(str::to_owned))
        .ok_or_else(|| ClientError::Invalid(format!("no broker hosts consumer group {group}")))
}

#[derive(clap::Args, Debug)]
pub struct ConsumerStatus {
    #[arg(short = 'g', long = "consumerGroup")]
    group: String,
    /// One member only: print its running info.
    #[arg(short = 'i', long = "clientId")]
    client_id: Option<String>,
    /// The broker to ask (default: one hosting the group).
    #[arg(short = 'b', long = "brokerAddr")]
    broker: Option<String>,
    /// Ask for the consumer's stack dump too.
    #[arg(short = 's', long = "jstack")]
    jstack: bool,
}

/// `consumerStatus`: with `-i` one member's running info; without, every member's, each
/// written to `<now>/<clientId>` in the working directory, then RocketMQ's analysis.
pub async fn consumer_status(admin: &AdminClient, a: ConsumerStatus) -> Result<(), ClientError> {
    let broker = match &a.broker {
        Some(b) => b.clone(),
        None => group_broker(admin, &a.group).await?,
    };
    if let Some(client_id) = &a.client_id {
        let info = admin
            .consumer_running_info(&broker, &a.group, client_id, a.jstack)
            .await?;
        crate::outln!("{}", format_running_info(&info));
        return Ok(());
    }
    let members = admin.consumer_connection(&broker, &a.group).await?;
    let now = now_ms();
    crate::outln!(
        "{:<10} {:<40} {:<20} {}",
        "#Index",
        "#ClientId",
        "#Version",
        "#ConsumerRunningInfoFile"
    );
    let mut infos = BTreeMap::new();
    for conn in &members.connection_set {
        let info = match admin
            .consumer_running_info(&broker, &a.group, &conn.client_id, a.jstack)
            .await
        {
            Ok(info) => info,
            Err(e) => {
                eprintln!("{}: {e}", conn.client_id);
                continue;
            }
        };
        let file = PathBuf::from(now.to_string()).join(&conn.client_id);
        write_file(&file, &format_running_info(&info))?;
        crate::outln!(
            "{:<10} {:<40} {:<20} {}",
            infos.len() + 1,
            conn.client_id,
            conn.version,
            file.display()
        );
        infos.insert(conn.client_id.clone(), info);
    }
    if infos.is_empty() {
        return Ok(());
    }
    if !same_subscription(&infos, now) {
        crate::outln!("\n\nWARN: Different subscription in the same group of consumer!!!");
        return Ok(());
    }
    crate::outln!("\n\nSame subscription in the same group of consumer");
    crate::outln!("\n\nRebalance OK");
    for (client_id, info) in &infos {
        let warnings = process_queue_warnings(client_id, info, now);
        if !warnings.is_empty() {
            crate::outln!("{}", warnings.trim_end());
        }
    }
    Ok(())
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), ClientError> {
    let failed =
        |e: std::io::Error| ClientError::Invalid(format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    std::fs::write(path, text).map_err(failed)
}

#[derive(clap::Args, Debug)]
pub struct GetConsumerStatus {
    #[arg(short = 'g', long = "group")]
    group: String,
    #[arg(short = 't', long = "topic")]
    topic: String,
    /// One member only.
    #[arg(short = 'i', long = "originClientId")]
    client_id: Option<String>,
}

/// `getConsumerStatus`: the offsets of the topic each member holds, from every master of the
/// topic.
pub async fn get_consumer_status(
    admin: &AdminClient,
    a: GetConsumerStatus,
) -> Result<(), ClientError> {
    let mut table: BTreeMap<String, BTreeMap<_, i64>> = BTreeMap::new();
    for broker in super::masters_of(admin, &a.topic).await? {
        let status = admin
            .consumer_status(&broker, &a.topic, &a.group, a.client_id.as_deref())
            .await?;
        for (client, offsets) in status.consumer_table {
            table.entry(client).or_default().extend(offsets.0);
        }
    }
    crate::outln!(
        "get consumer status from client. group={}, topic={}, originClientId={}",
        a.group,
        a.topic,
        a.client_id.as_deref().unwrap_or("")
    );
    crate::outln!(
        "{:<50}  {:<15}  {:<15}  {:<20}",
        "#clientId",
        "#brokerName",
        "#queueId",
        "#offset"
    );
    for (client, offsets) in &table {
        for (mq, offset) in offsets {
            crate::outln!(
                "{:<50}  {:<15}  {:<15}  {:<20}",
                client,
                mq.broker_name,
                mq.queue_id,
                offset
            );
        }
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct GetConsumerConfig {
    #[arg(short = 'g', long = "groupName")]
    group: String,
}

/// `getConsumerConfig`: the group's config on each broker that has it, field by field.
pub async fn get_consumer_config(
    admin: &AdminClient,
    a: GetConsumerConfig,
) -> Result<(), ClientError> {
    let info = admin.cluster_info().await?;
    for (name, broker) in &info.broker_addr_table {
        let Some(addr) = broker
            .master_addr()
            .or_else(|| broker.broker_addrs.0.values().next().map(String::as_str))
        else {
            continue;
        };
        let Some(config) = admin.subscription_group_config(addr, &a.group).await? else {
            continue;
        };
        let cluster = info
            .cluster_addr_table
            .iter()
            .find(|(_, names)| names.contains(name))
            .map_or("", |(c, _)| c.as_str());
        crate::outln!("============================={cluster}:{name}=============================");
        let fields = [
            ("groupName", config.group_name.clone()),
            ("consumeEnable", config.consume_enable.to_string()),
            (
                "consumeFromMinEnable",
                config.consume_from_min_enable.to_string(),
            ),
            (
                "consumeBroadcastEnable",
                config.consume_broadcast_enable.to_string(),
            ),
            ("retryQueueNums", config.retry_queue_nums.to_string()),
            ("retryMaxTimes", config.retry_max_times.to_string()),
            ("brokerId", config.broker_id.to_string()),
            (
                "whichBrokerWhenConsumeSlowly",
                config.which_broker_when_consume_slowly.to_string(),
            ),
            (
                "notifyConsumerIdsChangedEnable",
                config.notify_consumer_ids_changed_enable.to_string(),
            ),
            (
                "consumeMessageOrderly",
                config.consume_message_orderly.to_string(),
            ),
        ];
        for (field, value) in fields {
            crate::outln!("{field:<40}=  {value}");
        }
    }
    Ok(())
}
