//! Message commands: queries, print, send and consume.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use bytes::Bytes;
use stellmq_client::{AdminClient, ClientError, Message, MessageQueue};

use super::masters_of;
use stellmq_remoting::protocol::headers::QueryMessageRequestHeader;
use stellmq_remoting::protocol::message::{id, now_ms, property, MessageRecord, Properties};

#[derive(clap::Args, Debug)]
pub struct QueryByKey {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'k', long = "msgKey")]
    key: String,
    #[arg(short = 'b', long = "beginTimestamp", default_value_t = 0)]
    begin: i64,
    #[arg(short = 'e', long = "endTimestamp", default_value_t = i64::MAX)]
    end: i64,
    #[arg(short = 'm', long = "maxNum", default_value_t = 64)]
    max: i32,
}

fn key_query(
    topic: &str,
    key: &str,
    max: i32,
    begin: i64,
    end: i64,
    unique: bool,
) -> QueryMessageRequestHeader {
    QueryMessageRequestHeader {
        topic: topic.to_owned(),
        key: key.to_owned(),
        max_num: max,
        begin_timestamp: begin,
        end_timestamp: end,
        unique_key_query: unique.then_some(true),
    }
}

pub async fn query_by_key(admin: &AdminClient, a: QueryByKey) -> Result<(), ClientError> {
    crate::outln!("{:<50} {:>4} {:>40}", "#Message ID", "#QID", "#Offset");
    for addr in masters_of(admin, &a.topic).await? {
        let found = admin
            .query_message(
                &addr,
                &key_query(&a.topic, &a.key, a.max, a.begin, a.end, false),
            )
            .await?;
        // The index can collide: keep messages whose KEYS really hold the key.
        for m in found
            .iter()
            .filter(|m| m.properties.keys().any(|k| k == a.key))
        {
            crate::outln!(
                "{:<50} {:>4} {:>40}",
                m.msg_id(),
                m.head.queue_id,
                m.head.queue_offset
            );
        }
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct QueryById {
    /// Message id(s), comma separated: offsetMsgIds, or client ids (UNIQ_KEY) with -t.
    #[arg(short = 'i', long = "msgId")]
    ids: String,
    /// Topic, to look client-generated ids (UNIQ_KEY) up by unique key.
    #[arg(short = 't', long = "topic")]
    topic: Option<String>,
    /// With -d: the consumer group whose client consumes the messages directly.
    #[arg(short = 'g', long = "consumerGroup", requires = "client_id")]
    pub(super) group: Option<String>,
    /// With -g: the client id of the consumer to hand the messages to.
    #[arg(short = 'd', long = "clientId", requires = "group")]
    pub(super) client_id: Option<String>,
    /// `true`: send the messages again, to their topics.
    #[arg(short = 's', long = "sendMessage")]
    pub(super) resend: Option<bool>,
    /// Unit name of the resending producer (accepted; StellMQ has no units).
    #[arg(short = 'u', long = "unitName")]
    pub(super) unit_name: Option<String>,
}

impl QueryById {
    /// The message ids given, trimmed, blanks dropped.
    pub(super) fn id_list(&self) -> impl Iterator<Item = &str> {
        self.ids.split(',').map(str::trim).filter(|s| !s.is_empty())
    }
}

pub fn print_message(m: &MessageRecord) {
    let p = &m.properties;
    crate::outln!("{:<20} {}", "OffsetID:", m.offset_msg_id());
    crate::outln!("{:<20} {}", "Topic:", m.topic);
    crate::outln!("{:<20} [{}]", "Tags:", p.tags().unwrap_or(""));
    crate::outln!("{:<20} [{}]", "Keys:", p.get(property::KEYS).unwrap_or(""));
    crate::outln!("{:<20} {}", "Queue ID:", m.head.queue_id);
    crate::outln!("{:<20} {}", "Queue Offset:", m.head.queue_offset);
    crate::outln!("{:<20} {}", "CommitLog Offset:", m.head.physical_offset);
    crate::outln!("{:<20} {}", "Reconsume Times:", m.head.reconsume_times);
    crate::outln!(
        "{:<20} {}",
        "Born Timestamp:",
        super::format_time(m.head.born_timestamp)
    );
    crate::outln!(
        "{:<20} {}",
        "Store Timestamp:",
        super::format_time(m.head.store_timestamp)
    );
    crate::outln!("{:<20} {}", "Born Host:", m.head.born_host);
    crate::outln!("{:<20} {}", "Store Host:", m.head.store_host);
    crate::outln!("{:<20} {}", "System Flag:", m.head.sys_flag);
    let props: Vec<String> = p.iter().map(|(k, v)| format!("{k}={v}")).collect();
    crate::outln!("{:<20} {{{}}}", "Properties:", props.join(", "));
    let body = m
        .uncompressed_body(64 << 20)
        .unwrap_or_else(|_| m.body.clone());
    crate::outln!("{:<20} {}", "Message Body:", String::from_utf8_lossy(&body));
}

/// `queryMsgById`: prints the messages; with `-g -d` a consumer consumes them directly, with
/// `-s true` they are sent again ([`super::msg_actions`]).
pub async fn query_by_id(
    admin: &AdminClient,
    session: &super::session::Session,
    a: QueryById,
) -> Result<(), ClientError> {
    if let (Some(group), Some(client_id)) = (&a.group, &a.client_id) {
        return super::msg_actions::consume_directly(admin, group, client_id, &a).await;
    }
    if let Some(resend) = a.resend {
        if resend {
            super::msg_actions::resend(admin, session, &a).await?;
        }
        return Ok(());
    }
    // Only dial brokers the name server knows: a client id decodes to an arbitrary address.
    let known: Vec<String> = admin
        .cluster_info()
        .await?
        .broker_addr_table
        .values()
        .flat_map(|b| b.broker_addrs.0.values().cloned())
        .collect();
    for msg_id in a.id_list() {
        let decoded = id::decode_offset_msg_id(msg_id)
            .ok()
            .filter(|(addr, _)| known.contains(&addr.to_string()));
        let viewed = match decoded {
            Some((addr, offset)) => admin.view_message(&addr.to_string(), offset).await.ok(),
            None => None,
        };
        let message = match (viewed, &a.topic) {
            (Some(m), _) => m,
            (None, Some(topic)) => find_unique(admin, topic, msg_id)
                .await?
                .ok_or_else(|| ClientError::Invalid(format!("message {msg_id} not found in topic {topic}")))?,
            (None, None) => {
                return Err(ClientError::Invalid(format!(
                    "message {msg_id} is not an offset id of a known broker; give -t topic to look it up as a unique key"
                )))
            }
        };
        print_message(&message);
    }
    Ok(())
}

async fn find_unique(
    admin: &AdminClient,
    topic: &str,
    uniq: &str,
) -> Result<Option<MessageRecord>, ClientError> {
    for addr in masters_of(admin, topic).await? {
        let hits = admin
            .query_message(&addr, &key_query(topic, uniq, 32, 0, i64::MAX, true))
            .await?;
        if let Some(m) = hits
            .into_iter()
            .find(|m| m.properties.get(property::UNIQ_KEY) == Some(uniq))
        {
            return Ok(Some(m));
        }
    }
    Ok(None)
}

#[derive(clap::Args, Debug)]
pub struct QueryByUniqueKey {
    #[arg(short = 'i', long = "msgId")]
    id: String,
    #[arg(short = 't', long = "topic")]
    topic: String,
    /// With -d: the consumer group whose client consumes the message directly.
    #[arg(short = 'g', long = "consumerGroup", requires = "client_id")]
    group: Option<String>,
    /// With -g: the client id of the consumer to hand the message to.
    #[arg(short = 'd', long = "clientId", requires = "group")]
    client_id: Option<String>,
    /// Print all message, the limit is 32.
    #[arg(short = 'a', long = "showAll")]
    show_all: bool,
}

pub async fn query_by_unique_key(
    admin: &AdminClient,
    a: QueryByUniqueKey,
) -> Result<(), ClientError> {
    let found = find_all_unique(admin, &a.topic, &a.id).await?;
    if let (Some(group), Some(client_id), Some(m)) = (&a.group, &a.client_id, found.first()) {
        // Handed over by its offset id: the broker storing it relays it to the client.
        let by_id = QueryById {
            ids: m.offset_msg_id(),
            topic: Some(a.topic.clone()),
            group: Some(group.clone()),
            client_id: Some(client_id.clone()),
            resend: None,
            unit_name: None,
        };
        return super::msg_actions::consume_directly(admin, group, client_id, &by_id).await;
    }
    if found.is_empty() {
        return Err(ClientError::Invalid(format!(
            "message {} not found in topic {}",
            a.id, a.topic
        )));
    }
    let shown = if a.show_all { found.len() } else { 1 };
    for m in found.iter().take(shown) {
        print_message(m);
    }
    Ok(())
}

/// Every stored copy of the message with this unique key (at most 32 per broker).
async fn find_all_unique(
    admin: &AdminClient,
    topic: &str,
    uniq: &str,
) -> Result<Vec<MessageRecord>, ClientError> {
    let mut all = Vec::new();
    for addr in masters_of(admin, topic).await? {
        let hits = admin
            .query_message(&addr, &key_query(topic, uniq, 32, 0, i64::MAX, true))
            .await?;
        all.extend(
            hits.into_iter()
                .filter(|m| m.properties.get(property::UNIQ_KEY) == Some(uniq)),
        );
    }
    all.truncate(32);
    Ok(all)
}

#[derive(clap::Args, Debug)]
pub struct QueryByOffset {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'b', long = "brokerName")]
    broker_name: String,
    #[arg(short = 'i', long = "queueId")]
    queue_id: i32,
    #[arg(short = 'o', long = "offset")]
    offset: i64,
}

