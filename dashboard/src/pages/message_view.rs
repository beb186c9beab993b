//! How messages are shown: a result list, one message in full (where it is stored, its
//! properties and body) and its trace records.

use stellmq_client::trace::{TraceRecord, TraceType};
use stellmq_remoting::protocol::message::{priority_of, property, MessageKind, Properties};

use crate::html::{cell, esc, format_time, link, Page, Table};
use crate::lookup::{Found, MAX_BODY};

/// Body bytes shown at most.
const SHOWN_BODY: usize = 64 * 1024;

/// One row per message, with links to the message and its story.
pub fn list_table(found: &[Found]) -> String {
    let mut table = Table::new(
        "results",
        &[
            "Message id",
            "Topic",
            "Tags",
            "Keys",
            "Broker",
            "Queue",
            "Queue offset",
            "Stored at",
            "",
        ],
    );
    for f in found {
        let m = &f.record;
        let offset_id = m.offset_msg_id();
        table.row_html(&[
            link("/message", &[("id", &offset_id)], &f.msg_id()),
            cell(&m.topic),
            cell(m.properties.tags().unwrap_or("")),
            cell(m.properties.get(property::KEYS).unwrap_or("")),
            cell(&f.broker_name),
            cell(m.head.queue_id),
            cell(m.head.queue_offset),
            cell(format_time(m.head.store_timestamp)),
            link("/explain", &[("id", &offset_id)], "explain"),
        ]);
    }
    table.finish()
}

/// What RocketMQ 5's message model says of a message: its type, and its priority, lite
/// topic or delivery time (until which a timer message can be recalled).
fn kind_rows(props: &Properties) -> Vec<(&'static str, String)> {
    let mut rows = vec![("Message type", MessageKind::of(props).name().to_owned())];
    if let Some(p) = priority_of(props) {
        rows.push(("Priority", p.to_string()));
    }
    if let Some(lite) = props.get(property::LITE_TOPIC) {
        rows.push(("Lite topic", lite.to_owned()));
    }
    if let Some(at) = props
        .get(property::TIMER_DELIVER_MS)
        .and_then(|v| v.parse::<i64>().ok())
    {
        rows.push(("Delivery time (recallable until then)", format_time(at)));
    }
    rows
}

/// The message in full: where it is stored, its properties and its body.
pub fn detail(page: &mut Page, f: &Found) {
    let m = &f.record;
    let mut table = Table::new("message", &["Field", "Value"]);
    let rows: [(&str, String); 15] = [
        ("Message id", f.msg_id()),
        ("Offset message id", m.offset_msg_id()),
        ("Topic", m.topic.clone()),
        ("Tags", m.properties.tags().unwrap_or("").to_owned()),
        (
            "Keys",
            m.properties.get(property::KEYS).unwrap_or("").to_owned(),
        ),
        ("Broker", format!("{} ({})", f.broker_name, f.addr)),
        ("Queue", m.head.queue_id.to_string()),
        ("Queue offset", m.head.queue_offset.to_string()),
        ("CommitLog offset", m.head.physical_offset.to_string()),
        ("Stored at", format_time(m.head.store_timestamp)),
        ("Store host", m.head.store_host.to_string()),
        ("Born at", format_time(m.head.born_timestamp)),
        ("Born host", m.head.born_host.to_string()),
        ("Reconsume times", m.head.reconsume_times.to_string()),
        ("Body size", m.body.len().to_string()),
    ];
    for (name, value) in &rows {
        table.row(&[name, value]);
    }
    for (name, value) in kind_rows(&m.properties) {
        table.row(&[name, &value]);
    }
    page.raw(&table.finish());
    page.heading("Body");
    page.raw(&body_html(f));
    page.heading("Properties");
    let mut props = Table::new("properties", &["Name", "Value"]);
    for (k, v) in m.properties.iter() {
        props.row(&[k, v]);
    }
    page.raw(&props.finish());
}

fn body_html(f: &Found) -> String {
    let body = match f.record.uncompressed_body(MAX_BODY) {
        Ok(b) => b,
        Err(e) => {
            return format!(
                "<p class=\"error\">cannot read the body: {}</p>",
                esc(&e.to_string())
            )
        }
    };
    let shown = body.get(..SHOWN_BODY).unwrap_or(&body);
    let mut html = format!(
        "<pre id=\"body\">{}</pre>",
        esc(&String::from_utf8_lossy(shown))
    );
    if body.len() > SHOWN_BODY {
        html.push_str(&format!(
            "<p>(first {SHOWN_BODY} of {} bytes)</p>",
            body.len()
        ));
    }
    html
}

/// The trace records, oldest first.
pub fn trace_table(records: &[(TraceRecord, String)]) -> String {
    let mut table = Table::new(
        "trace",
        &[
            "Type",
            "Group",
            "Client host",
            "Time",
            "Cost",
            "Status",
            "Retry times",
        ],
    );
    for (r, host) in records {
        table.row(&[
            trace_kind(r.kind),
            &r.group,
            host,
            &format_time(r.timestamp),
            &format!("{} ms", r.cost_ms),
            if r.success { "success" } else { "failed" },
            &r.retry_times.to_string(),
        ]);
    }
    table.finish()
}

fn trace_kind(kind: TraceType) -> &'static str {
    kind.name()
}
