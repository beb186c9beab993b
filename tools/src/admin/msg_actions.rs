//! What `queryMsgById` does besides printing: hand messages to a running consumer, whose
//! listener consumes them directly (`-g group -d clientId`, CONSUME_MESSAGE_DIRECTLY through
//! the broker that stores each one), or send them again to their topics (`-s true`).
#![allow(clippy::print_stdout)] // CLI output

use stellmq_client::{AdminClient, ClientError, Message};
use stellmq_remoting::protocol::body::ConsumeMessageDirectlyResult;
use stellmq_remoting::protocol::message::{id, MessageRecord};

use super::message::QueryById;
use super::session::{send_result_text, Session};

/// Java's `ConsumeMessageDirectlyResult.toString()`.
fn direct_result_text(r: &ConsumeMessageDirectlyResult) -> String {
    format!(
        "ConsumeMessageDirectlyResult [order={}, autoCommit={}, consumeResult={}, remark={}, spentTimeMills={}]",
        r.order,
        r.auto_commit,
        r.consume_result.name(),
        r.remark.as_deref().unwrap_or("null"),
        r.spent_time_mills
    )
}

/// The broker storing `msg_id` (an offset message id) and the message itself.
async fn stored(admin: &AdminClient, msg_id: &str) -> Result<(String, MessageRecord), ClientError> {
    let (addr, offset) = id::decode_offset_msg_id(msg_id)
        .map_err(|e| ClientError::Invalid(format!("{msg_id} is not an offset message id: {e}")))?;
    let broker = addr.to_string();
    let message = admin.view_message(&broker, offset).await?;
    Ok((broker, message))
}

/// `-g -d`: each message goes to `client_id` of `group`; its listener's verdict is printed.
pub async fn consume_directly(
    admin: &AdminClient,
    group: &str,
    client_id: &str,
    a: &QueryById,
) -> Result<(), ClientError> {
    for msg_id in a.id_list() {
        let (broker, message) = stored(admin, msg_id).await?;
        let result = admin
            .consume_message_directly(&broker, group, client_id, msg_id, Some(&message.topic))
            .await?;
        crate::outln!("{}", direct_result_text(&result));
    }
    Ok(())
}

/// `-s true`: each message is sent again (same topic, body and properties) by producer group
/// `ReSendMsgById`.
pub async fn resend(
    admin: &AdminClient,
    session: &Session,
    a: &QueryById,
) -> Result<(), ClientError> {
    if let Some(unit) = &a.unit_name {
        eprintln!("unit name {unit} ignored: StellMQ has no units");
    }
    let producer = session.producer("ReSendMsgById").await?;
    let result = resend_each(admin, &producer, a).await;
    producer.shutdown().await;
    result
}

async fn resend_each(
    admin: &AdminClient,
    producer: &stellmq_client::Producer,
    a: &QueryById,
) -> Result<(), ClientError> {
    for msg_id in a.id_list() {
        let (_, m) = stored(admin, msg_id).await?;
        let body = m
            .uncompressed_body(64 << 20)
            .unwrap_or_else(|_| m.body.clone());
        let mut msg = Message::new(m.topic.clone(), body);
        msg.flag = m.head.flag;
        for (k, v) in m.properties.iter() {
            msg = msg.with_property(k, v);
        }
        crate::outln!("prepare resend msg. originalMsgId={msg_id}");
        let sent = producer.send(msg).await?;
        crate::outln!("{}", send_result_text(&sent));
    }
    Ok(())
}
