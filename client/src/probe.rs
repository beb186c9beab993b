//! The broker's questions about a running consumer, relayed from an admin tool, answered as
//! RocketMQ's `ClientRemotingProcessor` answers them: the consumer's running info
//! (GET_CONSUMER_RUNNING_INFO, 307), its offsets of one topic (GET_CONSUMER_STATUS_FROM_CLIENT,
//! 221) and consuming one given message with its listener (CONSUME_MESSAGE_DIRECTLY, 309).
//! Each goes to the [`ConsumerProbe`] the group registered on the client instance.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use stellmq_remoting::net::Channel;
use stellmq_remoting::protocol::body::{
    fastjson, ConsumeMessageDirectlyResult, ConsumerRunningInfo, GetConsumerStatusBody,
    MessageQueue, MqKeyMap,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::message::ReceivedMessage;

/// A listener's run on one message, as CONSUME_MESSAGE_DIRECTLY reports it.
pub(crate) type DirectConsume = Pin<Box<dyn Future<Output = ConsumeMessageDirectlyResult> + Send>>;

/// What a consumer group running on the instance tells about itself.
pub(crate) trait ConsumerProbe: Send + Sync {
    /// Settings, subscriptions, owned queues and rates (`ConsumerRunningInfo`).
    fn running_info(&self) -> ConsumerRunningInfo;
    /// The offsets it holds for the queues of `topic`.
    fn offsets(&self, topic: &str) -> MqKeyMap<i64>;
    /// Runs the listener on `message`; `None` for a consumer without a listener.
    fn consume_directly(&self, message: ReceivedMessage) -> Option<DirectConsume>;
}

/// The probe of each consumer group running on one instance.
pub(crate) type Probes = Arc<Mutex<HashMap<String, Weak<dyn ConsumerProbe>>>>;

fn probe_of(probes: &Probes, group: &str) -> Option<Arc<dyn ConsumerProbe>> {
    probes.lock().get(group).and_then(Weak::upgrade)
}

fn not_here(request: &RemotingCommand, group: &str) -> RemotingCommand {
    request.response_to(
        ResponseCode::SYSTEM_ERROR,
        Some(format!(
            "The Consumer Group <{group}> not exist in this consumer"
        )),
    )
}

fn bad_header(request: &RemotingCommand, e: impl std::fmt::Display) -> RemotingCommand {
    request.response_to(ResponseCode::SYSTEM_ERROR, Some(format!("bad header: {e}")))
}

/// GET_CONSUMER_RUNNING_INFO.
pub(crate) fn running_info(channel: &Channel, request: &RemotingCommand, probes: &Probes) {
    let response = match GetConsumerRunningInfoRequestHeader::from_ext_fields(&request.ext_fields) {
        Err(e) => bad_header(request, e),
        Ok(h) => match probe_of(probes, &h.consumer_group) {
            Some(probe) => request
                .success_to()
                .with_body(fastjson::encode(&probe.running_info())),
            None => not_here(request, &h.consumer_group),
        },
    };
    channel.try_send(response);
}

/// GET_CONSUMER_STATUS_FROM_CLIENT: the group's offsets of the topic, none if the group does
/// not run here (as Java answers).
pub(crate) fn consumer_status(channel: &Channel, request: &RemotingCommand, probes: &Probes) {
    let response = match GetConsumerStatusRequestHeader::from_ext_fields(&request.ext_fields) {
        Err(e) => bad_header(request, e),
        Ok(h) => {
            let body = GetConsumerStatusBody {
                message_queue_table: probe_of(probes, &h.group)
                    .map(|p| p.offsets(&h.topic))
                    .unwrap_or_default(),
                ..GetConsumerStatusBody::default()
            };
            request.success_to().with_body(fastjson::encode(&body))
        }
    };
    channel.try_send(response);
}

/// CONSUME_MESSAGE_DIRECTLY: runs the group's listener on the message of the body and
/// answers when it returns.
pub(crate) fn consume_directly(channel: Channel, request: RemotingCommand, probes: &Probes) {
    let h = match ConsumeMessageDirectlyResultRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(h) => h,
        Err(e) => {
            channel.try_send(bad_header(&request, e));
            return;
        }
    };
    let record = match MessageRecord::decode(&request.body, false) {
        Ok((record, _)) => record,
        Err(e) => {
            channel.try_send(request.response_to(
                ResponseCode::SYSTEM_ERROR,
                Some(format!("the message to consume cannot be decoded: {e}")),
            ));
            return;
        }
    };
    let queue = MessageQueue {
        topic: record.topic.clone(),
        broker_name: h.broker_name.clone().unwrap_or_default(),
        queue_id: record.head.queue_id,
    };
    let message = ReceivedMessage::new(record, queue);
    let run = probe_of(probes, &h.consumer_group).and_then(|p| p.consume_directly(message));
    let Some(run) = run else {
        channel.try_send(not_here(&request, &h.consumer_group));
        return;
    };
    tracing::info!(group = %h.consumer_group, msg_id = ?h.msg_id, "consuming a message directly, as the broker asked");
    tokio::spawn(async move {
        let result = run.await;
        tracing::info!(result = ?result.consume_result, spent_ms = result.spent_time_mills, "message consumed directly");
        channel.try_send(request.success_to().with_body(fastjson::encode(&result)));
    });
}
