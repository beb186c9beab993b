//! "Explain this message": from a message id or a key, the whole story on one page: where
//! it is stored, which groups consumed it and when, its retries, its dead letter, its trace.

use std::collections::BTreeSet;

use axum::extract::{RawQuery, State};
use axum::response::Html;
use stellmq_client::trace::{TraceRecord, TraceType};
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::body::{MessageQueue, OffsetWrapper};

use super::message_view::{detail, list_table, trace_table};
use super::query_fields;
use crate::error::{ConsoleError, PageResult};
use crate::form::Fields;
use crate::html::{cell, format_time, link, Form, Page, Table};
use crate::lookup::{self, Found};
use crate::server::AppState;

/// Groups looked at, at most.
const MAX_GROUPS: usize = 64;

pub async fn page(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let mut page = Page::new("Explain a message");
    page.raw(&form(&fields));
    let Some(found) = find(&console.admin, &fields, &mut page).await? else {
        return Ok(Html(page.finish()));
    };
    let trace = lookup::trace_of(&console.admin, &console.trace_topic, &found.msg_id()).await;
    let story = Story::gather(&console.admin, &found, &trace).await?;
    page.raw(&format!(
        "<p id=\"summary\">{}</p>",
        crate::html::esc(&story.summary(&found, &trace))
    ));
    page.heading("Stored");
    detail(&mut page, &found);
    page.heading("Consumer groups");
    page.raw(&story.consumption_table(&trace));
    page.heading("Retries");
    page.raw(&list_table(&story.retries));
    page.heading("Dead letters");
    page.raw(&list_table(&story.dead));
    page.heading("Trace");
    page.raw(&trace_table(&trace));
    Ok(Html(page.finish()))
}

fn form(fields: &Fields) -> String {
    let value = |name: &str| fields.get(name).unwrap_or("").to_owned();
    Form::get("/explain", "explain")
        .input("Message id", "id", &value("id"))
        .input("or key", "key", &value("key"))
        .input("Topic (for client ids and keys)", "topic", &value("topic"))
        .submit("Explain")
}

/// The message the request names; with a key matching several, their list is shown instead.
async fn find(
    admin: &AdminClient,
    fields: &Fields,
    page: &mut Page,
) -> Result<Option<Found>, ConsoleError> {
    if let Some(id) = fields.get("id") {
        let found = lookup::by_id(admin, id, fields.get("topic")).await?;
        return found
            .map(Some)
            .ok_or_else(|| ConsoleError::NotFound(format!("no message {id}")));
    }
    let Some(key) = fields.get("key") else {
        page.text("Give a message id (with its topic for a client id), or a topic and a key.");
        return Ok(None);
    };
    let topic = fields.required("topic")?;
    let mut found = lookup::by_key(admin, topic, key, 0, i64::MAX).await?;
    match found.len() {
        0 => Err(ConsoleError::NotFound(format!(
            "no message of {topic} with key {key}"
        ))),
        1 => Ok(found.pop()),
        n => {
            page.text(&format!("{n} messages carry this key: pick one."));
            page.raw(&list_table(&found));
            Ok(None)
        }
    }
}

/// One group's progress on the message's queue.
struct GroupProgress {
    group: String,
    offsets: Option<OffsetWrapper>,
}

/// What happened to the message after it was stored.
struct Story {
    groups: Vec<GroupProgress>,
    retries: Vec<Found>,
    dead: Vec<Found>,
    queue_offset: i64,
}

impl Story {
    async fn gather(
        admin: &AdminClient,
        found: &Found,
        trace: &[(TraceRecord, String)],
    ) -> Result<Self, ConsoleError> {
        let m = &found.record;
        let master = master_of(admin, &m.topic, &found.broker_name)
            .await?
            .unwrap_or_else(|| found.addr.clone());
        let names = group_names(admin, &master, &m.topic, trace).await;
        let mq = MessageQueue {
            broker_name: found.broker_name.clone(),
            queue_id: m.head.queue_id,
            topic: m.topic.clone(),
        };
        let mut groups = Vec::new();
        let mut retries = Vec::new();
        let mut dead = Vec::new();
        for group in names {
            let offsets = admin
                .consume_stats(&master, &group, Some(&m.topic))
                .await
                .ok()
                .and_then(|s| s.offset_table.0.get(&mq).copied());
            retries.extend(lookup::copies_of(admin, &format!("%RETRY%{group}"), m).await?);
            dead.extend(lookup::copies_of(admin, &format!("%DLQ%{group}"), m).await?);
            groups.push(GroupProgress { group, offsets });
        }
        Ok(Self {
            groups,
            retries,
            dead,
            queue_offset: m.head.queue_offset,
        })
    }

