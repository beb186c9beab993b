//! The send paths: one message to any queue (retried on other brokers), to a fixed queue, or
//! oneway, and a batch; each broker's answer read as a [`SendResult`] or the reason it was
//! not stored. A failed or slow broker is quarantined through the [`QueueSelector`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::headers::{
    CommandHeader, SendMessageResponseHeader, SendMessageV2Fields,
};
use stellmq_remoting::protocol::message::{id::UniqIdGenerator, now_ms, property};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use super::config::ProducerConfig;
use super::prepare::{prepare_batch, prepare_message};
use super::publish_routes::PublishRoutes;
use super::queue_selection::QueueSelector;
use crate::error::ClientError;
use crate::instance::ClientInstance;
use crate::message::{Message, SendResult, SendStatus};
use crate::request::refusal;
use crate::trace::{self, TraceRole, TracedClient, Tracer};

/// How to pick the queue of a send.
pub(super) enum QueueChoice<'a> {
    /// Round robin over healthy brokers, retrying others on failure.
    Any,
    Fixed(&'a MessageQueue),
}

/// Sends for one producer group.
pub(super) struct Sender {
    pub config: ProducerConfig,
    pub instance: Arc<ClientInstance>,
    pub routes: PublishRoutes,
    selector: QueueSelector,
    ids: UniqIdGenerator,
    /// With `enable_msg_trace`: where Pub and EndTransaction records go.
    pub tracer: Option<Arc<Tracer>>,
}

impl Sender {
    pub fn new(config: ProducerConfig, instance: Arc<ClientInstance>) -> Self {
        let routes = PublishRoutes::new(
            instance.clone(),
            config.send_msg_timeout,
            config.default_topic_queue_nums,
        );
        let tracer = TracedClient {
            enabled: config.enable_msg_trace,
            namesrv_addr: &config.namesrv_addr,
            tls: &config.tls,
            credentials: config.credentials.as_ref(),
            namespace: config.namespace.as_deref(),
            group: &config.group,
            customized_topic: config.customized_trace_topic.as_deref(),
            local_ip: instance.local_ip,
            role: TraceRole::Produce,
        }
        .start();
        Self {
            tracer,
            ids: UniqIdGenerator::new(instance.local_ip),
            selector: QueueSelector::new(),
            routes,
            instance,
            config,
        }
    }

    /// Sends one message; `None` for a oneway send, which has no answer.
    pub async fn send(
        &self,
        mut msg: Message,
        choice: QueueChoice<'_>,
        oneway: bool,
    ) -> Result<Option<SendResult>, ClientError> {
        let flag = prepare_message(&self.config, &self.ids, &mut msg)?;
        let info = self.routes.get(&msg.topic).await?;
        let attempts = match (&choice, oneway) {
            (QueueChoice::Any, false) => 1 + self.config.retry_times_when_send_failed,
            _ => 1,
        };
        let mut last_error = None;
        let mut avoid: Option<String> = None;
        for _ in 0..attempts {
            let queue = match &choice {
                QueueChoice::Any => self.selector.choose(&info, avoid.as_deref()),
                QueueChoice::Fixed(q) => Some((*q).clone()),
            };
            let Some(queue) = queue else {
                return Err(ClientError::TopicNotExist(msg.topic.clone()));
            };
            let Some(addr) = info.masters.get(&queue.broker_name).cloned() else {
                last_error = Some(ClientError::Invalid(format!(
                    "broker {} has no master",
                    queue.broker_name
                )));
                avoid = Some(queue.broker_name.clone());
                continue;
            };
            let code = if msg.is_reply() {
                RequestCode::SEND_REPLY_MESSAGE_V2
            } else {
                RequestCode::SEND_MESSAGE_V2
            };
            let mut request =
                RemotingCommand::request(code, self.header(&msg, &queue, flag, false))
                    .with_body(msg.body.clone());
            request.serialize_type = self.config.serialize_type;
            if oneway {
                request.mark_oneway();
                return self
                    .instance
                    .remoting
                    .invoke_oneway(&addr, request)
                    .await
                    .map(|_| None)
                    .map_err(Into::into);
            }
            let started = Instant::now();
            // The wall clock only for a traced send.
            let started_ms = if self.tracer.is_some() { now_ms() } else { 0 };
            let uniq_key = msg.property(property::UNIQ_KEY).unwrap_or("");
            match self.exchange(&addr, request, &queue, uniq_key).await {
                Ok(result) => {
                    if started.elapsed() > Duration::from_secs(1) {
                        self.selector
                            .isolate(&queue.broker_name, Duration::from_secs(5));
                    }
                    self.trace_send(&msg, &addr, &result, started_ms);
                    return Ok(Some(result));
                }
                Err(e) => {
                    let retry = self.may_retry(&e, &queue.broker_name);
                    last_error = Some(e);
                    if !retry {
                        break;
                    }
                }
            }
            avoid = Some(queue.broker_name.clone());
            // The route may have changed (broker gone): refresh it for the next attempt.
            self.routes.forget(&msg.topic);
        }
        Err(last_error.unwrap_or_else(|| ClientError::Invalid("no queue to send to".into())))
    }

