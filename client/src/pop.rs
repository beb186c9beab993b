//! POP consumption against one broker (RocketMQ 5's POP requests over remoting), for the
//! gRPC proxy and any consumer that wants receipt handles instead of offsets.
//!
//! [`PopClient`] talks to a broker by address (take it and the broker's name from the
//! topic's route); every call takes a timeout, which for [`PopClient::pop`] and
//! [`PopClient::notification`] must exceed the poll time the request asks the broker to
//! hold it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), stellmq_client::ClientError> {
//! use std::time::Duration;
//! use stellmq_client::pop::{PopClient, PopRequest, PopStatus};
//!
//! let client = PopClient::new(Default::default());
//! let request = PopRequest::new("broker-a", "my-group", "Orders")
//!     .max_nums(16)
//!     .invisible_time_ms(30_000)
//!     .poll_time_ms(10_000);
//! let popped = client.pop("127.0.0.1:10911", &request, Duration::from_secs(15)).await?;
//! if popped.status == PopStatus::Found {
//!     for m in &popped.messages {
//!         // ... then, once processed:
//!         client.ack("127.0.0.1:10911", "my-group", "Orders", &m.extra_info, Duration::from_secs(3)).await?;
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Receipt handles (`extra_info`) are RocketMQ's `ExtraInfoUtil` strings
//! ([`stellmq_remoting::protocol::pop::ExtraInfo`]); each popped message also carries its
//! handle in its `POP_CK` property and its first POP time in `1ST_POP_TIME`, as RocketMQ's
//! client sets them.

use std::collections::BTreeMap;
use std::time::Duration;

use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::pop::{BatchAck, BatchAckMessageRequestBody, BitSet};
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::headers::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    CommandHeader, NotificationRequestHeader, NotificationResponseHeader, PopMessageRequestHeader,
    PopMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{now_ms, property, MessageRecord};
use stellmq_remoting::protocol::pop::{self as handle, ExtraInfo, TopicType};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::consumer::ExpressionType;
use crate::error::ClientError;
use crate::message::ReceivedMessage;
use crate::request::{refusal, request};

/// Where a group that has no offset yet starts reading (`ConsumeInitMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitMode {
    /// The first message of the queue (`MIN`, 0).
    #[default]
    Min,
    /// The last message (`MAX`, 1).
    Max,
}

/// One POP.
#[derive(Debug, Clone)]
pub struct PopRequest {
    /// The broker's name (from the route): receipt handles name it.
    pub broker_name: String,
    pub group: String,
    pub topic: String,
    /// One queue, or -1 for any queue of the topic on this broker.
    pub queue_id: i32,
    /// 1 to 32.
    pub max_nums: i32,
    /// How long popped messages stay invisible before they come back.
    pub invisible_time_ms: i64,
    /// How long the broker may hold the request when there is nothing (0: answer at once).
    pub poll_time_ms: i64,
    pub init_mode: InitMode,
    pub expression_type: ExpressionType,
    /// `*`, `TagA || TagB`, or a SQL92 expression.
    pub expression: String,
    /// Orderly (FIFO) POP.
    pub order: bool,
    /// An orderly POP retried with the same attempt id gets the same batch again.
    pub attempt_id: Option<String>,
}

impl PopRequest {
    /// Any queue, up to 32 messages, 60 s invisible, no long polling, everything (`*`).
    pub fn new(broker_name: &str, group: &str, topic: &str) -> Self {
        Self {
            broker_name: broker_name.to_owned(),
            group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id: -1,
            max_nums: 32,
            invisible_time_ms: 60_000,
            poll_time_ms: 0,
            init_mode: InitMode::Min,
            expression_type: ExpressionType::Tag,
            expression: "*".to_owned(),
            order: false,
            attempt_id: None,
        }
    }

    pub fn queue_id(mut self, queue_id: i32) -> Self {
        self.queue_id = queue_id;
        self
    }
    pub fn max_nums(mut self, n: i32) -> Self {
        self.max_nums = n;
        self
    }
    pub fn invisible_time_ms(mut self, ms: i64) -> Self {
        self.invisible_time_ms = ms;
        self
    }
    pub fn poll_time_ms(mut self, ms: i64) -> Self {
        self.poll_time_ms = ms;
        self
    }
    pub fn expression(mut self, kind: ExpressionType, expression: &str) -> Self {
        self.expression_type = kind;
        self.expression = expression.to_owned();
        self
    }
    pub fn order(mut self, order: bool) -> Self {
        self.order = order;
        self
    }
    pub fn attempt_id(mut self, id: &str) -> Self {
        self.attempt_id = Some(id.to_owned());
        self
    }
    pub fn init_mode(mut self, mode: InitMode) -> Self {
        self.init_mode = mode;
        self
    }