async fn addr_of(
    admin: &AdminClient,
    topic: &str,
    broker_name: &str,
) -> Result<String, ClientError> {
    let route = admin.topic_route(topic).await?;
    route
        .broker_datas
        .iter()
        .find(|b| b.broker_name == broker_name)
        .and_then(|b| b.master_addr().map(str::to_owned))
        .ok_or_else(|| {
            ClientError::Invalid(format!("broker {broker_name} does not serve topic {topic}"))
        })
}

pub async fn query_by_offset(admin: &AdminClient, a: QueryByOffset) -> Result<(), ClientError> {
    let addr = addr_of(admin, &a.topic, &a.broker_name).await?;
    let (_, _, records) = admin
        .pull(&addr, "TOOLS_CONSUMER", &a.topic, a.queue_id, a.offset, 0)
        .await?;
    match records
        .into_iter()
        .find(|m| m.head.queue_offset == a.offset)
    {
        Some(m) => {
            print_message(&m);
            Ok(())
        }
        None => Err(ClientError::Invalid(format!(
            "no message at offset {} of queue {}",
            a.offset, a.queue_id
        ))),
    }
}

#[derive(clap::Args, Debug)]
pub struct SendMessage {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'p', long = "body")]
    body: String,
    #[arg(short = 'k', long = "key")]
    key: Option<String>,
    #[arg(short = 'c', long = "tags")]
    tags: Option<String>,
    #[arg(short = 'b', long = "broker")]
    broker_name: Option<String>,
    #[arg(short = 'i', long = "qid")]
    queue_id: Option<i32>,
    /// Message Trace Enable, Default: false (true: sent by a traced producer, so
    /// queryMsgTraceById finds its Pub record).
    #[arg(short = 'm', long = "msgTraceEnable", default_value_t = false, action = clap::ArgAction::Set)]
    trace: bool,
}

