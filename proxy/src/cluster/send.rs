//! Sends: the queue (round robin over the masters' writable queues, or one fixed queue per
//! message group), SEND_MESSAGE_V2 for one message and SEND_BATCH_MESSAGE for several, and
//! the broker's answer. The producer group of every send is its topic, as RocketMQ's proxy
//! does (so the broker's transaction checks find the proxy by topic).

use bytes::Bytes;
use stellmq_remoting::net::RemotingError;
use stellmq_remoting::protocol::body::TopicRouteData;
use stellmq_remoting::protocol::headers::{
    CommandHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{batch, java_string_hash, Properties};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::error::ClusterError;
use super::Cluster;

/// RocketMQ's default topic, named in every send header.
const DEFAULT_TOPIC: &str = "TBW102";

/// One message as the broker will store it.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub body: Bytes,
    pub properties: Properties,
    pub born_timestamp: i64,
}

/// How the broker stored a message (RocketMQ's SendStatus).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    Ok,
    FlushDiskTimeout,
    FlushSlaveTimeout,
    SlaveNotAvailable,
}

/// A send the broker answered.
#[derive(Debug, Clone)]
pub struct SendOutcome {
    pub status: SendStatus,
    pub broker_name: String,
    pub broker_addr: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    /// The broker's offset message id (store host + CommitLog offset); for a batch, joined
    /// with ','.
    pub offset_msg_id: String,
    pub transaction_id: Option<String>,
    /// A timer message's recall handle (RocketMQ 5.3.2+ brokers).
    pub recall_handle: Option<String>,
}

/// A writable queue of a master.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    broker_name: String,
    addr: String,
    queue_id: i32,
}

impl Cluster {
    /// Sends `messages` (one topic; more than one = a batch) with `sys_flag`; with a message
    /// group, to the queue that group always goes to.
    pub async fn send(
        &self,
        topic: &str,
        messages: Vec<Outgoing>,
        sys_flag: i32,
        message_group: Option<&str>,
    ) -> Result<SendOutcome, ClusterError> {
        let route = self.route(topic).await?;
        let targets = writable_queues(&route);
        if targets.is_empty() {
            return Err(ClusterError::NoWritableQueue(topic.to_owned()));
        }
        let index = match message_group {
            Some(group) => consistent_hash(i64::from(java_string_hash(group)), targets.len()),
            None => self.next_turn() % targets.len(),
        };
        let target = targets
            .get(index)
            .ok_or_else(|| ClusterError::NoWritableQueue(topic.to_owned()))?;
        let request = build_request(topic, target, messages, sys_flag)?;
        let response = self
            .remoting
            .invoke(&target.addr, request, self.timeout)
            .await;
        let answer = response
            .map_err(ClusterError::from)
            .and_then(|response| read_answer(target, &response));
        answer.map_err(|e| self.noting_stale_route(topic, e))
    }
}

/// The request for `messages` to `target`.
fn build_request(
    topic: &str,
    target: &Target,
    mut messages: Vec<Outgoing>,
    sys_flag: i32,
) -> Result<RemotingCommand, ClusterError> {
    let is_batch = messages.len() > 1;
    let first = messages
        .first()
        .ok_or_else(|| ClusterError::BadAnswer("no message to send".into()))?;
    let born = first.born_timestamp;
    let header = SendMessageRequestHeader {
        producer_group: topic.to_owned(),
        topic: topic.to_owned(),
        default_topic: DEFAULT_TOPIC.to_owned(),
        default_topic_queue_nums: 4,
        queue_id: target.queue_id,
        sys_flag,
        born_timestamp: born,
        flag: 0,
        properties: (!is_batch).then(|| first.properties.encode()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        batch: Some(is_batch),
        max_reconsume_times: None,
        broker_name: Some(target.broker_name.clone()),
    };
    let header = SendMessageRequestHeaderV2::from(header);
    if is_batch {
        let items: Vec<batch::BatchItem> = messages
            .drain(..)
            .map(|m| batch::BatchItem {
                flag: 0,
                body: m.body,
                properties: m.properties.encode(),
            })
            .collect();
        let body = batch::encode(&items);
        return Ok(RemotingCommand::request(
            RequestCode::SEND_BATCH_MESSAGE,
            header.to_ext_fields(),
        )
        .with_body(body));
    }
    let body = messages.swap_remove(0).body;
    Ok(
        RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, header.to_ext_fields())
            .with_body(body),
    )
}

