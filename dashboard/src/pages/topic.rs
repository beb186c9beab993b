//! One topic: its route, per-queue status (min and max offsets), the groups that consume it,
//! and the forms that update, delete it or send it a test message.

use axum::extract::{RawQuery, State};
use axum::response::Html;
use stellmq_client::route::readable_masters;
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::body::TopicRouteData;

use super::query_fields;
use crate::error::PageResult;
use crate::html::{cell, format_time, link, Form, Page, Table};
use crate::server::AppState;

pub async fn page(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let topic = fields.required("name")?;
    let route = console.admin.topic_route(topic).await?;
    let mut page = Page::new(&format!("Topic {topic}"));
    page.heading("Route");
    page.raw(&route_table(&route));
    page.heading("Status");
    status(&console.admin, topic, &route, &mut page).await;
    page.heading("Consumer groups");
    consumed_by(&console.admin, topic, &route, &mut page).await;
    page.heading("Send a test message");
    page.raw(
        &Form::post("/topic/send", "send-message")
            .hidden("topic", topic)
            .input("Tag", "tag", "")
            .input("Key", "key", "")
            .textarea("Body", "body", "")
            .submit("Send"),
    );
    page.heading("Update");
    let (read, write, perm) = queue_numbers(&route);
    page.raw(
        &Form::post("/topic/update", "update-topic")
            .hidden("topic", topic)
            .input("Cluster (blank: all)", "cluster", "")
            .input("Read queues", "readQueueNums", &read.to_string())
            .input("Write queues", "writeQueueNums", &write.to_string())
            .input("Perm", "perm", &perm.to_string())
            .submit("Update"),
    );
    page.heading("Delete");
    page.raw(
        &Form::post("/topic/delete", "delete-topic")
            .hidden("topic", topic)
            .submit("Delete this topic from every broker and name server"),
    );
    Ok(Html(page.finish()))
}

fn route_table(route: &TopicRouteData) -> String {
    let mut table = Table::new(
        "route",
        &[
            "Broker",
            "Cluster",
            "Addresses",
            "Read queues",
            "Write queues",
            "Perm",
        ],
    );
    for q in &route.queue_datas {
        let broker = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name);
        let addrs: Vec<String> = broker
            .map(|b| {
                b.broker_addrs
                    .0
                    .iter()
                    .map(|(id, a)| format!("{id}={a}"))
                    .collect()
            })
            .unwrap_or_default();
        table.row(&[
            &q.broker_name,
            broker.map_or("-", |b| b.cluster.as_str()),
            &addrs.join(" "),
            &q.read_queue_nums.to_string(),
            &q.write_queue_nums.to_string(),
            &perm_text(q.perm),
        ]);
    }
    table.finish()
}

/// RocketMQ's perm bits as `RW` letters and the number.
fn perm_text(perm: i32) -> String {
    let r = if perm & 4 != 0 { "R" } else { "-" };
    let w = if perm & 2 != 0 { "W" } else { "-" };
    format!("{r}{w} ({perm})")
}

/// The first broker's queue numbers and perm: the update form's defaults.
fn queue_numbers(route: &TopicRouteData) -> (i32, i32, i32) {
    route.queue_datas.first().map_or((8, 8, 6), |q| {
        (q.read_queue_nums, q.write_queue_nums, q.perm)
    })
}

async fn status(admin: &AdminClient, topic: &str, route: &TopicRouteData, page: &mut Page) {
    let mut table = Table::new(
        "status",
        &[
            "Broker",
            "Queue",
            "Min offset",
            "Max offset",
            "Messages",
            "Last updated",
        ],
    );
    for (broker, addr, _) in readable_masters(route) {
        match admin.topic_stats(addr, topic).await {
            Ok(stats) => {
                for (mq, o) in &stats.offset_table.0 {
                    table.row(&[
                        &mq.broker_name,
                        &mq.queue_id.to_string(),
                        &o.min_offset.to_string(),
                        &o.max_offset.to_string(),
                        &(o.max_offset - o.min_offset).to_string(),
                        &format_time(o.last_update_timestamp),
                    ]);
                }
            }
            Err(e) => page.error(&format!("{}: {e}", broker.broker_name)),
        }
    }
    page.raw(&table.finish());
}

async fn consumed_by(admin: &AdminClient, topic: &str, route: &TopicRouteData, page: &mut Page) {
    let mut groups = std::collections::BTreeSet::new();
    for (broker, addr, _) in readable_masters(route) {
        match admin.topic_consumed_by(addr, topic).await {
            Ok(list) => groups.extend(list),
            Err(e) => page.error(&format!("{}: {e}", broker.broker_name)),
        }
    }
    let mut table = Table::new("groups", &["Consumer group"]);
    for g in &groups {
        table.row_html(&[link("/group", &[("name", g)], g)]);
    }
    if groups.is_empty() {
        table.row_html(&[cell("no group has consumed this topic")]);
    }
    page.raw(&table.finish());
}