    fn header(&self) -> PopMessageRequestHeader {
        PopMessageRequestHeader {
            consumer_group: self.group.clone(),
            topic: self.topic.clone(),
            queue_id: self.queue_id,
            max_msg_nums: self.max_nums,
            invisible_time: self.invisible_time_ms,
            poll_time: self.poll_time_ms,
            born_time: Some(now_ms()),
            init_mode: Some(match self.init_mode {
                InitMode::Min => 0,
                InitMode::Max => 1,
            }),
            exp_type: Some(self.expression_type.as_str().to_owned()),
            exp: Some(self.expression.clone()),
            order: Some(self.order),
            attempt_id: self.attempt_id.clone(),
        }
    }
}

/// How a POP ended (RocketMQ's `PopStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopStatus {
    Found,
    /// Nothing to pop within the poll time (POLLING_TIMEOUT or PULL_NOT_FOUND).
    NoNewMessage,
    /// Too many POPs wait on the broker (POLLING_FULL): try later.
    PollingFull,
}

/// A popped message and its receipt handle.
#[derive(Debug, Clone)]
pub struct PoppedMessage {
    /// The message; its topic is the requested one (also for retried messages), its
    /// `queue` the queue it was read from (the retry topic's for retries), and its
    /// reconsume times count earlier deliveries (for orderly POP, from `orderCountInfo`).
    pub message: ReceivedMessage,
    /// The receipt handle, to ack or change the invisible time with.
    pub extra_info: String,
}

/// What a POP gave.
#[derive(Debug, Clone)]
pub struct PopResult {
    pub status: PopStatus,
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    /// Messages left in the queues read.
    pub rest_num: i64,
    pub messages: Vec<PoppedMessage>,
}

/// How an ack ended (RocketMQ's `AckStatus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckStatus {
    Ok,
    /// The broker holds no such message in flight: its invisible time passed (it comes
    /// back), it was acked with another handle, or the handle is not this broker's.
    NoExist {
        remark: String,
    },
}

/// POP requests to brokers by address.
pub struct PopClient {
    remoting: RemotingClient,
}

impl PopClient {
    /// A client with its own connections (TLS and ACL signing as `config` says).
    pub fn new(config: ClientConfig) -> Self {
        Self {
            remoting: RemotingClient::new(config),
        }
    }

    /// The connections it uses.
    pub fn remoting(&self) -> &RemotingClient {
        &self.remoting
    }

    pub async fn shutdown(&self) {
        self.remoting.shutdown().await;
    }

    async fn call(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        Ok(self.remoting.invoke(addr, request, timeout).await?)
    }

    /// POP_MESSAGE: up to `max_nums` messages, each with its receipt handle.
    pub async fn pop(
        &self,
        addr: &str,
        req: &PopRequest,
        timeout: Duration,
    ) -> Result<PopResult, ClientError> {
        let response = self
            .call(
                addr,
                request(RequestCode::POP_MESSAGE, &req.header()),
                timeout,
            )
            .await?;
        let status = match ResponseCode::from_i32(response.code) {
            Some(ResponseCode::SUCCESS) => PopStatus::Found,
            Some(ResponseCode::POLLING_FULL) => PopStatus::PollingFull,
            Some(ResponseCode::POLLING_TIMEOUT) | Some(ResponseCode::PULL_NOT_FOUND) => {
                PopStatus::NoNewMessage
            }
            _ => return Err(refusal(addr, &response).into()),
        };
        let h = PopMessageResponseHeader::from_ext_fields(&response.ext_fields).unwrap_or_default();
        let mut result = PopResult {
            status,
            pop_time: h.pop_time,
            invisible_time: h.invisible_time,
            revive_qid: h.revive_qid,
            rest_num: h.rest_num,
            messages: Vec::new(),
        };
        if status == PopStatus::Found {
            let records = MessageRecord::decode_all(response.body.clone(), false)?;
            result.messages = popped_messages(req, &h, records)?;
        }
        Ok(result)
    }

    /// ACK_MESSAGE of one receipt handle.
    pub async fn ack(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        extra_info: &str,
        timeout: Duration,
    ) -> Result<AckStatus, ClientError> {
        let extra = parse(extra_info)?;
        let header = AckMessageRequestHeader {
            consumer_group: group.to_owned(),
            topic: extra.real_topic(topic, group),
            queue_id: extra.queue_id,
            extra_info: extra_info.to_owned(),
            offset: queue_offset(&extra)?,
            lite_topic: None,
        };
        let response = self
            .call(addr, request(RequestCode::ACK_MESSAGE, &header), timeout)
            .await?;
        ack_status(addr, response)
    }