/// The broker's answer to a send: stored (maybe not yet flushed or replicated) or refused.
fn read_answer(target: &Target, response: &RemotingCommand) -> Result<SendOutcome, ClusterError> {
    let status = match ResponseCode::from_i32(response.code) {
        Some(ResponseCode::SUCCESS) => SendStatus::Ok,
        Some(ResponseCode::FLUSH_DISK_TIMEOUT) => SendStatus::FlushDiskTimeout,
        Some(ResponseCode::FLUSH_SLAVE_TIMEOUT) => SendStatus::FlushSlaveTimeout,
        Some(ResponseCode::SLAVE_NOT_AVAILABLE) => SendStatus::SlaveNotAvailable,
        _ => {
            return Err(ClusterError::Remoting(RemotingError::Remote {
                addr: target.addr.clone(),
                code: response.code,
                remark: response.remark_str().to_owned(),
            }))
        }
    };
    let header = SendMessageResponseHeader::from_ext_fields(&response.ext_fields)
        .map_err(|e| ClusterError::BadAnswer(format!("send response header: {e}")))?;
    Ok(SendOutcome {
        status,
        broker_name: target.broker_name.clone(),
        broker_addr: target.addr.clone(),
        queue_id: header.queue_id,
        queue_offset: header.queue_offset,
        offset_msg_id: header.msg_id,
        transaction_id: header.transaction_id,
        recall_handle: header.recall_handle,
    })
}

/// Every writable queue of every master of the route, in a stable order.
fn writable_queues(route: &TopicRouteData) -> Vec<Target> {
    const PERM_WRITE: i32 = 2;
    let mut targets = Vec::new();
    let mut queue_datas: Vec<_> = route.queue_datas.iter().collect();
    queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    for q in queue_datas {
        if q.perm & PERM_WRITE == 0 {
            continue;
        }
        let Some(addr) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name)
            .and_then(|b| b.master_addr())
        else {
            continue;
        };
        for queue_id in 0..q.write_queue_nums.max(0) {
            targets.push(Target {
                broker_name: q.broker_name.clone(),
                addr: addr.to_owned(),
                queue_id,
            });
        }
    }
    targets
}

/// Guava's `Hashing.consistentHash(long, int)` (what RocketMQ's proxy picks a message
/// group's queue with): a bucket in `0..buckets` that moves for few inputs when `buckets`
/// grows.
fn consistent_hash(input: i64, buckets: usize) -> usize {
    let buckets = buckets.max(1) as i64;
    let mut state = input as u64;
    let mut candidate: i64 = 0;
    loop {
        state = state
            .wrapping_mul(2_862_933_555_777_941_757)
            .wrapping_add(1);
        let step = ((state >> 33) as i32 as f64 + 1.0) / 2_147_483_648.0;
        let next = ((candidate + 1) as f64 / step) as i64;
        if next >= 0 && next < buckets {
            candidate = next;
        } else {
            return candidate as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consistent_hash_stays_in_range_and_is_stable() {
        for buckets in 1..20 {
            for input in [-5_i64, 0, 1, 42, i64::from(i32::MAX), i64::from(i32::MIN)] {
                let b = consistent_hash(input, buckets);
                assert!(b < buckets);
                assert_eq!(b, consistent_hash(input, buckets));
            }
        }
        // Growing the bucket count moves an input only to the new bucket.
        for input in 0..200 {
            let before = consistent_hash(input, 8);
            let after = consistent_hash(input, 9);
            assert!(
                after == before || after == 8,
                "{input}: {before} -> {after}"
            );
        }
    }
}
