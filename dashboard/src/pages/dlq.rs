//! Dead letters: the `%DLQ%<group>` topics, their messages (with the topic each came from),
//! and resending one to its original topic.

use axum::extract::{RawQuery, State};
use axum::response::Html;
use bytes::Bytes;
use stellmq_client::route::readable_masters;
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::message::{property, MessageRecord};

use super::message_view::list_table;
use super::query_fields;
use crate::error::{ConsoleError, PageResult};
use crate::form::Fields;
use crate::html::{cell, link, Form, Page, Table};
use crate::lookup::{self, Found, MAX_BODY, MAX_RESULTS};
use crate::server::AppState;

const DLQ_PREFIX: &str = "%DLQ%";

pub async fn page(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let mut page = Page::new("Dead letter queues");
    page.raw(
        &Form::get("/dlq", "dlq-group")
            .input("Consumer group", "group", fields.get("group").unwrap_or(""))
            .submit("Show"),
    );
    match fields.get("group") {
        None => dlq_topics(&console.admin, &mut page).await?,
        Some(group) => dead_letters(&console.admin, group, &mut page).await?,
    }
    Ok(Html(page.finish()))
}

/// Every DLQ topic, with its group.
async fn dlq_topics(admin: &AdminClient, page: &mut Page) -> Result<(), ConsoleError> {
    let mut topics = admin.topic_list().await?;
    topics.retain(|t| t.starts_with(DLQ_PREFIX));
    topics.sort();
    let mut table = Table::new("dlq-topics", &["Consumer group", "DLQ topic"]);
    for topic in &topics {
        let group = topic.strip_prefix(DLQ_PREFIX).unwrap_or(topic);
        table.row_html(&[link("/dlq", &[("group", group)], group), cell(topic)]);
    }
    page.text(&format!("{} dead letter topic(s)", topics.len()));
    page.raw(&table.finish());
    Ok(())
}

/// The first messages of `%DLQ%<group>`, each with a resend button.
async fn dead_letters(
    admin: &AdminClient,
    group: &str,
    page: &mut Page,
) -> Result<(), ConsoleError> {
    let topic = format!("{DLQ_PREFIX}{group}");
    let Ok(route) = admin.topic_route(&topic).await else {
        page.text(&format!(
            "Group {group} has no dead letters ({topic} does not exist)."
        ));
        return Ok(());
    };
    let mut found = Vec::new();
    for (broker, addr, queues) in readable_masters(&route) {
        for queue_id in 0..queues {
            let min = admin.min_offset(addr, &topic, queue_id).await?;
            let (_, _, records) = admin
                .pull(addr, "TOOLS_CONSUMER", &topic, queue_id, min, 0)
                .await?;
            found.extend(records.into_iter().map(|record| Found {
                broker_name: broker.broker_name.clone(),
                addr: addr.to_owned(),
                record,
            }));
        }
    }
    found.truncate(MAX_RESULTS);
    page.text(&format!("{} dead letter(s) of {group}", found.len()));
    page.raw(&list_table(&found));
    let mut table = Table::new(
        "resend",
        &["Message id", "Original topic", "Reconsume times", ""],
    );
    for f in &found {
        let offset_id = f.record.offset_msg_id();
        let button = Form::post("/dlq/resend", "resend-one")
            .hidden("id", &offset_id)
            .hidden("group", group)
            .submit("Resend to the original topic");
        table.row_html(&[
            cell(f.msg_id()),
            cell(original_topic(&f.record).unwrap_or("-")),
            cell(f.record.head.reconsume_times),
            button,
        ]);
    }
    page.raw(&table.finish());
    Ok(())
}

/// The topic a retried or dead message was first sent to.
pub fn original_topic(m: &MessageRecord) -> Option<&str> {
    m.properties
        .get(property::RETRY_TOPIC)
        .or_else(|| m.properties.get(property::REAL_TOPIC))
        .filter(|t| !t.starts_with(DLQ_PREFIX) && !t.starts_with("%RETRY%"))
}

/// Sends a dead letter again to its original topic, with its body and properties (its
/// UNIQ_KEY included, so its story stays one).
pub async fn resend(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let id = fields.required("id")?;
    let admin = &console.admin;
    let found = lookup::by_id(admin, id, None)
        .await?
        .ok_or_else(|| ConsoleError::NotFound(format!("no message {id}")))?;
    let m = &found.record;
    let topic = original_topic(m)
        .ok_or_else(|| {
            ConsoleError::BadInput(format!("message {id} has no original topic (RETRY_TOPIC)"))
        })?
        .to_owned();
    let route = admin.topic_route(&topic).await?;
    let (addr, queues) = readable_masters(&route)
        .next()
        .map(|(_, addr, q)| (addr.to_owned(), q))
        .ok_or_else(|| ConsoleError::NotFound(format!("no broker serves {topic}")))?;
    let payload = m
        .uncompressed_body(MAX_BODY)
        .map_err(|e| ConsoleError::BadInput(format!("cannot read the body: {e}")))?;
    let mut props = m.properties.clone();
    for transient in [
        property::DELAY,
        property::REAL_TOPIC,
        property::REAL_QID,
        property::WAIT,
    ] {
        props.remove(transient);
    }
    if !props.contains(property::ORIGIN_MESSAGE_ID) {
        props.insert(property::ORIGIN_MESSAGE_ID, found.msg_id());
    }
    let queue_id = (m.head.queue_offset.rem_euclid(i64::from(queues.max(1)))) as i32;
    let sent = admin
        .send(
            &addr,
            &topic,
            queue_id,
            Bytes::from(payload.to_vec()),
            props.encode(),
        )
        .await?;
    tracing::info!(%topic, msg_id = %found.msg_id(), "CONSOLE_DLQ_RESENT");
    let mut page = Page::new("Dead letter resent");
    page.ok(&format!(
        "Resent to {topic}: queue {}, offset {}, offset message id {}",
        sent.queue_id, sent.queue_offset, sent.msg_id
    ));
    page.raw(&format!(
        "<p>{}</p>",
        link(
            "/explain",
            &[("id", &found.msg_id()), ("topic", &topic)],
            "Explain this message"
        )
    ));
    if let Some(group) = fields.get("group") {
        page.raw(&format!(
            "<p>{}</p>",
            link(
                "/dlq",
                &[("group", group)],
                &format!("Back to the dead letters of {group}")
            )
        ));
    }
    Ok(Html(page.finish()))
}