pub async fn send_message(
    admin: &AdminClient,
    session: &super::Session,
    a: SendMessage,
) -> Result<(), ClientError> {
    if a.trace {
        return send_traced(session, a).await;
    }
    let route = match admin.topic_route(&a.topic).await {
        Ok(route) => route,
        // Not created yet: send through the auto-create template's route.
        Err(ClientError::TopicNotExist(_)) => admin.topic_route("TBW102").await?,
        Err(e) => return Err(e),
    };
    let broker = route
        .broker_datas
        .iter()
        .find(|b| {
            a.broker_name.as_ref().is_none_or(|n| *n == b.broker_name) && b.master_addr().is_some()
        })
        .ok_or_else(|| ClientError::Invalid("no writable broker for this topic".into()))?;
    let addr = broker.master_addr().unwrap_or_default().to_owned();
    let mut props = Properties::new();
    if let Some(k) = &a.key {
        props.insert(property::KEYS, k.clone());
    }
    if let Some(t) = &a.tags {
        props.insert(property::TAGS, t.clone());
    }
    let queue_id = a.queue_id.unwrap_or(-1);
    let result = admin
        .send(
            &addr,
            &a.topic,
            queue_id,
            Bytes::from(a.body.into_bytes()),
            props.encode(),
        )
        .await?;
    crate::outln!(
        "{:<32}  {:<4}  {:<20}  {}",
        "#Broker Name",
        "#QID",
        "#Send Result",
        "#MsgId"
    );
    crate::outln!(
        "{:<32}  {:<4}  {:<20}  {}",
        broker.broker_name,
        result.queue_id,
        "SEND_OK",
        result.msg_id
    );
    Ok(())
}

/// `sendMessage -m true`: as RocketMQ's command, a producer of a group named by the time,
/// with message trace on; its shutdown sends the Pub record.
async fn send_traced(session: &super::Session, a: SendMessage) -> Result<(), ClientError> {
    let producer = session.traced_producer(&now_ms().to_string()).await?;
    let mut msg = Message::new(a.topic.clone(), Bytes::from(a.body.into_bytes()));
    if let Some(k) = &a.key {
        msg = msg.with_keys([k.clone()]);
    }
    if let Some(t) = &a.tags {
        msg = msg.with_tags(t.clone());
    }
    let sent = match (&a.broker_name, a.queue_id) {
        (Some(broker), Some(queue_id)) => {
            let queue = MessageQueue {
                topic: a.topic.clone(),
                broker_name: broker.clone(),
                queue_id,
            };
            producer.send_to_queue(msg, &queue).await
        }
        _ => producer.send(msg).await,
    };
    producer.shutdown().await;
    let sent = sent?;
    crate::outln!(
        "{:<32}  {:<4}  {:<20}  {}",
        "#Broker Name",
        "#QID",
        "#Send Result",
        "#MsgId"
    );
    crate::outln!(
        "{:<32}  {:<4}  {:<20}  {}",
        sent.queue.broker_name,
        sent.queue.queue_id,
        super::session::send_status_name(sent.status),
        sent.msg_id
    );
    Ok(())
}
