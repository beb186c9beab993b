//! RECALL_MESSAGE (370, RocketMQ 5.3.2+): a producer takes back a timer message before it
//! is due, with the recall handle its send answered. The checks and their codes are
//! RocketMQ's `RecallMessageProcessor`'s; then the timer must still wait on this broker
//! (a delivered, already recalled or unknown message is refused), and the recall is stored
//! as a marker in the timer queue ([`crate::timer::Recall`]).

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::perm;
use stellmq_remoting::protocol::headers::{
    CommandHeader, RecallMessageRequestHeader, RecallMessageResponseHeader,
};
use stellmq_remoting::protocol::recall::RecallHandle;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::header;
use crate::context::{now_ms, BrokerIdentity};
use crate::processor::send::SendSettings;
use crate::settings::Settings;
use crate::timer::TimerService;
use crate::topic::TopicConfigManager;
use crate::writer::{self, MessageWriter};

pub struct RecallProcessor {
    pub identity: Arc<BrokerIdentity>,
    pub settings: Settings<SendSettings>,
    pub topics: Arc<TopicConfigManager>,
    pub timers: Arc<TimerService>,
    pub writer: Arc<MessageWriter>,
}

fn refused(code: ResponseCode, remark: impl Into<String>) -> ProcessorError {
    ProcessorError::new(code, remark.into())
}

impl RecallProcessor {
    pub(crate) async fn recall(
        &self,
        ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: RecallMessageRequestHeader = header(&request)?;
        self.check_broker()?;
        let handle = self.check_handle(&h)?;
        let Some(recall) = self
            .timers
            .begin_recall(&handle.topic, &handle.message_id)
            .await
        else {
            return Err(refused(
                ResponseCode::ILLEGAL_OPERATION,
                format!(
                    "recall failed, message {} of topic {} is not waiting on this broker \
                     (delivered, recalled already, or not a timer message sent here)",
                    handle.message_id, handle.topic
                ),
            ));
        };
        let marker = recall.marker(
            h.producer_group.as_deref(),
            ctx.channel.peer(),
            self.identity.store_host,
        );
        let result = self.writer.put_for(&ctx, vec![marker]).await;
        writer::response_code(&result)
            .map_err(|_| refused(ResponseCode::SYSTEM_ERROR, "recall failed, execute error"))?;
        recall.commit();
        tracing::info!(
            event = "TIMER_MESSAGE_RECALLED",
            topic = %handle.topic,
            msg_id = %handle.message_id,
            "timer message recalled"
        );
        let mut fields = RecallMessageResponseHeader {
            msg_id: handle.message_id,
        }
        .to_ext_fields();
        fields.insert("MSG_REGION", self.identity.region_id.clone());
        Ok(Some(request.success_to().with_ext_fields(fields)))
    }

    /// Recalls on, a master, taking requests, writeable (or recalls allowed regardless).
    fn check_broker(&self) -> Result<(), ProcessorError> {
        let settings = self.settings.get();
        if !settings.recall_message_enable {
            return Err(refused(
                ResponseCode::NO_PERMISSION,
                "recall failed, operation is forbidden (recallMessageEnable=false)",
            ));
        }
        if !self.identity.is_master() {
            return Err(refused(
                ResponseCode::SLAVE_NOT_AVAILABLE,
                "recall failed, broker service not available",
            ));
        }
        let not_yet = now_ms() < settings.start_accept_send_request_time_stamp;
        let read_only = !perm::is_writeable(settings.broker_permission)
            && !settings.allow_recall_when_broker_not_writeable;
        if not_yet || read_only {
            return Err(refused(
                ResponseCode::SERVICE_NOT_AVAILABLE,
                "recall failed, broker service not available",
            ));
        }
        Ok(())
    }

    /// The handle, for this topic and this broker, due in the future within the timer's
    /// reach.
    fn check_handle(&self, h: &RecallMessageRequestHeader) -> Result<RecallHandle, ProcessorError> {
        if !self.topics.contains(&h.topic) {
            return Err(refused(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("recall failed, the topic[{}] not exist", h.topic),
            ));
        }
        let illegal = |remark: &str| refused(ResponseCode::ILLEGAL_OPERATION, remark);
        let handle = RecallHandle::decode(&h.recall_handle).map_err(|e| illegal(&e.to_string()))?;
        if handle.topic != h.topic {
            return Err(illegal("recall failed, topic not match"));
        }
        if handle.broker_name != self.identity.broker_name {
            return Err(illegal("recall failed, broker service not available"));
        }
        let time_left = handle.timestamp_ms().saturating_sub(now_ms());
        let max_ms = self.settings.get().timer_max_delay_sec.saturating_mul(1000);
        if time_left <= 0 || time_left >= max_ms {
            return Err(illegal("recall failed, timestamp invalid"));
        }
        Ok(handle)
    }
}

#[cfg(test)]
mod tests;
