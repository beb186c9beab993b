//! RocketMQ 5.5's lite topics over remoting: a lite consumer's POP (POP_LITE_MESSAGE), and
//! its subscriptions (LITE_SUBSCRIPTION_CTL to every master of the parent topic).

use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::lite::{LiteSubscriptionCtlRequestBody, LiteSubscriptionDto};
use stellmq_remoting::protocol::headers::{
    CommandHeader, PopLiteMessageRequestHeader, PopLiteMessageResponseHeader,
};
use stellmq_remoting::protocol::lite::LMQ_QUEUE_ID;
use stellmq_remoting::protocol::message::{now_ms, property, MessageRecord};
use stellmq_remoting::protocol::pop::{ExtraInfo, TopicType, MAX_POP_MESSAGES};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use super::consume::{pick_readable_broker, remote, PopOutcome, PopRequest, Popped};
use super::error::ClusterError;
use super::Cluster;

/// A lite subscription change for every master of the parent topic.
#[derive(Debug, Clone)]
pub struct LiteSubscription {
    /// `PARTIAL_ADD`, `PARTIAL_REMOVE`, `COMPLETE_ADD` or `COMPLETE_REMOVE`.
    pub action: &'static str,
    pub client_id: String,
    pub group: String,
    pub topic: String,
    pub lite_topics: Vec<String>,
    pub version: Option<i64>,
}

impl Cluster {
    /// POP_LITE_MESSAGE for `client_id` from the named broker (or the next in turn). Each
    /// message's handle names its lite topic's queue offset (`INNER_MULTI_QUEUE_OFFSET`).
    pub async fn pop_lite(
        &self,
        request: &PopRequest,
        client_id: &str,
    ) -> Result<PopOutcome, ClusterError> {
        let route = self.route(&request.topic).await?;
        let (broker_name, addr) =
            pick_readable_broker(&route, request.broker_name.as_deref(), self.next_turn())
                .ok_or_else(|| ClusterError::NoReadableQueue(request.topic.clone()))?;
        let header = PopLiteMessageRequestHeader {
            client_id: client_id.to_owned(),
            consumer_group: request.group.clone(),
            topic: request.topic.clone(),
            max_msg_num: request.max_messages.clamp(1, MAX_POP_MESSAGES),
            invisible_time: request.invisible_time_ms,
            poll_time: request.poll_time_ms,
            born_time: now_ms(),
            attempt_id: request.attempt_id.clone(),
        };
        let command =
            RemotingCommand::request(RequestCode::POP_LITE_MESSAGE, header.to_ext_fields());
        let response = self
            .remoting
            .invoke(&addr, command, request.timeout)
            .await
            .map_err(|e| self.noting_stale_route(&request.topic, e.into()))?;
        match ResponseCode::from_i32(response.code) {
            Some(ResponseCode::SUCCESS) => {}
            Some(ResponseCode::POLLING_FULL) => return Ok(PopOutcome::PollingFull),
            Some(ResponseCode::POLLING_TIMEOUT | ResponseCode::PULL_NOT_FOUND) => {
                return Ok(PopOutcome::NoNewMessage)
            }
            _ => return Err(remote(&addr, &response)),
        }
        let h = PopLiteMessageResponseHeader::from_ext_fields(&response.ext_fields)
            .map_err(|e| ClusterError::BadAnswer(format!("POP_LITE response header: {e}")))?;
        let records = MessageRecord::decode_all(response.body.clone(), false)
            .map_err(|e| ClusterError::BadAnswer(format!("POP_LITE response body: {e}")))?;
        let counts: Vec<i32> = h
            .order_count_info
            .as_deref()
            .unwrap_or("")
            .split(';')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        let counted = counts.len() == records.len();
        let mut popped = Vec::with_capacity(records.len());
        for (i, mut record) in records.into_iter().enumerate() {
            let offset = record
                .properties
                .get(property::INNER_MULTI_QUEUE_OFFSET)
                .and_then(|o| o.trim().parse::<i64>().ok());
            let (Some(offset), Some(lite)) = (
                offset,
                record
                    .properties
                    .get(property::LITE_TOPIC)
                    .map(str::to_owned),
            ) else {
                tracing::warn!(broker = %broker_name, "a lite message without its lite topic or offset was skipped");
                continue;
            };
            record.topic = request.topic.clone();
            popped.push(Popped {
                reconsume_times: if counted {
                    counts.get(i).copied().unwrap_or(0)
                } else {
                    0
                },
                record,
                extra_info: ExtraInfo {
                    ck_queue_offset: 0,
                    pop_time: h.pop_time,
                    invisible_time: h.invisible_time,
                    revive_qid: h.revive_qid,
                    topic_type: TopicType::Normal,
                    broker_name: broker_name.clone(),
                    queue_id: LMQ_QUEUE_ID,
                    queue_offset: Some(offset),
                },
                lite_topic: Some(lite),
            });
        }
        if popped.is_empty() {
            return Ok(PopOutcome::NoNewMessage);
        }
        Ok(PopOutcome::Found(popped))
    }

    /// Sends a lite subscription change to every master serving the parent topic; the
    /// first refusal is the answer.
    pub async fn sync_lite_subscription(
        &self,
        change: &LiteSubscription,
    ) -> Result<(), ClusterError> {
        let route = self.route(&change.topic).await?;
        let body = LiteSubscriptionCtlRequestBody {
            subscription_set: vec![LiteSubscriptionDto {
                action: change.action.to_owned(),
                client_id: change.client_id.clone(),
                group: change.group.clone(),
                topic: change.topic.clone(),
                lite_topic_set: change.lite_topics.clone(),
                version: change.version,
            }],
        };
        let body = fastjson::encode(&body);
        let mut masters: Vec<String> = route
            .queue_datas
            .iter()
            .filter(|q| q.read_queue_nums > 0)
            .filter_map(|q| {
                route
                    .broker_datas
                    .iter()
                    .find(|b| b.broker_name == q.broker_name)
                    .and_then(|b| b.master_addr())
                    .map(str::to_owned)
            })
            .collect();
        masters.sort();
        masters.dedup();
        if masters.is_empty() {
            return Err(ClusterError::NoReadableQueue(change.topic.clone()));
        }
        for addr in masters {
            let command =
                RemotingCommand::request(RequestCode::LITE_SUBSCRIPTION_CTL, ExtFields::default())
                    .with_body(body.clone());
            self.call_broker(&change.topic, &addr, command).await?;
        }
        Ok(())
    }
}