    fn consumed(&self, g: &GroupProgress) -> bool {
        g.offsets
            .is_some_and(|o| o.consumer_offset > self.queue_offset)
    }

    fn summary(&self, found: &Found, trace: &[(TraceRecord, String)]) -> String {
        let m = &found.record;
        let consumed = self.groups.iter().filter(|g| self.consumed(g)).count();
        format!(
            "Message {} of topic {} is stored on {} queue {} at offset {} (CommitLog offset {}) since {}. \
             Consumed by {consumed} of {} group(s); {} retry copy(ies); {} dead letter(s); {} trace record(s).",
            found.msg_id(),
            m.topic,
            found.broker_name,
            m.head.queue_id,
            m.head.queue_offset,
            m.head.physical_offset,
            format_time(m.head.store_timestamp),
            self.groups.len(),
            self.retries.len(),
            self.dead.len(),
            trace.len()
        )
    }

    fn consumption_table(&self, trace: &[(TraceRecord, String)]) -> String {
        let mut table = Table::new(
            "consumption",
            &[
                "Group",
                "Status",
                "Consumer offset",
                "Consumed at (trace)",
                "Retries",
                "Dead letters",
            ],
        );
        for g in &self.groups {
            let status = match g.offsets {
                None => "no offset for this queue".to_owned(),
                Some(_) if self.consumed(g) => "consumed".to_owned(),
                Some(o) => format!(
                    "not yet: {} message(s) before it",
                    self.queue_offset - o.consumer_offset
                ),
            };
            let retry_topic = format!("%RETRY%{}", g.group);
            let dlq_topic = format!("%DLQ%{}", g.group);
            table.row_html(&[
                link("/group", &[("name", &g.group)], &g.group),
                cell(status),
                cell(
                    g.offsets
                        .map_or("-".into(), |o| o.consumer_offset.to_string()),
                ),
                cell(consumed_at(trace, &g.group)),
                cell(
                    self.retries
                        .iter()
                        .filter(|f| f.record.topic == retry_topic)
                        .count(),
                ),
                cell(
                    self.dead
                        .iter()
                        .filter(|f| f.record.topic == dlq_topic)
                        .count(),
                ),
            ]);
        }
        table.finish()
    }
}

/// When the group's consumers finished with the message, from its SubAfter trace records.
fn consumed_at(trace: &[(TraceRecord, String)], group: &str) -> String {
    let times: Vec<String> = trace
        .iter()
        .filter(|(r, _)| r.kind == TraceType::SubAfter && r.group == group)
        .map(|(r, _)| {
            format!(
                "{} ({})",
                format_time(r.timestamp),
                if r.success { "success" } else { "failed" }
            )
        })
        .collect();
    if times.is_empty() {
        "-".into()
    } else {
        times.join(", ")
    }
}

/// The master address of `broker_name` in `topic`'s route.
async fn master_of(
    admin: &AdminClient,
    topic: &str,
    broker_name: &str,
) -> Result<Option<String>, ConsoleError> {
    let route = admin.topic_route(topic).await?;
    Ok(route
        .broker_datas
        .iter()
        .find(|b| b.broker_name == broker_name)
        .and_then(|b| b.master_addr().map(str::to_owned)))
}

/// The groups that may have seen the message: those with offsets of its topic, those in its
/// trace, and those with retry or dead letter topics.
async fn group_names(
    admin: &AdminClient,
    master: &str,
    topic: &str,
    trace: &[(TraceRecord, String)],
) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = admin
        .topic_consumed_by(master, topic)
        .await
        .unwrap_or_default()
        .into_iter()
        .collect();
    names.extend(
        trace
            .iter()
            .filter(|(r, _)| r.kind != TraceType::Pub)
            .map(|(r, _)| r.group.clone()),
    );
    if let Ok(topics) = admin.topic_list().await {
        names.extend(
            topics
                .iter()
                .filter_map(|t| {
                    t.strip_prefix("%RETRY%")
                        .or_else(|| t.strip_prefix("%DLQ%"))
                })
                .map(str::to_owned),
        );
    }
    names.retain(|g| !g.is_empty());
    names.into_iter().take(MAX_GROUPS).collect()
}
