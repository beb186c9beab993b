//! The check in front of every processor: the topic and group names a request carries in its
//! header follow RocketMQ's rules, or the request is refused before any processor (and so
//! any path, map or file) sees them.
//!
//! With ACL 2.0 on (authenticationEnabled, authorizationEnabled) the guard first checks
//! the user and its policies; with aclEnable on, it checks the request against the ACL (signature,
//! white lists, permissions) and answers NO_PERMISSION when it is refused.
//!
//! Names inside bodies (heartbeats, group configs, offset tables, lock requests) are
//! checked by the processors that decode those bodies, with the same functions.

use std::sync::Arc;

use stellmq_acl::auth::AuthChecker;
use stellmq_acl::AccessValidator;
use stellmq_remoting::net::{ProcessFuture, ProcessorError, RequestContext, RequestProcessor};
use stellmq_remoting::protocol::names::{self, NameError, NameKind};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use NameKind::{Group, Topic};

use super::FAQ;
use crate::group::GroupError;

/// The header fields of a request that name a topic or a group.
/// The header fields of a request that name a topic or a group; every route in
/// `routes.rs` says which set its request carries.
pub type NameFields = &'static [(&'static str, NameKind)];

pub const NO_NAMES: NameFields = &[];
pub const TOPIC: NameFields = &[("topic", Topic)];
/// SendMessageRequestHeaderV2: `b` is the topic.
pub const TOPIC_V2: NameFields = &[("b", Topic)];
pub const GROUP: NameFields = &[("consumerGroup", Group)];
pub const GROUP_AND_TOPIC: NameFields = &[("consumerGroup", Group), ("topic", Topic)];
pub const GROUP_NAME: NameFields = &[("groupName", Group)];
/// GET_SUBSCRIPTIONGROUP_CONFIG names its group `group`.
pub const GROUP_FIELD: NameFields = &[("group", Group)];
pub const SEND_BACK: NameFields = &[("group", Group), ("originTopic", Topic)];
pub const RESET_OFFSET: NameFields = &[("group", Group), ("topic", Topic)];
/// QUERY_CONSUME_TIME_SPAN and INVOKE_BROKER_TO_GET_CONSUMER_STATUS.
pub const GROUP_FIELD_AND_TOPIC: NameFields = &[("group", Group), ("topic", Topic)];
/// QUERY_CORRECTION_OFFSET (its `filterGroups` is a comma-separated list).
pub const CORRECTION_OFFSET: NameFields = &[("compareGroup", Group), ("topic", Topic)];
pub const CLONE_OFFSET: NameFields = &[("srcGroup", Group), ("destGroup", Group), ("topic", Topic)];

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
pub fn check_header_names(
    request: &RemotingCommand,
    fields: NameFields,
) -> Result<(), ProcessorError> {
    for (field, kind) in fields {
        match request.ext_fields.get(field) {
            Some(value) if !value.is_empty() => check_name(*kind, value)?,
            _ => {}
        }
    }
    Ok(())
}

/// A handler behind the ACL (when on) and the check of the names its request carries.
pub struct Guarded {
    pub handler: Arc<dyn RequestProcessor>,
    pub fields: NameFields,
    pub acl: Option<Arc<AccessValidator>>,
    /// ACL 2.0, when authentication or authorization is on.
    pub auth: Option<Arc<AuthChecker>>,
}

impl RequestProcessor for Guarded {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        if let Some(auth) = &self.auth {
            if let Err(reason) = auth.check(ctx.channel.peer().ip(), &request) {
                auth.log_refusal(ctx.channel.peer(), request.code, &reason);
                let refusal = ProcessorError::new(ResponseCode::NO_PERMISSION, reason);
                return Box::pin(std::future::ready(Err(refusal)));
            }
        }
        if let Some(acl) = &self.acl {
            if let Err(denied) = acl.check(ctx.channel.peer().ip(), &request) {
                acl.log_refusal(ctx.channel.peer(), request.code, &denied);
                let refusal = ProcessorError::new(ResponseCode::NO_PERMISSION, denied.0);
                return Box::pin(std::future::ready(Err(refusal)));
            }
        }
        if let Err(e) = check_header_names(&request, self.fields) {
            tracing::warn!(peer = %ctx.channel.peer(), code = request.code, remark = %e.remark, "request refused: bad name");
            return Box::pin(std::future::ready(Err(e)));
        }
        self.handler.process(ctx, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_remoting::protocol::{ExtFields, RequestCode};

    fn request(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
        RemotingCommand::request_code(code.as_i32(), fields.iter().copied().collect::<ExtFields>())
    }

    #[test]
    fn traversal_and_bad_names_are_refused() {
        let delete = request(
            RequestCode::DELETE_TOPIC_IN_BROKER,
            &[("topic", "../commitlog")],
        );
        let e = check_header_names(&delete, TOPIC).expect_err("refused");
        assert!(e.remark.contains("illegal characters"), "{}", e.remark);
        let back = request(
            RequestCode::CONSUMER_SEND_MSG_BACK,
            &[("group", "../../x"), ("offset", "0")],
        );
        assert!(check_header_names(&back, SEND_BACK).is_err());
        let long_group = "g".repeat(256);
        let pull = request(
            RequestCode::PULL_MESSAGE,
            &[("consumerGroup", long_group.as_str()), ("topic", "T")],
        );
        assert!(check_header_names(&pull, GROUP_AND_TOPIC).is_err());
        let v2 = request(RequestCode::SEND_MESSAGE_V2, &[("a", "pg"), ("b", "/etc")]);
        assert!(check_header_names(&v2, TOPIC_V2).is_err());
    }

    #[test]
    fn good_and_absent_names_pass() {
        let pull = request(
            RequestCode::PULL_MESSAGE,
            &[("consumerGroup", "CID_a-b"), ("topic", "%RETRY%CID_a-b")],
        );
        assert_eq!(check_header_names(&pull, GROUP_AND_TOPIC), Ok(()));
        let view = request(RequestCode::VIEW_MESSAGE_BY_ID, &[("offset", "1")]);
        assert_eq!(check_header_names(&view, TOPIC), Ok(()));
        let heartbeat = request(RequestCode::HEART_BEAT, &[("topic", "../x")]);
        assert_eq!(
            check_header_names(&heartbeat, NO_NAMES),
            Ok(()),
            "no name fields"
        );
    }
}
