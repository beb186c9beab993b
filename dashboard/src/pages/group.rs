//! One consumer group: progress and lag per queue, its connections and subscriptions, and
//! the forms that reset its offsets by time or skip what has accumulated.

use axum::extract::{RawQuery, State};
use axum::response::Html;
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::body::{MessageQueue, OffsetWrapper};

use super::query_fields;
use crate::error::PageResult;
use crate::html::{cell, format_time, link, Form, Page, Table};
use crate::server::AppState;

pub async fn page(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let group = fields.required("name")?;
    let admin = &console.admin;
    let mut page = Page::new(&format!("Consumer group {group}"));
    let masters = admin.master_addrs(None).await?;
    let progress = progress(admin, group, &masters, &mut page).await;
    let total: i64 = progress.iter().map(|(_, o)| lag(o)).sum();
    page.text(&format!("Total lag: {total} message(s)"));
    page.heading("Progress");
    page.raw(&progress_table(&progress));
    page.heading("Connections");
    connections(admin, group, &masters, &mut page).await;
    let topic = progress
        .iter()
        .map(|(mq, _)| mq.topic.as_str())
        .find(|t| !t.starts_with("%RETRY%"))
        .unwrap_or("");
    page.heading("Reset offsets by time");
    page.raw(
        &Form::post("/group/reset", "reset-offset")
            .hidden("group", group)
            .input("Topic", "topic", topic)
            .input("Time (UTC yyyy-MM-dd HH:mm:ss, or epoch ms)", "time", "")
            .submit("Reset"),
    );
    page.heading("Skip accumulated messages");
    page.raw(
        &Form::post("/group/skip", "skip-accumulated")
            .hidden("group", group)
            .input("Topic", "topic", topic)
            .submit("Skip to the end"),
    );
    Ok(Html(page.finish()))
}

fn lag(o: &OffsetWrapper) -> i64 {
    (o.broker_offset - o.consumer_offset).max(0)
}

async fn progress(
    admin: &AdminClient,
    group: &str,
    masters: &[(String, String)],
    page: &mut Page,
) -> Vec<(MessageQueue, OffsetWrapper)> {
    let mut all = Vec::new();
    for (name, addr) in masters {
        match admin.consume_stats(addr, group, None).await {
            Ok(stats) => all.extend(stats.offset_table.0),
            Err(e) => page.error(&format!("{name}: {e}")),
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

fn progress_table(progress: &[(MessageQueue, OffsetWrapper)]) -> String {
    let mut table = Table::new(
        "progress",
        &[
            "Topic",
            "Broker",
            "Queue",
            "Broker offset",
            "Consumer offset",
            "Lag",
            "Last consumed",
        ],
    );
    for (mq, o) in progress {
        table.row_html(&[
            link("/topic", &[("name", &mq.topic)], &mq.topic),
            cell(&mq.broker_name),
            cell(mq.queue_id),
            cell(o.broker_offset),
            cell(o.consumer_offset),
            cell(lag(o)),
            cell(format_time(o.last_timestamp)),
        ]);
    }
    table.finish()
}

async fn connections(
    admin: &AdminClient,
    group: &str,
    masters: &[(String, String)],
    page: &mut Page,
) {
    let mut table = Table::new(
        "connections",
        &["Client id", "Address", "Language", "Version"],
    );
    let mut subscriptions = Table::new("subscriptions", &["Topic", "Expression"]);
    let mut found = false;
    for (_, addr) in masters {
        let Ok(conn) = admin.consumer_connection(addr, group).await else {
            continue;
        };
        for c in &conn.connection_set {
            table.row(&[
                &c.client_id,
                &c.client_addr,
                &c.language,
                &c.version.to_string(),
            ]);
        }
        for (topic, sub) in &conn.subscription_table {
            subscriptions.row(&[topic, &sub.sub_string]);
        }
        found = true;
        break;
    }
    if !found {
        page.text("No consumer of this group is online.");
    }
    page.raw(&table.finish());
    page.heading("Subscriptions");
    page.raw(&subscriptions.finish());
}
