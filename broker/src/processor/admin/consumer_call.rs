//! Admin requests the broker answers by asking consumer clients on their connections, as
//! RocketMQ's `callConsumer` and `Broker2Client.getConsumeStatus` do:
//! GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309, with the message read
//! from the store) are relayed to the named client and its answer returned as it is;
//! INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) asks every client of the group (or the one
//! named) for its offsets of a topic (GET_CONSUMER_STATUS_FROM_CLIENT, 221).

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RemotingError};
use stellmq_remoting::protocol::body::{fastjson, GetConsumerStatusBody};
use stellmq_remoting::protocol::headers::{
    CommandHeader, ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
};
use stellmq_remoting::protocol::message::id;
use stellmq_remoting::protocol::version::{V3_0_7_SNAPSHOT, V3_1_8_SNAPSHOT};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_store::MessageStore;
use tokio::task::JoinSet;

use crate::clients::{ClientChannel, ConsumerManager};
use crate::context::BrokerIdentity;
use crate::processor::header;
use crate::topic::TopicConfigManager;

/// How long a client may take to answer (RocketMQ's `callClient`).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long each client may take with its offsets (`getConsumeStatus`).
const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

pub struct ConsumerCallProcessor {
    pub identity: Arc<BrokerIdentity>,
    pub consumers: Arc<ConsumerManager>,
    pub topics: Arc<TopicConfigManager>,
    pub store: Arc<MessageStore>,
}

impl ConsumerCallProcessor {
    /// GET_CONSUMER_RUNNING_INFO: relayed as it came.
    pub(crate) async fn running_info(self: Arc<Self>, request: RemotingCommand) -> ProcessResult {
        let h: GetConsumerRunningInfoRequestHeader = header(&request)?;
        let relay = relay_of(RequestCode::GET_CONSUMER_RUNNING_INFO, &request);
        self.call_consumer(&h.consumer_group, &h.client_id, relay, &request)
            .await
    }

    /// CONSUME_MESSAGE_DIRECTLY: the message named by `msgId` (an offset message id) goes
    /// to the client with this broker's name; the client's listener decides.
    pub(crate) async fn consume_directly(
        self: Arc<Self>,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: ConsumeMessageDirectlyResultRequestHeader = header(&request)?;
        let client_id = h.client_id.clone().unwrap_or_default();
        let msg_id = h.msg_id.clone().unwrap_or_default();
        let (_, offset) = id::decode_offset_msg_id(&msg_id)
            .map_err(|e| ProcessorError::system(format!("bad msgId {msg_id}: {e}")))?;
        let record = self.store.look_message_by_offset(offset).ok_or_else(|| {
            ProcessorError::system(format!("can not find message by the offset, {offset}"))
        })?;
        let mut relay = relay_of(RequestCode::CONSUME_MESSAGE_DIRECTLY, &request).with_body(record);
        relay
            .ext_fields
            .insert("brokerName", self.identity.broker_name.clone());
        if let Some(config) = h.topic.as_deref().and_then(|t| self.topics.get(t)) {
            relay
                .ext_fields
                .insert("topicSysFlag", config.topic_sys_flag.to_string());
        }
        self.call_consumer(&h.consumer_group, &client_id, relay, &request)
            .await
    }

    /// Sends `relay` to `client_id` of `group` and answers with the client's response.
    async fn call_consumer(
        &self,
        group: &str,
        client_id: &str,
        relay: RemotingCommand,
        request: &RemotingCommand,
    ) -> ProcessResult {
        let client = self.find(group, client_id)?;
        if client.version < V3_1_8_SNAPSHOT {
            return Err(ProcessorError::system(format!(
                "The Consumer <{client_id}> Version <{}> too low to finish, please upgrade it to V3_1_8_SNAPSHOT",
                client.version
            )));
        }
        match client.channel.invoke(relay, CLIENT_TIMEOUT).await {
            Ok(answer) => {
                let mut response = request.success_to().with_body(answer.body);
                response.code = answer.code;
                response.remark = answer.remark;
                Ok(Some(response))
            }
            Err(e @ RemotingError::Timeout { .. }) => Err(ProcessorError::new(
                ResponseCode::CONSUME_MSG_TIMEOUT,
                format!("consumer <{group}> <{client_id}> Timeout: {e}"),
            )),
            Err(e) => Err(ProcessorError::system(format!(
                "invoke consumer <{group}> <{client_id}> Exception: {e}"
            ))),
        }
    }

    fn find(&self, group: &str, client_id: &str) -> Result<ClientChannel, ProcessorError> {
        self.consumers
            .channels(group)
            .into_iter()
            .find(|c| c.client_id == client_id)
            .ok_or_else(|| {
                ProcessorError::system(format!("The Consumer <{group}> <{client_id}> not online"))
            })
    }

    /// INVOKE_BROKER_TO_GET_CONSUMER_STATUS: every client of the group (or `clientAddr`, a
    /// client id) is asked at once for its offsets of the topic; the answer holds each
    /// client's that answered.
    pub(crate) async fn consumer_status(
        self: Arc<Self>,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: GetConsumerStatusRequestHeader = header(&request)?;
        tracing::info!(topic = %h.topic, group = %h.group, "get consumer status");
        let clients = self.consumers.channels(&h.group);
        if clients.is_empty() {
            return Err(ProcessorError::system(format!(
                "No Any Consumer online in the consumer group: [{}]",
                h.group
            )));
        }
        if let Some(old) = clients.iter().find(|c| c.version < V3_0_7_SNAPSHOT) {
            return Err(ProcessorError::system(format!(
                "the client does not support this feature. version={}",
                old.version
            )));
        }
        let only = h.client_addr.as_deref().filter(|c| !c.trim().is_empty());
        let ask = GetConsumerStatusRequestHeader {
            client_addr: None,
            ..h.clone()
        };
        let mut calls = JoinSet::new();
        for client in clients
            .into_iter()
            .filter(|c| only.is_none_or(|id| id == c.client_id))
        {
            let question = RemotingCommand::request(
                RequestCode::GET_CONSUMER_STATUS_FROM_CLIENT,
                ask.to_ext_fields(),
            );
            calls.spawn(async move {
                let answer = client.channel.invoke(question, STATUS_TIMEOUT).await;
                (client.client_id, answer)
            });
        }
        let mut body = GetConsumerStatusBody::default();
        while let Some(joined) = calls.join_next().await {
            let Ok((client_id, answer)) = joined else {
                continue;
            };
            match answer.map(|r| (r.code, fastjson::decode::<GetConsumerStatusBody>(&r.body))) {
                Ok((0, Ok(status))) => {
                    body.consumer_table
                        .insert(client_id, status.message_queue_table);
                }
                Ok((code, _)) => {
                    tracing::warn!(client = %client_id, code, "a consumer did not give its status")
                }
                Err(e) => {
                    tracing::warn!(client = %client_id, error = %e, "a consumer did not give its status")
                }
            }
        }
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&body)),
        ))
    }
}

/// `request` sent on to a client under `code`, with the same fields and body.
fn relay_of(code: RequestCode, request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::request(code, request.ext_fields.clone()).with_body(request.body.clone())
}

#[cfg(test)]
mod tests;
