//! Moving a consumer group's offsets: `resetOffsetByTime` and `skipAccumulatedMessage`.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use stellmq_client::route::readable_masters;
use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::ResponseCode;

#[derive(clap::Args, Debug)]
pub struct ResetOffsetByTime {
    #[arg(short = 'g', long = "group")]
    group: String,
    #[arg(short = 't', long = "topic")]
    topic: String,
    /// `now`, epoch milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS (UTC).
    #[arg(short = 's', long = "timestamp")]
    timestamp: String,
    #[arg(short = 'f', long = "force", default_value_t = true, action = clap::ArgAction::Set)]
    force: bool,
    /// Reset C++ client offsets: the offsets are written on the brokers, which StellMQ does
    /// for every client anyway.
    #[arg(short = 'c', long = "cplus")]
    cplus: bool,
}

fn parse_timestamp(text: &str) -> Result<i64, ClientError> {
    if text == "now" {
        return Ok(stellmq_client::admin::now_ms());
    }
    super::print_queue::parse_time(text).map_err(|_| {
        ClientError::Invalid(format!(
            "cannot parse timestamp '{text}': use now, epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS"
        ))
    })
}

pub async fn reset_offset_by_time(
    admin: &AdminClient,
    a: ResetOffsetByTime,
) -> Result<(), ClientError> {
    let timestamp = parse_timestamp(&a.timestamp)?;
    let _ = a.cplus;
    reset_offsets(admin, &a.group, &a.topic, timestamp, a.force).await
}

#[derive(clap::Args, Debug)]
pub struct SkipAccumulatedMessage {
    #[arg(short = 'g', long = "group")]
    group: String,
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'f', long = "force", default_value_t = true, action = clap::ArgAction::Set)]
    force: bool,
}

/// `skipAccumulatedMessage`: the group's offsets move to the end of every queue of the topic
/// (a reset to timestamp -1, which brokers read as "the max offset").
pub async fn skip_accumulated_message(
    admin: &AdminClient,
    a: SkipAccumulatedMessage,
) -> Result<(), ClientError> {
    reset_offsets(admin, &a.group, &a.topic, SKIP_ALL, a.force).await
}

/// The reset timestamp that means "to the max offset".
const SKIP_ALL: i64 = -1;

/// Resets `group`'s offsets of `topic` on every master to `timestamp`: through the brokers
/// when the group is online (they tell its consumers), else stored directly, as RocketMQ's
/// tool falls back to.
async fn reset_offsets(
    admin: &AdminClient,
    group: &str,
    topic: &str,
    timestamp: i64,
    force: bool,
) -> Result<(), ClientError> {
    let route = admin.topic_route(topic).await?;
    crate::outln!("{:<40}  {:<40}  {}", "#brokerName", "#queueId", "#offset");
    for (broker, addr, queues) in readable_masters(&route) {
        match admin
            .reset_offset_by_time(addr, group, topic, timestamp, force)
            .await
        {
            Ok(body) => {
                for (mq, offset) in &body.offset_table.0 {
                    crate::outln!("{:<40}  {:<40}  {offset}", mq.broker_name, mq.queue_id);
                }
            }
            // No consumer online: store the offsets directly, as RocketMQ's tool falls back to.
            Err(e) if e.remote_code() == Some(ResponseCode::CONSUMER_NOT_ONLINE.as_i32()) => {
                for queue_id in 0..queues {
                    let offset = if timestamp == SKIP_ALL {
                        admin.max_offset(addr, topic, queue_id).await?
                    } else {
                        admin
                            .search_offset(addr, topic, queue_id, timestamp)
                            .await?
                    };
                    admin
                        .update_consumer_offset(addr, group, topic, queue_id, offset)
                        .await?;
                    crate::outln!("{:<40}  {:<40}  {offset}", broker.broker_name, queue_id);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
