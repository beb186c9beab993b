//! Request/reply (RocketMQ 4.6+): [`Producer::request`] sends a message carrying a
//! correlation id and this client's id and waits for the answer; a consumer answers with
//! [`Producer::reply`], which the broker pushes straight to the requester's connection
//! (PUSH_REPLY_MESSAGE_TO_CLIENT).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::net::Channel;
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::headers::{CommandHeader, ReplyMessageRequestHeader};
use stellmq_remoting::protocol::message::{
    property, MessageRecord, MessageVersion, Properties, RecordHead,
};
use stellmq_remoting::protocol::RemotingCommand;
use tokio::sync::oneshot;

use crate::consumer::ReceivedMessage;
use crate::error::ClientError;
use crate::message::{Message, SendResult};
use crate::producer::Producer;

/// `MSG_TYPE` of a reply.
pub const REPLY_TYPE: &str = "reply";

/// Requests waiting for their reply, by correlation id.
pub(crate) type PendingReplies = Arc<Mutex<HashMap<String, oneshot::Sender<ReceivedMessage>>>>;

impl Producer {
    /// Sends `msg` as a request and waits up to `timeout` for a consumer's reply.
    pub async fn request(
        &self,
        msg: Message,
        timeout: Duration,
    ) -> Result<ReceivedMessage, ClientError> {
        let instance = self.instance();
        let correlation = instance.next_correlation_id();
        let msg = msg
            .with_property(property::CORRELATION_ID, correlation.clone())
            .with_property(property::REPLY_TO_CLIENT, instance.client_id.clone())
            .with_property(property::MESSAGE_TTL, timeout.as_millis().to_string());
        let (tx, rx) = oneshot::channel();
        instance.replies().lock().insert(correlation.clone(), tx);
        let _forget = Forget(instance.replies().clone(), correlation.clone());
        // The broker pushes the reply over a connection it knows this client by: learn the
        // topic's brokers first so the heartbeat reaches them.
        self.ensure_route(&msg.topic).await?;
        self.heartbeat_now().await;
        self.send(msg).await?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(reply)) => Ok(reply),
            _ => Err(ClientError::Invalid(format!(
                "no reply to request {correlation} within {timeout:?}"
            ))),
        }
    }

    /// Answers a request message received by a consumer with `body`.
    pub async fn reply(
        &self,
        request: &ReceivedMessage,
        body: impl Into<bytes::Bytes>,
    ) -> Result<SendResult, ClientError> {
        let props = &request.record.properties;
        let (Some(cluster), Some(correlation), Some(requester)) = (
            props.get(property::CLUSTER),
            props.get(property::CORRELATION_ID),
            props.get(property::REPLY_TO_CLIENT),
        ) else {
            return Err(ClientError::Invalid(
                "not a request message: CLUSTER, CORRELATION_ID or REPLY_TO_CLIENT missing".into(),
            ));
        };
        let mut reply = Message::new(format!("{cluster}_REPLY_TOPIC"), body)
            .with_property(property::CORRELATION_ID, correlation)
            .with_property(property::REPLY_TO_CLIENT, requester)
            .with_property(property::MSG_TYPE, REPLY_TYPE);
        if let Some(ttl) = props.get(property::MESSAGE_TTL) {
            reply = reply.with_property(property::MESSAGE_TTL, ttl);
        }
        self.send(reply).await
    }
}

/// Drops a pending request's entry however `request` ends.
struct Forget(PendingReplies, String);

impl Drop for Forget {
    fn drop(&mut self) {
        self.0.lock().remove(&self.1);
    }
}

/// PUSH_REPLY_MESSAGE_TO_CLIENT: hands the reply to its waiting request and acknowledges.
pub(crate) fn deliver_reply(
    channel: &Channel,
    request: &RemotingCommand,
    pending: &PendingReplies,
) {
    let reply = ReplyMessageRequestHeader::from_ext_fields(&request.ext_fields)
        .map(|h| reply_message(h, request.body.clone()));
    match reply {
        Ok(reply) => {
            let waiting = reply
                .record
                .properties
                .get(property::CORRELATION_ID)
                .and_then(|id| pending.lock().remove(id));
            match waiting {
                Some(tx) => {
                    let _ = tx.send(reply);
                }
                None => tracing::debug!("reply for a request no longer waiting"),
            }
            channel.try_send(request.success_to());
        }
        Err(e) => {
            channel.try_send(request.response_to(
                stellmq_remoting::protocol::ResponseCode::SYSTEM_ERROR,
                Some(format!("bad reply header: {e}")),
            ));
        }
    }
}

fn reply_message(h: ReplyMessageRequestHeader, body: bytes::Bytes) -> ReceivedMessage {
    let unknown: SocketAddr = ([0, 0, 0, 0], 0).into();
    let host = |s: &str| s.trim_start_matches('/').parse().unwrap_or(unknown);
    let record = MessageRecord {
        head: RecordHead {
            body_crc: 0,
            queue_id: h.queue_id,
            flag: h.flag,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: h.sys_flag,
            born_timestamp: h.born_timestamp,
            born_host: host(&h.born_host),
            store_timestamp: h.store_timestamp,
            store_host: host(&h.store_host),
            reconsume_times: h.reconsume_times.unwrap_or(0),
            prepared_transaction_offset: 0,
        },
        version: MessageVersion::V1,
        body,
        topic: h.topic.clone(),
        properties: Properties::decode(h.properties.as_deref().unwrap_or("")),
    };
    let queue = MessageQueue {
        topic: h.topic,
        broker_name: String::new(),
        queue_id: h.queue_id,
    };
    ReceivedMessage::new(record, queue)
}
