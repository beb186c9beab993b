//! The broker's calls to this client, on any connection of a client instance: a consumer
//! group's members changed (rebalance now), an offset reset, a transaction check for a
//! producer group, a reply pushed to a waiting request, and the questions about a running
//! consumer ([`crate::probe`]). Each goes to what the producers and consumers of the instance
//! registered in the tables below.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::Mutex;
use stellmq_remoting::net::{Channel, InboundHandler};
use stellmq_remoting::protocol::body::{fastjson, MessageQueue, ResetOffsetBody};
use stellmq_remoting::protocol::headers::{
    CheckTransactionStateRequestHeader, CommandHeader, ReplyMessageRequestHeader,
    ResetOffsetRequestHeader,
};
use stellmq_remoting::protocol::message::{property, MessageRecord};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use tokio::sync::{oneshot, Notify};

use crate::message::ReceivedMessage;
use crate::probe::{self, Probes};

/// Rebalance triggers of the consumer groups running on one instance.
pub(crate) type Consumers = Arc<Mutex<HashMap<String, Weak<Notify>>>>;

/// Answers CHECK_TRANSACTION_STATE for one producer group: given the connection the check
/// came on, its header and the half message.
pub(crate) type TransactionCheck =
    dyn Fn(Channel, CheckTransactionStateRequestHeader, MessageRecord) + Send + Sync;

/// The transaction check of each transactional producer group running on one instance.
pub(crate) type Checkers = Arc<Mutex<HashMap<String, Arc<TransactionCheck>>>>;

/// The broker moved a consumer group's offsets (RESET_CONSUMER_CLIENT_OFFSET, after
/// `mqadmin resetOffsetByTime`): each queue's new offset.
#[derive(Debug, Clone)]
pub(crate) struct OffsetResetNotice {
    pub offsets: Vec<(MessageQueue, i64)>,
}

/// Applies offset resets to one consumer group running on the instance.
pub(crate) type OffsetReset = dyn Fn(OffsetResetNotice) + Send + Sync;

/// The offset-reset hook of each consumer group running on one instance.
pub(crate) type OffsetResets = Arc<Mutex<HashMap<String, Arc<OffsetReset>>>>;

/// Requests waiting for their reply, by correlation id.
pub(crate) type PendingReplies = Arc<Mutex<HashMap<String, oneshot::Sender<ReceivedMessage>>>>;

/// Answers the broker's calls to this client.
pub(crate) struct ClientCalls {
    pub consumers: Consumers,
    pub resets: OffsetResets,
    pub probes: Probes,
    pub checkers: Checkers,
    pub replies: PendingReplies,
}

impl InboundHandler for ClientCalls {
    fn on_request(&self, channel: Channel, request: RemotingCommand, _received_at: Instant) {
        match request.request_code_typed() {
            Some(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED) => {
                let group = request.ext_fields.get("consumerGroup");
                for (name, notify) in self.consumers.lock().iter() {
                    if group.is_none_or(|g| g == name) {
                        if let Some(notify) = notify.upgrade() {
                            notify.notify_one();
                        }
                    }
                }
            }
            Some(RequestCode::RESET_CONSUMER_CLIENT_OFFSET) => {
                reset_offsets(&request, &self.resets);
            }
            Some(RequestCode::CHECK_TRANSACTION_STATE) => {
                check_transaction(channel, &request, &self.checkers);
            }
            Some(RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT) => {
                deliver_reply(&channel, &request, &self.replies);
            }
            Some(RequestCode::GET_CONSUMER_RUNNING_INFO) => {
                probe::running_info(&channel, &request, &self.probes);
            }
            Some(RequestCode::GET_CONSUMER_STATUS_FROM_CLIENT) => {
                probe::consumer_status(&channel, &request, &self.probes);
            }
            Some(RequestCode::CONSUME_MESSAGE_DIRECTLY) => {
                probe::consume_directly(channel, request, &self.probes);
            }
            _ if !request.is_oneway() => {
                channel.try_send(request.not_supported_to());
            }
            _ => {}
        }
    }
}

/// RESET_CONSUMER_CLIENT_OFFSET: hands the new offsets to the group's consumer, if it runs
/// here.
fn reset_offsets(request: &RemotingCommand, resets: &OffsetResets) {
    let Ok(header) = ResetOffsetRequestHeader::from_ext_fields(&request.ext_fields) else {
        tracing::warn!("offset reset without a usable header");
        return;
    };
    let Some(reset) = resets.lock().get(&header.group).cloned() else {
        return;
    };
    let body: ResetOffsetBody = match fastjson::decode(&request.body) {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(group = %header.group, error = %e, "offset reset with an unreadable body");
            return;
        }
    };
    let offsets = body
        .offset_table
        .0
        .into_iter()
        .filter(|(mq, _)| mq.topic == header.topic)
        .collect();
    tracing::info!(group = %header.group, topic = %header.topic, timestamp = header.timestamp, "the broker reset the group's offsets");
    reset(OffsetResetNotice { offsets });
}

/// CHECK_TRANSACTION_STATE: hands the half to the check of its producer group (PGROUP), which
/// answers the broker on the same connection.
fn check_transaction(channel: Channel, request: &RemotingCommand, checkers: &Checkers) {
    let Ok(header) = CheckTransactionStateRequestHeader::from_ext_fields(&request.ext_fields)
    else {
        tracing::warn!("transaction check without a usable header");
        return;
    };
    let Ok((record, _)) = MessageRecord::decode(&request.body, false) else {
        tracing::warn!("transaction check without a decodable message");
        return;
    };
    let group = record
        .properties
        .get(property::PGROUP)
        .unwrap_or("")
        .to_owned();
    let Some(check) = checkers.lock().get(&group).cloned() else {
        tracing::warn!(%group, "transaction check for a group with no transactional producer here");
        return;
    };
    check(channel, header, record);
}

/// PUSH_REPLY_MESSAGE_TO_CLIENT: hands the reply to its waiting request and acknowledges.
fn deliver_reply(channel: &Channel, request: &RemotingCommand, pending: &PendingReplies) {
    let reply = ReplyMessageRequestHeader::from_ext_fields(&request.ext_fields)
        .map(|h| ReceivedMessage::from_reply(h, request.body.clone()));
    match reply {
        Ok(reply) => {
            let waiting = reply
                .record
                .properties
                .get(property::CORRELATION_ID)
                .and_then(|id| pending.lock().remove(id));
            match waiting {
                Some(tx) => {
                    let _ = tx.send(reply);
                }
                None => tracing::debug!("reply for a request no longer waiting"),
            }
            channel.try_send(request.success_to());
        }
        Err(e) => {
            channel.try_send(request.response_to(
                ResponseCode::SYSTEM_ERROR,
                Some(format!("bad reply header: {e}")),
            ));
        }
    }
}
