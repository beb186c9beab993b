//! POP consumption over remoting: pop from a broker (any queue), ack, change the invisible
//! time, and send a message straight to the group's dead-letter queue.

use std::time::Duration;

use stellmq_remoting::net::RemotingError;
use stellmq_remoting::protocol::body::TopicRouteData;
use stellmq_remoting::protocol::headers::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    CommandHeader, ConsumerSendMsgBackRequestHeader, PopMessageRequestHeader,
    PopMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{now_ms, property, MessageRecord};
use stellmq_remoting::protocol::pop::{attach_handles, ExtraInfo, MAX_POP_MESSAGES};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::error::ClusterError;
use super::Cluster;

/// RocketMQ's `ConsumeInitMode.MAX`: a group without an offset starts at the queue's end.
const INIT_MODE_MAX: i32 = 1;

/// What to pop.
#[derive(Debug, Clone)]
pub struct PopRequest {
    pub group: String,
    pub topic: String,
    /// The broker the client named (its route queue's broker), if it serves the topic.
    pub broker_name: Option<String>,
    pub max_messages: i32,
    pub invisible_time_ms: i64,
    pub poll_time_ms: i64,
    /// `TAG` or `SQL92`, and the expression.
    pub expression_type: String,
    pub expression: String,
    pub fifo: bool,
    pub attempt_id: Option<String>,
    /// How long the broker may take (the client's remaining deadline).
    pub timeout: Duration,
}

/// A popped message and its receipt handle.
#[derive(Debug, Clone)]
pub struct Popped {
    pub record: MessageRecord,
    /// The broker's handle (`POP_CK`, eight fields).
    pub extra_info: ExtraInfo,
    /// Earlier deliveries (orderly POP: the broker's attempt count).
    pub reconsume_times: i32,
    /// A lite consumer's message: its lite topic (acks name it).
    pub lite_topic: Option<String>,
}

/// A broker's answer to a POP.
#[derive(Debug)]
pub enum PopOutcome {
    Found(Vec<Popped>),
    /// Nothing new within the polling time.
    NoNewMessage,
    /// The broker holds as many polls as it may.
    PollingFull,
}

impl Cluster {
    /// Pops from the named broker if it serves the topic, else from the next in turn.
    pub async fn pop(&self, request: &PopRequest) -> Result<PopOutcome, ClusterError> {
        let route = self.route(&request.topic).await?;
        let (broker_name, addr) =
            pick_readable_broker(&route, request.broker_name.as_deref(), self.next_turn())
                .ok_or_else(|| ClusterError::NoReadableQueue(request.topic.clone()))?;
        let header = PopMessageRequestHeader {
            consumer_group: request.group.clone(),
            topic: request.topic.clone(),
            queue_id: -1,
            max_msg_nums: request.max_messages.clamp(1, MAX_POP_MESSAGES),
            invisible_time: request.invisible_time_ms,
            poll_time: request.poll_time_ms,
            born_time: Some(now_ms()),
            init_mode: Some(INIT_MODE_MAX),
            exp_type: Some(request.expression_type.clone()),
            exp: Some(request.expression.clone()),
            order: Some(request.fifo),
            attempt_id: request.attempt_id.clone(),
        };
        let command = RemotingCommand::request(RequestCode::POP_MESSAGE, header.to_ext_fields());
        let stale = |e| self.noting_stale_route(&request.topic, e);
        let response = self
            .remoting
            .invoke(&addr, command, request.timeout)
            .await
            .map_err(|e| stale(e.into()))?;
        match ResponseCode::from_i32(response.code) {
            Some(ResponseCode::SUCCESS) => {}
            Some(ResponseCode::POLLING_FULL) => return Ok(PopOutcome::PollingFull),
            Some(ResponseCode::POLLING_TIMEOUT | ResponseCode::PULL_NOT_FOUND) => {
                return Ok(PopOutcome::NoNewMessage)
            }
            _ => return Err(stale(remote(&addr, &response))),
        }
        let header = PopMessageResponseHeader::from_ext_fields(&response.ext_fields)
            .map_err(|e| ClusterError::BadAnswer(format!("POP response header: {e}")))?;
        let mut records = MessageRecord::decode_all(response.body.clone(), false)
            .map_err(|e| ClusterError::BadAnswer(format!("POP response body: {e}")))?;
        attach_handles(&broker_name, request.fifo, &header, &mut records)
            .map_err(|e| ClusterError::BadAnswer(format!("POP response header: {e}")))?;
        let mut popped = Vec::with_capacity(records.len());
        for mut record in records {
            let Some(Ok(extra_info)) = record
                .properties
                .get(property::POP_CK)
                .map(ExtraInfo::parse)
            else {
                tracing::warn!(broker = %broker_name, "a popped message without a usable POP_CK was skipped");
                continue;
            };
            // The client sees the topic it subscribed to, also for retried messages.
            record.topic = request.topic.clone();
            popped.push(Popped {
                reconsume_times: record.head.reconsume_times,
                record,
                extra_info,
                lite_topic: None,
            });
        }
        if popped.is_empty() {
            return Ok(PopOutcome::NoNewMessage);
        }
        Ok(PopOutcome::Found(popped))
    }

