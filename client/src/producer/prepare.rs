//! What a message goes through before it is sent: the namespace, RocketMQ's client-side
//! checks (topic name, body size), a UNIQ_KEY, and the sysFlag bits of a transactional half
//! and of a compressed body; for a batch, the one-topic rules and the encoded body.

use bytes::Bytes;
use stellmq_remoting::protocol::message::{
    batch, id::UniqIdGenerator, property, sys_flag, zlib_compress,
};

use super::config::ProducerConfig;
use crate::error::ClientError;
use crate::message::Message;

/// Readies `msg` for a single send (topic in its namespace, checked, UNIQ_KEY set, body
/// compressed when large) and returns its sysFlag.
pub(super) fn prepare_message(
    config: &ProducerConfig,
    ids: &UniqIdGenerator,
    msg: &mut Message,
) -> Result<i32, ClientError> {
    crate::namespace::wrap_in_place(config.namespace.as_deref(), &mut msg.topic);
    if let Some(reason) = validate_topic(&msg.topic) {
        return Err(ClientError::Invalid(reason));
    }
    if msg.body.is_empty() {
        return Err(ClientError::Invalid("the message body is empty".into()));
    }
    if msg.body.len() > config.max_message_size {
        return Err(ClientError::Invalid(format!(
            "the message body is {} bytes, over the {} byte limit",
            msg.body.len(),
            config.max_message_size
        )));
    }
    if msg.property(property::UNIQ_KEY).is_none() {
        msg.set_property(property::UNIQ_KEY, ids.next_id());
    }
    let mut flag = 0;
    if msg
        .property(property::TRAN_MSG)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        flag |= sys_flag::TRANSACTION_PREPARED_TYPE;
    }
    if msg.body.len() >= config.compress_msg_body_over_howmuch {
        msg.body = Bytes::from(zlib_compress(&msg.body, 5));
        flag |= sys_flag::COMPRESSED;
    }
    Ok(flag)
}

/// A batch ready to send: one topic, the encoded body and the messages' UNIQ_KEYs.
pub(super) struct Batch {
    pub topic: String,
    pub body: Bytes,
    /// The UNIQ_KEYs, comma-joined (the batch's `msg_id`).
    pub msg_ids: String,
}

/// Checks a batch (one topic, no retry or delayed messages, no empty body, within the size
/// limit), gives each message a UNIQ_KEY and encodes the batch body.
pub(super) fn prepare_batch(
    config: &ProducerConfig,
    ids: &UniqIdGenerator,
    mut msgs: Vec<Message>,
) -> Result<Batch, ClientError> {
    for m in &mut msgs {
        crate::namespace::wrap_in_place(config.namespace.as_deref(), &mut m.topic);
    }
    let topic = msgs
        .first()
        .map(|m| m.topic.clone())
        .ok_or_else(|| ClientError::Invalid("empty batch".into()))?;
    if msgs.iter().any(|m| m.topic != topic) {
        return Err(ClientError::Invalid("a batch must have one topic".into()));
    }
    if topic.starts_with("%RETRY%") || msgs.iter().any(|m| m.property(property::DELAY).is_some()) {
        return Err(ClientError::Invalid(
            "a batch cannot hold retry or delayed messages".into(),
        ));
    }
    let mut items = Vec::with_capacity(msgs.len());
    let mut uniq_keys = Vec::with_capacity(msgs.len());
    for m in &mut msgs {
        if m.body.is_empty() {
            return Err(ClientError::Invalid(
                "a batched message body is empty".into(),
            ));
        }
        if m.property(property::UNIQ_KEY).is_none() {
            m.set_property(property::UNIQ_KEY, ids.next_id());
        }
        uniq_keys.push(m.property(property::UNIQ_KEY).unwrap_or("").to_owned());
        items.push(batch::BatchItem {
            flag: m.flag,
            body: m.body.clone(),
            properties: m.encoded_properties(),
        });
    }
    let body = batch::encode(&items);
    if body.len() > config.max_message_size {
        return Err(ClientError::Invalid(format!(
            "the batch is {} bytes, over the {} byte limit",
            body.len(),
            config.max_message_size
        )));
    }
    Ok(Batch {
        topic,
        body: body.into(),
        msg_ids: uniq_keys.join(","),
    })
}

/// RocketMQ's client-side topic checks.
fn validate_topic(topic: &str) -> Option<String> {
    if topic.trim().is_empty() {
        return Some("the topic is blank".into());
    }
    if topic.len() > 127 {
        return Some("the topic is longer than 127 characters".into());
    }
    if !topic
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        return Some(format!(
            "the topic {topic} contains characters outside [%|a-zA-Z0-9_-]"
        ));
    }
    None
}
