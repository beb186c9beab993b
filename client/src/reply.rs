//! Request/reply (RocketMQ 4.6+): [`Producer::request`] sends a message carrying a
//! correlation id and this client's id and waits for the answer; a consumer answers with
//! [`Producer::reply`], which the broker pushes straight to the requester's connection
//! (PUSH_REPLY_MESSAGE_TO_CLIENT).

use std::time::Duration;

use stellmq_remoting::protocol::message::property;
use tokio::sync::oneshot;

use crate::error::ClientError;
use crate::inbound::PendingReplies;
use crate::message::{Message, ReceivedMessage, SendResult};
use crate::producer::Producer;

pub use crate::message::REPLY_TYPE;

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
            _ => Err(ClientError::NoReply {
                correlation,
                timeout,
            }),
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