    /// BATCH_ACK_MESSAGE: the handles grouped by batch, one bit set each (all handles must
    /// be of one broker).
    pub async fn batch_ack(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        extra_infos: &[&str],
        timeout: Duration,
    ) -> Result<AckStatus, ClientError> {
        let mut batches: BTreeMap<BatchOf, Vec<usize>> = BTreeMap::new();
        let mut broker_name = None;
        for info in extra_infos {
            let extra = parse(info)?;
            let offset = queue_offset(&extra)?;
            let index =
                usize::try_from(offset.saturating_sub(extra.ck_queue_offset)).map_err(|_| {
                    ClientError::Invalid(format!(
                        "receipt handle {info}: offset before its batch start"
                    ))
                })?;
            broker_name.get_or_insert_with(|| extra.broker_name.clone());
            batches
                .entry((
                    extra.topic_type.as_str().to_owned(),
                    extra.queue_id,
                    extra.ck_queue_offset,
                    extra.pop_time,
                    extra.invisible_time,
                    extra.revive_qid,
                ))
                .or_default()
                .push(index);
        }
        let acks = batches
            .into_iter()
            .map(
                |((retry, queue_id, start, pop_time, invisible, rqid), indexes)| BatchAck {
                    consumer_group: group.to_owned(),
                    topic: topic.to_owned(),
                    retry,
                    start_offset: start,
                    queue_id,
                    revive_queue_id: rqid,
                    pop_time,
                    invisible_time: invisible,
                    bit_set: BitSet::from_indexes(indexes),
                },
            )
            .collect();
        let body = BatchAckMessageRequestBody { acks, broker_name };
        let request = RemotingCommand::request(RequestCode::BATCH_ACK_MESSAGE, Default::default())
            .with_body(fastjson::encode(&body));
        let response = self.call(addr, request, timeout).await?;
        ack_status(addr, response)
    }

    /// CHANGE_MESSAGE_INVISIBLETIME: the message stays invisible `invisible_time_ms` from
    /// now; returns its new receipt handle (the old one is no longer valid).
    pub async fn change_invisible_time(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        extra_info: &str,
        invisible_time_ms: i64,
        timeout: Duration,
    ) -> Result<String, ClientError> {
        let extra = parse(extra_info)?;
        let offset = queue_offset(&extra)?;
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: group.to_owned(),
            topic: extra.real_topic(topic, group),
            queue_id: extra.queue_id,
            extra_info: extra_info.to_owned(),
            offset,
            invisible_time: invisible_time_ms,
            lite_topic: None,
        };
        let response = self
            .call(
                addr,
                request(RequestCode::CHANGE_MESSAGE_INVISIBLETIME, &header),
                timeout,
            )
            .await?;
        if response.code != ResponseCode::SUCCESS.as_i32() {
            return Err(refusal(addr, &response).into());
        }
        let h = ChangeInvisibleTimeResponseHeader::from_ext_fields(&response.ext_fields)?;
        let renewed = ExtraInfo {
            ck_queue_offset: if extra.is_order() {
                extra.ck_queue_offset
            } else {
                offset
            },
            pop_time: h.pop_time,
            invisible_time: h.invisible_time,
            revive_qid: h.revive_qid,
            queue_offset: Some(offset),
            ..extra
        };
        Ok(renewed.to_string())
    }

    /// NOTIFICATION: whether the group has something to pop on the topic (queue `queue_id`,
    /// -1 any), waiting up to `poll_time_ms` for it.
    #[allow(clippy::too_many_arguments)]
    pub async fn notification(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        poll_time_ms: i64,
        order: bool,
        attempt_id: Option<&str>,
        timeout: Duration,
    ) -> Result<bool, ClientError> {
        let header = NotificationRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            poll_time: poll_time_ms,
            born_time: Some(now_ms()),
            order: Some(order),
            attempt_id: attempt_id.map(str::to_owned),
        };
        let response = self
            .call(addr, request(RequestCode::NOTIFICATION, &header), timeout)
            .await?;
        if response.code != ResponseCode::SUCCESS.as_i32() {
            return Err(refusal(addr, &response).into());
        }
        Ok(NotificationResponseHeader::from_ext_fields(&response.ext_fields)?.has_msg)
    }
}

/// What identifies a POP batch in handles: topic type, queue, start offset, pop time,
/// invisible time, revive queue.
type BatchOf = (String, i32, i64, i64, i64, i32);

