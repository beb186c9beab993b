//! Messages: find by topic and key, by message id, or by topic and time range; one message
//! in full with its trace.

use axum::extract::{RawQuery, State};
use axum::response::Html;
use stellmq_remoting::protocol::message::now_ms;

use super::message_view::{detail, list_table, trace_table};
use super::query_fields;
use crate::error::{ConsoleError, PageResult};
use crate::form::Fields;
use crate::html::{link, Form, Page};
use crate::lookup;
use crate::server::AppState;

/// The default time range: the last hour.
const HOUR_MS: i64 = 3_600_000;

pub async fn page(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let mut page = Page::new("Messages");
    forms(&mut page, &fields);
    let admin = &console.admin;
    let topic = fields.get("topic");
    let found = match (fields.get("by"), topic) {
        (Some("key"), Some(topic)) => {
            let key = fields.required("key")?;
            lookup::by_key(admin, topic, key, 0, i64::MAX).await?
        }
        (Some("id"), _) => {
            let id = fields.required("id")?;
            lookup::by_id(admin, id, topic).await?.into_iter().collect()
        }
        (Some("time"), Some(topic)) => {
            let end = fields.time("end")?.unwrap_or_else(now_ms);
            let begin = fields.time("begin")?.unwrap_or(end - HOUR_MS);
            lookup::by_time(admin, topic, begin, end).await?
        }
        (Some(_), None) => {
            return Err(ConsoleError::BadInput("the field topic is required".into()))
        }
        _ => return Ok(Html(page.finish())),
    };
    page.heading("Results");
    page.text(&format!("{} message(s) found", found.len()));
    page.raw(&list_table(&found));
    Ok(Html(page.finish()))
}

fn forms(page: &mut Page, fields: &Fields) {
    let value = |name: &str| fields.get(name).unwrap_or("").to_owned();
    page.heading("By topic and key");
    page.raw(
        &Form::get("/messages", "by-key")
            .hidden("by", "key")
            .input("Topic", "topic", &value("topic"))
            .input("Key", "key", &value("key"))
            .submit("Search"),
    );
    page.heading("By message id");
    page.raw(
        &Form::get("/messages", "by-id")
            .hidden("by", "id")
            .input("Message id", "id", &value("id"))
            .input("Topic (for client ids)", "topic", &value("topic"))
            .submit("Search"),
    );
    page.heading("By topic and time (UTC)");
    page.raw(
        &Form::get("/messages", "by-time")
            .hidden("by", "time")
            .input("Topic", "topic", &value("topic"))
            .input("From (default: an hour ago)", "begin", &value("begin"))
            .input("To (default: now)", "end", &value("end"))
            .submit("Search"),
    );
}

/// One message in full, and its trace.
pub async fn one(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let id = fields.required("id")?;
    let found = lookup::by_id(&console.admin, id, fields.get("topic"))
        .await?
        .ok_or_else(|| ConsoleError::NotFound(format!("no message {id}")))?;
    let mut page = Page::new(&format!("Message {}", found.msg_id()));
    page.raw(&link(
        "/explain",
        &[("id", &found.record.offset_msg_id())],
        "Explain this message",
    ));
    detail(&mut page, &found);
    page.heading("Trace");
    let trace = lookup::trace_of(&console.admin, &console.trace_topic, &found.msg_id()).await;
    if trace.is_empty() {
        page.text("No trace recorded (the client did not enable message trace, or the trace topic has none).");
    } else {
        page.raw(&trace_table(&trace));
    }
    Ok(Html(page.finish()))
}
