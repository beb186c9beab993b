//! AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue, and the receipt
//! handle clients get: the broker's POP handle plus the message's CommitLog offset (nine
//! fields, as RocketMQ's proxy hands them out).

use stellmq_remoting::protocol::message::now_ms;
use stellmq_remoting::protocol::pop::ExtraInfo;

use super::message::duration_ms;
use super::status::{common_status, ok, status, Refusal};
use super::{group_name, topic_name, Caller, Proxy};
use crate::cluster::Popped;
use crate::pb::{
    AckMessageRequest, AckMessageResponse, AckMessageResultEntry, ChangeInvisibleDurationRequest,
    ChangeInvisibleDurationResponse, Code, ForwardMessageToDeadLetterQueueRequest,
    ForwardMessageToDeadLetterQueueResponse,
};

/// Most entries one AckMessage may carry.
const MAX_ACK_ENTRIES: usize = 1024;

/// The handle a client gets for a popped message.
pub fn receipt_handle(p: &Popped) -> String {
    format!("{} {}", p.extra_info, p.record.head.physical_offset)
}

/// A client's receipt handle: the broker's handle and the CommitLog offset, when given;
/// refused when malformed or expired.
pub fn parse_handle(text: &str) -> Result<(ExtraInfo, Option<i64>), Refusal> {
    let invalid = |why: String| Refusal::new(Code::InvalidReceiptHandle, why);
    let fields = text.split(' ').count();
    let (broker_part, commit_log_offset) = if fields == 9 {
        let (head, last) = text
            .rsplit_once(' ')
            .ok_or_else(|| invalid("receipt handle is malformed".into()))?;
        let offset = last.parse::<i64>().map_err(|_| {
            invalid("the commit log offset of the receipt handle is not a number".into())
        })?;
        (head, Some(offset))
    } else {
        (text, None)
    };
    let handle = ExtraInfo::parse(broker_part).map_err(|e| invalid(e.to_string()))?;
    if handle.deadline() <= now_ms() {
        return Err(invalid("receipt handle is expired".into()));
    }
    Ok((handle, commit_log_offset))
}

pub async fn ack_message(
    proxy: &Proxy,
    caller: Caller,
    request: AckMessageRequest,
) -> Result<AckMessageResponse, Refusal> {
    let topic = topic_name(request.topic.as_ref())?;
    let group = group_name(request.group.as_ref())?;
    if request.entries.len() > MAX_ACK_ENTRIES {
        return Err(Refusal::new(
            Code::BadRequest,
            format!("an ack may carry at most {MAX_ACK_ENTRIES} entries"),
        ));
    }
    let mut entries = Vec::with_capacity(request.entries.len());
    for entry in &request.entries {
        let current = proxy
            .renewals
            .take(&caller.client_id, &group, &entry.receipt_handle);
        let outcome = match parse_handle(&current) {
            Ok((handle, _)) => proxy
                .cluster
                .ack(&group, &topic, &handle, entry.lite_topic.as_deref())
                .await
                .map_err(Refusal::from),
            Err(refusal) => Err(refusal),
        };
        let entry_status = match outcome {
            Ok(()) => ok(),
            Err(refusal) => refusal.status(),
        };
        entries.push(AckMessageResultEntry {
            message_id: entry.message_id.clone(),
            receipt_handle: entry.receipt_handle.clone(),
            status: Some(entry_status),
        });
    }
    let top = common_status(
        entries
            .iter()
            .map(|e| e.status.as_ref().map_or(0, |s| s.code)),
    );
    Ok(AckMessageResponse {
        status: Some(top),
        entries,
    })
}

