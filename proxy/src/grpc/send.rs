//! SendMessage and EndTransaction.

use stellmq_remoting::protocol::message::id::decode_offset_msg_id;
use stellmq_remoting::protocol::message::property;

use super::message::{kind_of, prepare};
use super::status::{common_status, ok, status, Refusal};
use super::{topic_name, Caller, Proxy};
use crate::cluster::{HalfMessage, Resolution, SendStatus, TopicMessageType};
use crate::pb::{
    Code, EndTransactionRequest, EndTransactionResponse, MessageType, SendMessageRequest,
    SendMessageResponse, SendResultEntry, TransactionResolution, TransactionSource,
};

pub async fn send_message(
    proxy: &Proxy,
    caller: Caller,
    request: SendMessageRequest,
) -> Result<SendMessageResponse, Refusal> {
    let first = request
        .messages
        .first()
        .ok_or_else(|| Refusal::new(Code::MessageCorrupted, "no message to send"))?;
    if request.messages.iter().any(|m| m.topic != first.topic) {
        return Err(Refusal::new(
            Code::MessageCorrupted,
            "the messages of one send must share a topic",
        ));
    }
    let topic = topic_name(first.topic.as_ref())?;
    let peer = caller.peer_text();
    let mut prepared = request
        .messages
        .iter()
        .map(|m| prepare(m, &proxy.config, &peer))
        .collect::<Result<Vec<_>, _>>()?;
    // The producer group of every send through the proxy is its topic (as RocketMQ's proxy
    // does): brokers check halves against it and send transaction checks to it.
    for p in &mut prepared {
        p.outgoing
            .properties
            .insert(property::PGROUP, topic.clone());
    }
    if proxy.config.enable_topic_message_type_check {
        let topic_kind = proxy.cluster.topic_message_type(&topic).await?;
        for p in &prepared {
            check_kind(&topic, topic_kind, kind_of(&p.outgoing.properties))?;
        }
    }
    let Some(first) = prepared.first() else {
        return Err(Refusal::new(Code::MessageCorrupted, "no message to send"));
    };
    let sys_flag = first.sys_flag;
    let transactional = first.kind == MessageType::Transaction;
    let message_group = match prepared.as_slice() {
        [only] => only.message_group.clone(),
        _ => None,
    };
    let ids: Vec<String> = prepared.iter().map(|p| p.message_id.clone()).collect();
    let outgoing = prepared.into_iter().map(|p| p.outgoing).collect();
    let outcome = proxy
        .cluster
        .send(&topic, outgoing, sys_flag, message_group.as_deref())
        .await?;
    let code = match outcome.status {
        SendStatus::Ok => Code::Ok,
        SendStatus::FlushDiskTimeout => Code::MasterPersistenceTimeout,
        SendStatus::FlushSlaveTimeout => Code::SlavePersistenceTimeout,
        SendStatus::SlaveNotAvailable => Code::HaNotAvailable,
    };
    // A broker that names no transaction id (4.x brokers do not) is answered for by the
    // message id, which is what 4.x clients use as the transaction id.
    let transaction_id = if transactional {
        outcome
            .transaction_id
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| ids.first().cloned().unwrap_or_default())
    } else {
        outcome.transaction_id.clone().unwrap_or_default()
    };
    if transactional && code == Code::Ok {
        if let Some(half) = half_of(&topic, &ids, &transaction_id, &outcome) {
            proxy.transactions.remember(half);
        }
    }
    let entry = if code == Code::Ok {
        SendResultEntry {
            status: Some(ok()),
            message_id: ids.join(","),
            transaction_id,
            offset: outcome.queue_offset,
            recall_handle: outcome.recall_handle.clone().unwrap_or_default(),
        }
    } else {
        SendResultEntry {
            status: Some(status(code, code.as_str_name())),
            ..Default::default()
        }
    };
    Ok(SendMessageResponse {
        status: Some(common_status([code as i32])),
        entries: vec![entry],
    })
}

/// A message's kind must be the topic's (or the topic MIXED), as RocketMQ 5 checks.
pub(super) fn check_kind(
    topic: &str,
    topic_kind: TopicMessageType,
    kind: MessageType,
) -> Result<(), Refusal> {
    let matches = match topic_kind {
        TopicMessageType::Mixed => true,
        TopicMessageType::Normal => kind == MessageType::Normal,
        TopicMessageType::Fifo => kind == MessageType::Fifo,
        TopicMessageType::Delay => kind == MessageType::Delay,
        TopicMessageType::Transaction => kind == MessageType::Transaction,
        TopicMessageType::Priority => kind == MessageType::Priority,
        TopicMessageType::Lite => kind == MessageType::Lite,
        TopicMessageType::Unspecified => false,
    };
    if matches {
        return Ok(());
    }
    Err(Refusal::new(
        Code::MessagePropertyConflictWithType,
        format!(
            "current message type {} does not match topic {topic}'s message type {}",
            kind.as_str_name(),
            topic_kind.name()
        ),
    ))
}

/// What END_TRANSACTION will need of a half just sent.
fn half_of(
    topic: &str,
    ids: &[String],
    transaction_id: &str,
    outcome: &crate::cluster::SendOutcome,
) -> Option<HalfMessage> {
    let (_, commit_log_offset) = decode_offset_msg_id(&outcome.offset_msg_id).ok()?;
    Some(HalfMessage {
        broker_addr: outcome.broker_addr.clone(),
        topic: topic.to_owned(),
        msg_id: ids.first().cloned().unwrap_or_default(),
        transaction_id: transaction_id.to_owned(),
        commit_log_offset,
        tran_state_table_offset: outcome.queue_offset,
    })
}

pub async fn end_transaction(
    proxy: &Proxy,
    _caller: Caller,
    request: EndTransactionRequest,
) -> Result<EndTransactionResponse, Refusal> {
    let topic = topic_name(request.topic.as_ref())?;
    if request.transaction_id.trim().is_empty() {
        return Err(Refusal::new(
            Code::InvalidTransactionId,
            "transaction id is blank",
        ));
    }
    let resolution = match TransactionResolution::try_from(request.resolution) {
        Ok(TransactionResolution::Commit) => Resolution::Commit,
        Ok(TransactionResolution::Rollback) => Resolution::Rollback,
        _ => Resolution::Unknown,
    };
    let mut half = proxy
        .transactions
        .take(&topic, &request.transaction_id)
        .ok_or_else(|| {
            Refusal::new(
                Code::InternalServerError,
                format!(
                    "cannot find transaction data of transaction {} (unknown, ended already, or older than {} ms)",
                    request.transaction_id, proxy.config.transaction_data_expire_millis
                ),
            )
        })?;
    if !request.message_id.is_empty() {
        half.msg_id = request.message_id.clone();
    }
    let from_check = request.source == TransactionSource::SourceServerCheck as i32;
    proxy
        .cluster
        .end_transaction(&half, resolution, from_check)
        .await?;
    Ok(EndTransactionResponse { status: Some(ok()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_must_match_the_topic() {
        assert!(check_kind("T", TopicMessageType::Normal, MessageType::Normal).is_ok());
        assert!(check_kind("T", TopicMessageType::Mixed, MessageType::Fifo).is_ok());
        let refused = check_kind("T", TopicMessageType::Fifo, MessageType::Normal).unwrap_err();
        assert_eq!(refused.code, Code::MessagePropertyConflictWithType);
        assert!(refused.message.contains("FIFO"), "{}", refused.message);
    }
}
