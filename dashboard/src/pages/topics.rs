//! Topics: every topic the name servers route, by kind, with a filter and the form that
//! creates one.

use axum::extract::{RawQuery, State};
use axum::response::Html;

use super::query_fields;
use crate::error::PageResult;
use crate::html::{cell, link, Form, Page, Table};
use crate::server::AppState;

pub async fn list(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let filter = fields.get("q").unwrap_or("");
    let mut topics = console.admin.topic_list().await?;
    topics.sort();
    let mut table = Table::new("topics", &["Topic", "Kind"]);
    let mut shown = 0;
    for topic in topics.iter().filter(|t| t.contains(filter)) {
        shown += 1;
        table.row_html(&[link("/topic", &[("name", topic)], topic), cell(kind(topic))]);
    }
    let mut page = Page::new("Topics");
    page.raw(
        &Form::get("/topics", "filter")
            .input("Filter", "q", filter)
            .submit("Filter"),
    );
    page.heading("Create or update a topic");
    page.raw(&create_form());
    page.text(&format!("{shown} of {} topic(s)", topics.len()));
    page.raw(&table.finish());
    Ok(Html(page.finish()))
}

/// The create form: on every master of a cluster (of all clusters when blank).
fn create_form() -> String {
    Form::post("/topic/update", "create-topic")
        .input("Topic", "topic", "")
        .input("Cluster (blank: all)", "cluster", "")
        .input("Read queues", "readQueueNums", "8")
        .input("Write queues", "writeQueueNums", "8")
        .input("Perm", "perm", "6")
        .submit("Create / update")
}

/// What a topic is for, by RocketMQ's naming conventions.
pub fn kind(topic: &str) -> &'static str {
    if topic.starts_with("%RETRY%") {
        "retry"
    } else if topic.starts_with("%DLQ%") {
        "dead letter"
    } else if topic.starts_with("rmq_sys_")
        || topic.starts_with("RMQ_SYS_")
        || topic.starts_with("SCHEDULE_TOPIC")
        || topic == "TBW102"
        || topic == "SELF_TEST_TOPIC"
        || topic == "OFFSET_MOVED_EVENT"
        || topic == "BenchmarkTest"
        || topic.contains("_REPLY_TOPIC")
    {
        "system"
    } else {
        "normal"
    }
}
