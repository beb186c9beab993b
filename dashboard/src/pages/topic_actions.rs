//! The topic forms: create or update on the masters of a cluster, delete everywhere, and
//! send one test message.

use axum::extract::State;
use axum::response::Html;
use bytes::Bytes;
use stellmq_remoting::protocol::body::TopicConfig;
use stellmq_remoting::protocol::message::{now_ms, property, Properties};

use crate::error::{ConsoleError, PageResult};
use crate::form::Fields;
use crate::html::{link, Page, Table};
use crate::server::AppState;

/// Queue numbers a form may ask for.
const QUEUE_RANGE: std::ops::RangeInclusive<i64> = 1..=1024;

pub async fn update(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let config = topic_config(&fields)?;
    let masters = console.admin.master_addrs(fields.get("cluster")).await?;
    if masters.is_empty() {
        return Err(ConsoleError::NotFound(
            "no master broker to create the topic on".into(),
        ));
    }
    let mut page = Page::new(&format!("Topic {}", config.topic_name));
    for (name, addr) in &masters {
        console.admin.create_topic(addr, &config).await?;
        tracing::info!(topic = %config.topic_name, broker = %name, "CONSOLE_TOPIC_UPDATED");
        page.ok(&format!(
            "Topic {} created or updated on {name} ({addr}): {} read / {} write queues, perm {}",
            config.topic_name, config.read_queue_nums, config.write_queue_nums, config.perm
        ));
    }
    page.raw(&link(
        "/topic",
        &[("name", &config.topic_name)],
        "Open the topic",
    ));
    Ok(Html(page.finish()))
}

fn topic_config(fields: &Fields) -> Result<TopicConfig, ConsoleError> {
    let topic = fields.required("topic")?;
    if topic.len() > 255 {
        return Err(ConsoleError::BadInput(
            "a topic name has at most 255 characters".into(),
        ));
    }
    let queues = |name: &str| -> Result<i32, ConsoleError> {
        let n = fields.int(name, 8)?;
        if !QUEUE_RANGE.contains(&n) {
            return Err(ConsoleError::BadInput(format!("{name} must be 1 to 1024")));
        }
        Ok(n as i32)
    };
    let perm = fields.int("perm", 6)?;
    if !(0..=7).contains(&perm) {
        return Err(ConsoleError::BadInput(
            "perm must be 0 to 7 (2 write, 4 read)".into(),
        ));
    }
    Ok(TopicConfig::with_queues(
        topic,
        queues("readQueueNums")?,
        queues("writeQueueNums")?,
        perm as i32,
    ))
}

pub async fn delete(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let topic = fields.required("topic")?;
    let masters = console.admin.master_addrs(None).await?;
    let mut page = Page::new(&format!("Topic {topic}"));
    for (name, addr) in &masters {
        console.admin.delete_topic_in_broker(addr, topic).await?;
        page.ok(&format!("Deleted from {name} ({addr})"));
    }
    console.admin.delete_topic_in_namesrv(topic, None).await?;
    tracing::info!(%topic, "CONSOLE_TOPIC_DELETED");
    page.ok("Deleted from the name servers");
    page.raw(&link("/topics", &[], "Back to the topics"));
    Ok(Html(page.finish()))
}

pub async fn send(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let topic = fields.required("topic")?;
    let route = console.admin.topic_route(topic).await?;
    let (addr, queues) = route
        .queue_datas
        .iter()
        .filter(|q| q.perm & 2 != 0 && q.write_queue_nums > 0)
        .find_map(|q| {
            let broker = route
                .broker_datas
                .iter()
                .find(|b| b.broker_name == q.broker_name)?;
            Some((broker.master_addr()?.to_owned(), q.write_queue_nums))
        })
        .ok_or_else(|| ConsoleError::NotFound(format!("no writable queue of {topic}")))?;
    let queue_id = (now_ms().rem_euclid(i64::from(queues))) as i32;
    let uniq = console.ids.next_id();
    let mut props = Properties::default();
    props.insert(property::UNIQ_KEY, uniq.as_str());
    if let Some(key) = fields.get("key") {
        props.insert(property::KEYS, key);
    }
    if let Some(tag) = fields.get("tag") {
        props.insert(property::TAGS, tag);
    }
    let payload = Bytes::copy_from_slice(fields.raw("body").as_bytes());
    let sent = console
        .admin
        .send(&addr, topic, queue_id, payload, props.encode())
        .await?;
    tracing::info!(%topic, msg_id = %uniq, "CONSOLE_MESSAGE_SENT");
    let mut page = Page::new("Message sent");
    page.ok("SEND_OK");
    let mut table = Table::new(
        "sent",
        &[
            "Message id",
            "Offset message id",
            "Broker",
            "Queue",
            "Queue offset",
        ],
    );
    table.row(&[
        &uniq,
        &sent.msg_id,
        &addr,
        &sent.queue_id.to_string(),
        &sent.queue_offset.to_string(),
    ]);
    page.raw(&table.finish());
    page.raw(&link(
        "/explain",
        &[("id", &uniq), ("topic", topic)],
        "Explain this message",
    ));
    Ok(Html(page.finish()))
}