pub async fn change_invisible_duration(
    proxy: &Proxy,
    caller: Caller,
    request: ChangeInvisibleDurationRequest,
) -> Result<ChangeInvisibleDurationResponse, Refusal> {
    let topic = topic_name(request.topic.as_ref())?;
    let group = group_name(request.group.as_ref())?;
    let invisible = request
        .invisible_duration
        .as_ref()
        .map(duration_ms)
        .unwrap_or(0);
    let max = proxy.config.max_invisible_time_mills as i64;
    if !(0..=max).contains(&invisible) {
        return Err(Refusal::new(
            Code::IllegalInvisibleTime,
            format!("the invisible time must be within 0 and {max} ms, not {invisible}"),
        ));
    }
    let current = proxy
        .renewals
        .take(&caller.client_id, &group, &request.receipt_handle);
    let (handle, commit_log_offset) = match parse_handle(&current) {
        Ok(parsed) => parsed,
        Err(refusal) => {
            // Clients keep whatever handle comes back: give theirs back with the refusal.
            return Ok(ChangeInvisibleDurationResponse {
                status: Some(refusal.status()),
                receipt_handle: request.receipt_handle,
            });
        }
    };
    match proxy
        .cluster
        .change_invisible_time(
            &group,
            &topic,
            &handle,
            invisible,
            request.lite_topic.as_deref(),
        )
        .await
    {
        Ok(renewed) => {
            let receipt_handle = match commit_log_offset {
                Some(offset) => format!("{renewed} {offset}"),
                None => renewed.to_string(),
            };
            Ok(ChangeInvisibleDurationResponse {
                status: Some(ok()),
                receipt_handle,
            })
        }
        Err(e) => Ok(ChangeInvisibleDurationResponse {
            status: Some(Refusal::from(e).status()),
            receipt_handle: request.receipt_handle,
        }),
    }
}

pub async fn forward_to_dead_letter_queue(
    proxy: &Proxy,
    caller: Caller,
    request: ForwardMessageToDeadLetterQueueRequest,
) -> Result<ForwardMessageToDeadLetterQueueResponse, Refusal> {
    let topic = topic_name(request.topic.as_ref())?;
    let group = group_name(request.group.as_ref())?;
    let current = proxy
        .renewals
        .take(&caller.client_id, &group, &request.receipt_handle);
    let (handle, commit_log_offset) = parse_handle(&current)?;
    let commit_log_offset = commit_log_offset.ok_or_else(|| {
        Refusal::new(
            Code::InvalidReceiptHandle,
            "the receipt handle has no commit log offset",
        )
    })?;
    proxy
        .cluster
        .send_to_dead_letter_queue(
            &group,
            &topic,
            &handle,
            commit_log_offset,
            &request.message_id,
        )
        .await?;
    if let Err(e) = proxy
        .cluster
        .ack(&group, &topic, &handle, request.lite_topic.as_deref())
        .await
    {
        tracing::warn!(%group, %topic, error = %e, "ack after moving a message to the DLQ failed");
    }
    Ok(ForwardMessageToDeadLetterQueueResponse {
        status: Some(status(Code::Ok, "OK")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_carry_the_commit_log_offset_and_expire() {
        let live = now_ms() + 60_000;
        let text = format!("5 {live} 0 3 0 broker-a 1 7 123456");
        let (handle, offset) = parse_handle(&text).unwrap();
        assert_eq!(handle.broker_name, "broker-a");
        assert_eq!(handle.queue_offset, Some(7));
        assert_eq!(offset, Some(123_456));
        let (_, none) = parse_handle(&format!("5 {live} 0 3 0 broker-a 1 7")).unwrap();
        assert_eq!(none, None);
        let expired = parse_handle("5 1000 1000 3 0 broker-a 1 7 1").unwrap_err();
        assert_eq!(expired.code, Code::InvalidReceiptHandle);
        assert!(expired.message.contains("expired"));
        for bad in ["", "x", "a b c d e f g h i", "1 2 3 4 9 b 1 2 x"] {
            assert_eq!(
                parse_handle(bad).unwrap_err().code,
                Code::InvalidReceiptHandle,
                "{bad}"
            );
        }
    }
}