    /// Sends messages of one topic as one batch (one queue, consecutive offsets).
    pub async fn send_batch(&self, msgs: Vec<Message>) -> Result<SendResult, ClientError> {
        let batch = prepare_batch(&self.config, &self.ids, msgs)?;
        let info = self.routes.get(&batch.topic).await?;
        let mut last_error = None;
        for _ in 0..=self.config.retry_times_when_send_failed {
            let Some(queue) = self.selector.choose(&info, None) else {
                return Err(ClientError::TopicNotExist(batch.topic.clone()));
            };
            let Some(addr) = info.masters.get(&queue.broker_name).cloned() else {
                continue;
            };
            let topic_only = Message::new(batch.topic.clone(), Bytes::new());
            let header = self.header(&topic_only, &queue, 0, true);
            let mut request = RemotingCommand::request(RequestCode::SEND_BATCH_MESSAGE, header)
                .with_body(batch.body.clone());
            request.serialize_type = self.config.serialize_type;
            match self.exchange(&addr, request, &queue, &batch.msg_ids).await {
                Ok(result) => return Ok(result),
                Err(e) => {
                    let retry = self.may_retry(&e, &queue.broker_name);
                    last_error = Some(e);
                    if !retry {
                        break;
                    }
                }
            }
        }
        Err(last_error.unwrap_or_else(|| ClientError::Invalid("no queue to send to".into())))
    }

    /// Records a traced send (not the trace topic's own).
    fn trace_send(&self, msg: &Message, addr: &str, result: &SendResult, started_ms: i64) {
        let Some(tracer) = &self.tracer else { return };
        if tracer.is_trace_topic(&msg.topic) {
            return;
        }
        let ns = self.config.namespace.as_deref();
        if let Some(record) =
            trace::published(ns, &self.config.group, msg, addr, result, started_ms)
        {
            tracer.append(record);
        }
    }

    /// After a failed attempt on `broker`: whether another broker may be tried (RocketMQ's
    /// retriable response codes, and any failure that is not a refusal: a lost connection, a
    /// timeout, an unreadable answer). A broker that may be retried elsewhere is quarantined.
    fn may_retry(&self, error: &ClientError, broker: &str) -> bool {
        let retriable = error
            .remote_code()
            .is_none_or(|code| [17, 14, 1, 16, 204, 205, 2].contains(&code));
        if retriable {
            self.selector.isolate(broker, self.config.fault_isolation);
        }
        retriable
    }

    /// One two-way send to `addr`: where the message landed, or why not.
    async fn exchange(
        &self,
        addr: &str,
        request: RemotingCommand,
        queue: &MessageQueue,
        msg_id: &str,
    ) -> Result<SendResult, ClientError> {
        let response = self
            .instance
            .remoting
            .invoke(addr, request, self.config.send_msg_timeout)
            .await?;
        to_result(addr, &response, queue, msg_id)
    }

    /// SEND_MESSAGE_V2's header fields for `msg` on `queue` (a retry carries its reconsume
    /// counts; a batch's properties travel in its body), rendered from the message in place.
    fn header(&self, msg: &Message, queue: &MessageQueue, sys_flag: i32, batch: bool) -> ExtFields {
        let count = |name| msg.property(name).and_then(|v| v.parse().ok());
        let (reconsume_times, max_reconsume_times) = if msg.topic.starts_with("%RETRY%") {
            (
                count(property::RECONSUME_TIME),
                count(property::MAX_RECONSUME_TIMES),
            )
        } else {
            (Some(0), None)
        };
        SendMessageV2Fields {
            producer_group: &self.config.group,
            topic: &msg.topic,
            default_topic: "TBW102",
            default_topic_queue_nums: self.config.default_topic_queue_nums,
            queue_id: queue.queue_id,
            sys_flag,
            born_timestamp: now_ms(),
            flag: msg.flag,
            properties: (!batch).then(|| msg.properties()),
            reconsume_times,
            unit_mode: Some(false),
            max_reconsume_times,
            batch: batch.then_some(true),
            broker_name: None,
        }
        .to_ext_fields()
    }
}

/// What `addr` answered to a send: where the message landed, or why it was not stored.
fn to_result(
    addr: &str,
    response: &RemotingCommand,
    queue: &MessageQueue,
    msg_id: &str,
) -> Result<SendResult, ClientError> {
    let status = match response.response_code() {
        Some(ResponseCode::SUCCESS) => SendStatus::SendOk,
        Some(ResponseCode::FLUSH_DISK_TIMEOUT) => SendStatus::FlushDiskTimeout,
        Some(ResponseCode::FLUSH_SLAVE_TIMEOUT) => SendStatus::FlushSlaveTimeout,
        Some(ResponseCode::SLAVE_NOT_AVAILABLE) => SendStatus::SlaveNotAvailable,
        _ => return Err(refusal(addr, response).into()),
    };
    let header = SendMessageResponseHeader::from_ext_fields(&response.ext_fields)?;
    Ok(SendResult {
        status,
        msg_id: msg_id.to_owned(),
        offset_msg_id: header.msg_id,
        queue: MessageQueue {
            queue_id: header.queue_id,
            ..queue.clone()
        },
        queue_offset: header.queue_offset,
        region_id: header.msg_region.unwrap_or_default(),
        trace_on: header.trace_on.as_deref() != Some("false"),
        recall_handle: header.recall_handle,
    })
}
