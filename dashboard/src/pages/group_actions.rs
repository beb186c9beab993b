//! The group forms: reset offsets to a time, or skip to the end of every queue. Through the
//! brokers when the group is online (they tell its consumers), else stored directly, as
//! RocketMQ's tools do.

use axum::extract::State;
use axum::response::Html;
use stellmq_client::route::readable_masters;
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::ResponseCode;

use crate::error::{ConsoleError, PageResult};
use crate::form::Fields;
use crate::html::{link, Page, Table};
use crate::server::AppState;

/// The reset time that means "the max offset of each queue".
const SKIP_ALL: i64 = -1;

pub async fn reset(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let time = fields
        .time("time")?
        .ok_or_else(|| ConsoleError::BadInput("the field time is required".into()))?;
    reset_page(&console.admin, &fields, time).await
}

pub async fn skip(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    reset_page(&console.admin, &fields, SKIP_ALL).await
}

async fn reset_page(admin: &AdminClient, fields: &Fields, time: i64) -> PageResult {
    let group = fields.required("group")?;
    let topic = fields.required("topic")?;
    let moved = reset_offsets(admin, group, topic, time).await?;
    tracing::info!(%group, %topic, time, "CONSOLE_OFFSETS_RESET");
    let mut page = Page::new(&format!("Consumer group {group}"));
    page.ok(&format!("Offsets of {topic} moved"));
    let mut table = Table::new("offsets", &["Broker", "Queue", "New offset"]);
    for (broker, queue, offset) in &moved {
        table.row(&[broker, &queue.to_string(), &offset.to_string()]);
    }
    page.raw(&table.finish());
    page.raw(&link("/group", &[("name", group)], "Back to the group"));
    Ok(Html(page.finish()))
}

/// Moves `group`'s offsets of `topic` on every master; returns (broker, queue, offset).
async fn reset_offsets(
    admin: &AdminClient,
    group: &str,
    topic: &str,
    time: i64,
) -> Result<Vec<(String, i32, i64)>, ConsoleError> {
    let route = admin.topic_route(topic).await?;
    let mut moved = Vec::new();
    for (broker, addr, queues) in readable_masters(&route) {
        match admin
            .reset_offset_by_time(addr, group, topic, time, true)
            .await
        {
            Ok(body) => moved.extend(
                body.offset_table
                    .0
                    .iter()
                    .map(|(mq, o)| (mq.broker_name.clone(), mq.queue_id, *o)),
            ),
            Err(e) if e.remote_code() == Some(ResponseCode::CONSUMER_NOT_ONLINE.as_i32()) => {
                for queue_id in 0..queues {
                    let offset = if time == SKIP_ALL {
                        admin.max_offset(addr, topic, queue_id).await?
                    } else {
                        admin.search_offset(addr, topic, queue_id, time).await?
                    };
                    admin
                        .update_consumer_offset(addr, group, topic, queue_id, offset)
                        .await?;
                    moved.push((broker.broker_name.clone(), queue_id, offset));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(moved)
}