fn parse(extra_info: &str) -> Result<ExtraInfo, ClientError> {
    ExtraInfo::parse(extra_info).map_err(|e| ClientError::Invalid(e.to_string()))
}

fn queue_offset(extra: &ExtraInfo) -> Result<i64, ClientError> {
    extra.queue_offset.ok_or_else(|| {
        ClientError::Invalid(
            "the receipt handle has no queue offset (RocketMQ's seven-field form)".into(),
        )
    })
}

fn ack_status(addr: &str, response: RemotingCommand) -> Result<AckStatus, ClientError> {
    match ResponseCode::from_i32(response.code) {
        Some(ResponseCode::SUCCESS) => Ok(AckStatus::Ok),
        Some(ResponseCode::NO_MESSAGE) => Ok(AckStatus::NoExist {
            remark: response.remark_str().to_owned(),
        }),
        _ => Err(refusal(addr, &response).into()),
    }
}

/// The messages of a POP answer with their handles, as RocketMQ's
/// `MQClientAPIImpl.processPopResponse` builds them.
fn popped_messages(
    req: &PopRequest,
    h: &PopMessageResponseHeader,
    mut records: Vec<MessageRecord>,
) -> Result<Vec<PoppedMessage>, ClientError> {
    handle::attach_handles(&req.broker_name, req.order, h, &mut records)
        .map_err(|e| ClientError::Invalid(e.to_string()))?;
    let mut out = Vec::with_capacity(records.len());
    for mut record in records {
        let extra_info = record
            .properties
            .get(property::POP_CK)
            .unwrap_or_default()
            .to_owned();
        let kind = ExtraInfo::parse(&extra_info).map_or(TopicType::Normal, |e| e.topic_type);
        let queue = MessageQueue {
            topic: kind.real_topic(&req.topic, &req.group),
            broker_name: req.broker_name.clone(),
            queue_id: record.head.queue_id,
        };
        record.topic = req.topic.clone();
        out.push(PoppedMessage {
            message: ReceivedMessage::new(record, queue),
            extra_info,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use stellmq_remoting::protocol::message::{MessageVersion, Properties, RecordHead};

    fn record(
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
        props: &[(&str, &str)],
    ) -> MessageRecord {
        let host: SocketAddr = ([127, 0, 0, 1], 10911).into();
        let mut properties = Properties::new();
        for (k, v) in props {
            properties.insert(*k, *v);
        }
        MessageRecord {
            head: RecordHead {
                body_crc: 0,
                queue_id,
                flag: 0,
                queue_offset,
                physical_offset: 0,
                sys_flag: 0,
                born_timestamp: 1,
                born_host: host,
                store_timestamp: 2,
                store_host: host,
                reconsume_times: 0,
                prepared_transaction_offset: 0,
            },
            version: MessageVersion::V1,
            body: bytes::Bytes::from_static(b"x"),
            topic: topic.to_owned(),
            properties,
        }
    }

    #[test]
    fn handles_are_built_from_the_summaries_as_rocketmq_does() {
        let req = PopRequest::new("broker-a", "g", "T").order(true);
        let h = PopMessageResponseHeader {
            pop_time: 1_700_000_000_000,
            invisible_time: 30_000,
            revive_qid: 999,
            rest_num: 0,
            start_offset_info: Some("0 1 5;1 0 2".into()),
            msg_offset_info: Some("0 1 5,7;1 0 2".into()),
            order_count_info: Some("0 qo1%7 2;0 1 0".into()),
        };
        let retry_ck = "2 1700000000000 30000 999 1 broker-a 0 2";
        let records = vec![
            record("T", 1, 5, &[]),
            record("T", 1, 7, &[]),
            record("T", 0, 2, &[(property::POP_CK, retry_ck)]),
        ];
        let popped = popped_messages(&req, &h, records).expect("handles");
        assert_eq!(
            popped[0].extra_info,
            "5 1700000000000 30000 999 0 broker-a 1 5"
        );
        assert_eq!(
            popped[1].extra_info,
            "5 1700000000000 30000 999 0 broker-a 1 7"
        );
        assert_eq!(popped[1].message.reconsume_times(), 2, "orderCountInfo");
        assert_eq!(popped[0].message.reconsume_times(), 0);
        assert_eq!(popped[2].extra_info, retry_ck);
        assert_eq!(popped[2].message.queue.topic, "%RETRY%g_T");
        for p in &popped {
            let props = &p.message.record.properties;
            assert_eq!(props.get(property::POP_CK), Some(p.extra_info.as_str()));
            assert_eq!(props.get(property::FIRST_POP_TIME), Some("1700000000000"));
            assert_eq!(p.message.topic(), "T");
        }
    }
}
