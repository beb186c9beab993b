//! The check in front of every processor: the topic and group names a request carries in its
//! header follow RocketMQ's rules, or the request is refused before any processor (and so
//! any path, map or file) sees them.
//!
//! Names inside bodies (heartbeats, group configs, offset tables, lock requests) are
//! checked by the processors that decode those bodies, with the same functions.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessFuture, ProcessorError, RequestContext, RequestProcessor};
use stellmq_remoting::protocol::names::{self, NameError, NameKind};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::FAQ;
use crate::group::GroupError;

/// The header fields of a request that name a topic or a group.
fn name_fields(code: RequestCode) -> &'static [(&'static str, NameKind)] {
    use NameKind::{Group, Topic};
    use RequestCode as C;
    match code {
        C::SEND_MESSAGE | C::SEND_REPLY_MESSAGE => &[("topic", Topic)],
        // SendMessageRequestHeaderV2: `b` is the topic.
        C::SEND_MESSAGE_V2 | C::SEND_BATCH_MESSAGE | C::SEND_REPLY_MESSAGE_V2 => &[("b", Topic)],
        C::CONSUMER_SEND_MSG_BACK => &[("group", Group), ("originTopic", Topic)],
        C::PULL_MESSAGE
        | C::LITE_PULL_MESSAGE
        | C::QUERY_CONSUMER_OFFSET
        | C::UPDATE_CONSUMER_OFFSET
        | C::GET_CONSUME_STATS
        | C::QUERY_CONSUME_QUEUE => &[("consumerGroup", Group), ("topic", Topic)],
        C::GET_CONSUMER_LIST_BY_GROUP
        | C::GET_CONSUMER_CONNECTION_LIST
        | C::GET_CONSUMER_RUNNING_INFO => &[("consumerGroup", Group)],
        C::INVOKE_BROKER_TO_RESET_OFFSET => &[("group", Group), ("topic", Topic)],
        C::CLONE_GROUP_OFFSET => &[("srcGroup", Group), ("destGroup", Group), ("topic", Topic)],
        C::DELETE_SUBSCRIPTIONGROUP => &[("groupName", Group)],
        C::QUERY_MESSAGE
        | C::VIEW_MESSAGE_BY_ID
        | C::END_TRANSACTION
        | C::GET_MAX_OFFSET
        | C::GET_MIN_OFFSET
        | C::SEARCH_OFFSET_BY_TIMESTAMP
        | C::GET_EARLIEST_MSG_STORETIME
        | C::UPDATE_AND_CREATE_TOPIC
        | C::DELETE_TOPIC_IN_BROKER
        | C::GET_TOPIC_STATS_INFO
        | C::QUERY_TOPIC_CONSUME_BY_WHO => &[("topic", Topic)],
        _ => &[],
    }
}

/// Checks one name as a request field.
pub fn check_name(kind: NameKind, name: &str) -> Result<(), ProcessorError> {
    let checked = match kind {
        NameKind::Topic => names::check_topic(name),
        NameKind::Group => names::check_group(name),
    };
    checked.map_err(refusal)
}

/// A refused name answers SYSTEM_ERROR with RocketMQ's remark, as its TopicValidator does.
pub fn refusal(e: NameError) -> ProcessorError {
    ProcessorError::system(e.to_string())
}

/// A group a client named that cannot be used, with RocketMQ's codes.
pub fn group_refusal(e: GroupError) -> ProcessorError {
    match e {
        GroupError::Name(e) => refusal(e),
        GroupError::NotExist(group) => ProcessorError::new(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {group}{FAQ}"),
        ),
        other => ProcessorError::new(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            other.to_string(),
        ),
    }
}

/// Checks the names in a request's header. Absent or empty optional fields are left to
/// the processor, which knows whether they are required.
pub fn check_header_names(request: &RemotingCommand) -> Result<(), ProcessorError> {
    let Some(code) = request.request_code_typed() else {
        return Ok(());
    };
    for (field, kind) in name_fields(code) {
        match request.ext_fields.get(field) {
            Some(value) if !value.is_empty() => check_name(*kind, value)?,
            _ => {}
        }
    }
    Ok(())
}

/// A processor behind the name check.
pub struct Guarded(pub Arc<dyn RequestProcessor>);

impl RequestProcessor for Guarded {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        if let Err(e) = check_header_names(&request) {
            tracing::warn!(peer = %ctx.channel.peer(), code = request.code, remark = %e.remark, "request refused: bad name");
            return Box::pin(std::future::ready(Err(e)));
        }
        self.0.process(ctx, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_remoting::protocol::ExtFields;

    fn request(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
        RemotingCommand::request_code(code.as_i32(), fields.iter().copied().collect::<ExtFields>())
    }

    #[test]
    fn traversal_and_bad_names_are_refused() {
        let delete = request(
            RequestCode::DELETE_TOPIC_IN_BROKER,
            &[("topic", "../commitlog")],
        );
        let e = check_header_names(&delete).expect_err("refused");
        assert!(e.remark.contains("illegal characters"), "{}", e.remark);
        let back = request(
            RequestCode::CONSUMER_SEND_MSG_BACK,
            &[("group", "../../x"), ("offset", "0")],
        );
        assert!(check_header_names(&back).is_err());
        let long_group = "g".repeat(256);
        let pull = request(
            RequestCode::PULL_MESSAGE,
            &[("consumerGroup", long_group.as_str()), ("topic", "T")],
        );
        assert!(check_header_names(&pull).is_err());
        let v2 = request(RequestCode::SEND_MESSAGE_V2, &[("a", "pg"), ("b", "/etc")]);
        assert!(check_header_names(&v2).is_err());
    }

    #[test]
    fn good_and_absent_names_pass() {
        let pull = request(
            RequestCode::PULL_MESSAGE,
            &[("consumerGroup", "CID_a-b"), ("topic", "%RETRY%CID_a-b")],
        );
        assert_eq!(check_header_names(&pull), Ok(()));
        let view = request(RequestCode::VIEW_MESSAGE_BY_ID, &[("offset", "1")]);
        assert_eq!(check_header_names(&view), Ok(()));
        let heartbeat = request(RequestCode::HEART_BEAT, &[("topic", "../x")]);
        assert_eq!(check_header_names(&heartbeat), Ok(()), "no name fields");
    }
}
