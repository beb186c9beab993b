//! SEND_REPLY_MESSAGE / SEND_REPLY_MESSAGE_V2 (request/reply, RocketMQ 4.6+): a consumer
//! answers a request message; the broker pushes the reply to the requesting producer's
//! connection (PUSH_REPLY_MESSAGE_TO_CLIENT, found by the `REPLY_TO_CLIENT` client id) and,
//! with `storeReplyMessageEnable`, also stores it in `<cluster>_REPLY_TOPIC`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::headers::{
    CommandHeader, ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{property, Properties};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use super::SendProcessor;
use crate::clients::ProducerManager;
use crate::context::now_ms;

/// How long the requester has to take a pushed reply.
const PUSH_TIMEOUT: Duration = Duration::from_secs(3);

pub(super) struct Replies {
    pub producers: Arc<ProducerManager>,
    pub store: bool,
}

impl SendProcessor {
    pub(crate) async fn reply(
        &self,
        ctx: RequestContext,
        request: RemotingCommand,
        form: super::HeaderForm,
    ) -> ProcessResult {
        let Some(replies) = &self.replies else {
            return Ok(Some(request.not_supported_to()));
        };
        let h = Self::send_header(&request, form)?;
        let target = self.check(&ctx, &h)?;
        let mut props = Properties::decode(h.properties.as_deref().unwrap_or(""));
        let pushed = self
            .push_reply(replies, &ctx, &h, &mut props, request.body.clone())
            .await;
        if !replies.store {
            pushed.map_err(|e| ProcessorError::system(e.to_string()))?;
            return Ok(Some(self.pushed_only(&request, target.queue_id)));
        }
        let mut msg = self.base_message(&ctx, &h, &target, request.body.clone());
        props.remove(property::WAIT);
        msg.properties = props.encode();
        let result = self.writer.put_for(&ctx, vec![msg]).await;
        let stored = self.respond(
            &request,
            &target,
            result,
            crate::metrics::MessageType::Normal,
        );
        // A reply that reached no one is a failure even when stored (as RocketMQ answers).
        pushed.map_err(|e| ProcessorError::system(e.to_string()))?;
        stored
    }

    /// Pushes the reply to the requester's connection; the error is the remark to answer.
    async fn push_reply(
        &self,
        replies: &Replies,
        ctx: &RequestContext,
        h: &SendMessageRequestHeader,
        props: &mut Properties,
        body: Bytes,
    ) -> Result<(), PushError> {
        let Some(requester) = props.get(property::REPLY_TO_CLIENT).map(str::to_owned) else {
            return Err(PushError::NoRequester);
        };
        let Some(channel) = replies.producers.channel_of_client(&requester) else {
            return Err(PushError::NotConnected(requester));
        };
        props.insert(property::PUSH_REPLY_TIME, now_ms().to_string());
        let header = ReplyMessageRequestHeader {
            producer_group: h.producer_group.clone(),
            topic: h.topic.clone(),
            default_topic: h.default_topic.clone(),
            default_topic_queue_nums: h.default_topic_queue_nums,
            queue_id: h.queue_id,
            sys_flag: h.sys_flag,
            born_timestamp: h.born_timestamp,
            flag: h.flag,
            properties: Some(props.encode()),
            reconsume_times: h.reconsume_times,
            unit_mode: h.unit_mode,
            born_host: ctx.channel.peer().to_string(),
            store_host: self.identity.store_host.to_string(),
            store_timestamp: now_ms(),
        };
        let push = RemotingCommand::request(
            RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT,
            header.to_ext_fields(),
        )
        .with_body(body);
        match channel.invoke(push, PUSH_TIMEOUT).await {
            Ok(r) if r.code == 0 => Ok(()),
            Ok(r) => {
                tracing::warn!(%requester, code = r.code, remark = r.remark_str(), "requester refused a reply");
                Err(PushError::Refused {
                    requester,
                    code: r.code,
                })
            }
            Err(source) => {
                tracing::warn!(%requester, error = %source, "cannot push a reply");
                Err(PushError::Failed { requester, source })
            }
        }
    }

    /// A pushed, unstored reply: RocketMQ answers msgId "0" and queue offset 0.
    fn pushed_only(&self, request: &RemotingCommand, queue_id: i32) -> RemotingCommand {
        let fields = SendMessageResponseHeader {
            msg_id: "0".into(),
            queue_id,
            queue_offset: 0,
            transaction_id: None,
            batch_uniq_id: None,
            msg_region: Some(self.identity.region_id.clone()),
            trace_on: Some(self.identity.trace_on.to_string()),
            recall_handle: None,
        }
        .to_ext_fields();
        request.success_to().with_ext_fields(fields)
    }
}

/// Why a reply reached no requester; the messages are RocketMQ's remarks.
#[derive(Debug, thiserror::Error)]
enum PushError {
    #[error("reply message properties[{}] is null", property::REPLY_TO_CLIENT)]
    NoRequester,
    #[error("push reply message fail, channel of <{0}> not found.")]
    NotConnected(String),
    #[error("push reply message to {requester} fail.")]
    Refused { requester: String, code: i32 },
    #[error("push reply message to {requester} fail.")]
    Failed {
        requester: String,
        #[source]
        source: stellmq_remoting::net::RemotingError,
    },
}

#[cfg(test)]
mod tests;
