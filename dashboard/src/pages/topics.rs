//! Topics: every topic the name servers route, by kind, a page at a time (`page`, `size`),
//! with a filter and the form that creates one.

use axum::extract::{RawQuery, State};
use axum::response::Html;

use super::{query_fields, Paging};
use crate::error::PageResult;
use crate::html::{cell, link, Form, Page, Table};
use crate::server::AppState;

pub async fn list(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let filter = fields.get("q").unwrap_or("");
    let paging = Paging::from(&fields);
    let mut topics = console.admin.topic_list().await?;
    topics.sort();
    let matching: Vec<&String> = topics.iter().filter(|t| t.contains(filter)).collect();
    let mut table = Table::new("topics", &["Topic", "Kind"]);
    for topic in paging.slice(&matching) {
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
    page.text(&format!("{} of {} topic(s)", matching.len(), topics.len()));
    let nav = paging.nav("/topics", &[("q", filter)], matching.len());
    page.raw(&nav);
    page.raw(&table.finish());
    page.raw(&nav);
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