    /// Acks the message of `handle` for `group` (the topic the client names).
    pub async fn ack(
        &self,
        group: &str,
        topic: &str,
        handle: &ExtraInfo,
        lite_topic: Option<&str>,
    ) -> Result<(), ClusterError> {
        let addr = self.broker_addr(topic, &handle.broker_name).await?;
        let header = AckMessageRequestHeader {
            consumer_group: group.to_owned(),
            topic: handle.real_topic(topic, group),
            queue_id: handle.queue_id,
            extra_info: handle.to_string(),
            offset: handle.queue_offset.unwrap_or(handle.ck_queue_offset),
            lite_topic: lite_topic.map(str::to_owned),
        };
        let command = RemotingCommand::request(RequestCode::ACK_MESSAGE, header.to_ext_fields());
        self.call_broker(topic, &addr, command).await?;
        Ok(())
    }

    /// Makes the message of `handle` invisible for `invisible_time_ms` from now; the new
    /// handle.
    pub async fn change_invisible_time(
        &self,
        group: &str,
        topic: &str,
        handle: &ExtraInfo,
        invisible_time_ms: i64,
        lite_topic: Option<&str>,
    ) -> Result<ExtraInfo, ClusterError> {
        let addr = self.broker_addr(topic, &handle.broker_name).await?;
        let offset = handle.queue_offset.unwrap_or(handle.ck_queue_offset);
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: group.to_owned(),
            topic: handle.real_topic(topic, group),
            queue_id: handle.queue_id,
            extra_info: handle.to_string(),
            offset,
            invisible_time: invisible_time_ms,
            lite_topic: lite_topic.map(str::to_owned),
        };
        let command = RemotingCommand::request(
            RequestCode::CHANGE_MESSAGE_INVISIBLETIME,
            header.to_ext_fields(),
        );
        let response = self.call_broker(topic, &addr, command).await?;
        let answer = ChangeInvisibleTimeResponseHeader::from_ext_fields(&response.ext_fields)
            .map_err(|e| ClusterError::BadAnswer(format!("change invisible time answer: {e}")))?;
        Ok(ExtraInfo {
            ck_queue_offset: offset,
            pop_time: answer.pop_time,
            invisible_time: answer.invisible_time,
            revive_qid: answer.revive_qid,
            topic_type: handle.topic_type,
            broker_name: handle.broker_name.clone(),
            queue_id: handle.queue_id,
            queue_offset: Some(offset),
        })
    }

    /// Sends the message at `commit_log_offset` straight to `group`'s dead-letter queue.
    pub async fn send_to_dead_letter_queue(
        &self,
        group: &str,
        topic: &str,
        handle: &ExtraInfo,
        commit_log_offset: i64,
        message_id: &str,
    ) -> Result<(), ClusterError> {
        let addr = self.broker_addr(topic, &handle.broker_name).await?;
        let header = ConsumerSendMsgBackRequestHeader {
            offset: commit_log_offset,
            group: group.to_owned(),
            delay_level: -1,
            origin_msg_id: Some(message_id.to_owned()),
            origin_topic: Some(handle.real_topic(topic, group)),
            unit_mode: Some(false),
            max_reconsume_times: Some(0),
        };
        let command =
            RemotingCommand::request(RequestCode::CONSUMER_SEND_MSG_BACK, header.to_ext_fields());
        self.call_broker(topic, &addr, command).await?;
        Ok(())
    }

    /// Sends `command` to the broker at `addr`, which serves `topic`; its answer when it is
    /// SUCCESS. A failure that says the cached route is stale drops it.
    pub(super) async fn call_broker(
        &self,
        topic: &str,
        addr: &str,
        command: RemotingCommand,
    ) -> Result<RemotingCommand, ClusterError> {
        let response = self
            .remoting
            .invoke(addr, command, self.timeout)
            .await
            .map_err(|e| self.noting_stale_route(topic, e.into()))?;
        if response.code != ResponseCode::SUCCESS.as_i32() {
            return Err(self.noting_stale_route(topic, remote(addr, &response)));
        }
        Ok(response)
    }

    /// The master address of `broker_name`, which must serve `topic`.
    pub(super) async fn broker_addr(
        &self,
        topic: &str,
        broker_name: &str,
    ) -> Result<String, ClusterError> {
        let route = self.route(topic).await?;
        route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == broker_name)
            .and_then(|b| b.master_addr())
            .map(str::to_owned)
            .ok_or_else(|| ClusterError::UnknownBroker(broker_name.to_owned()))
    }
}

/// The named broker when it has readable queues of the topic, else one in turn.
pub(super) fn pick_readable_broker(
    route: &TopicRouteData,
    wanted: Option<&str>,
    turn: usize,
) -> Option<(String, String)> {
    const PERM_READ: i32 = 4;
    let mut readable: Vec<(String, String)> = route
        .queue_datas
        .iter()
        .filter(|q| q.perm & PERM_READ != 0 && q.read_queue_nums > 0)
        .filter_map(|q| {
            route
                .broker_datas
                .iter()
                .find(|b| b.broker_name == q.broker_name)
                .and_then(|b| b.master_addr())
                .map(|addr| (q.broker_name.clone(), addr.to_owned()))
        })
        .collect();
    readable.sort();
    if let Some(wanted) = wanted {
        if let Some(hit) = readable.iter().find(|(name, _)| name == wanted) {
            return Some(hit.clone());
        }
    }
    if readable.is_empty() {
        return None;
    }
    let index = turn % readable.len();
    Some(readable.swap_remove(index))
}

pub(super) fn remote(addr: &str, response: &RemotingCommand) -> ClusterError {
    ClusterError::Remoting(RemotingError::Remote {
        addr: addr.to_owned(),
        code: response.code,
        remark: response.remark_str().to_owned(),
    })
}
