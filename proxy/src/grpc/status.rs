//! RocketMQ 5's status codes: every unary answer carries `Status{code, message}` (the gRPC
//! call itself succeeds), and cluster errors map onto codes as RocketMQ's proxy maps them.

use stellmq_remoting::net::RemotingError;
use stellmq_remoting::protocol::ResponseCode;

use crate::cluster::ClusterError;
use crate::pb::{Code, Status};

/// An answer other than OK, with the reason the client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
}

impl Refusal {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn status(&self) -> Status {
        status(self.code, &self.message)
    }
}

/// `Status{code, message}`.
pub fn status(code: Code, message: &str) -> Status {
    Status {
        code: code as i32,
        message: message.to_owned(),
    }
}

/// RocketMQ's OK status (its message is the literal "OK").
pub fn ok() -> Status {
    status(Code::Ok, "OK")
}

/// The status of several entries: their code when they agree, else MULTIPLE_RESULTS.
pub fn common_status(entry_codes: impl IntoIterator<Item = i32>) -> Status {
    let mut codes = entry_codes.into_iter();
    let Some(first) = codes.next() else {
        return ok();
    };
    if codes.all(|c| c == first) {
        let code = Code::try_from(first).unwrap_or(Code::InternalServerError);
        if code == Code::Ok {
            ok()
        } else {
            status(code, code.as_str_name())
        }
    } else {
        status(Code::MultipleResults, "MULTIPLE_RESULTS")
    }
}

impl From<ClusterError> for Refusal {
    fn from(e: ClusterError) -> Self {
        let message = e.to_string();
        let code = match &e {
            ClusterError::TopicNotFound(_) => Code::TopicNotFound,
            ClusterError::GroupNotFound(_) => Code::ConsumerGroupNotFound,
            ClusterError::NoWritableQueue(_) | ClusterError::NoReadableQueue(_) => Code::Forbidden,
            ClusterError::UnknownBroker(_) => Code::InvalidReceiptHandle,
            ClusterError::BadAnswer(_) => Code::InternalServerError,
            ClusterError::Remoting(r) => remoting_code(r),
        };
        Refusal::new(code, message)
    }
}

/// RocketMQ's proxy's reading of a failed remoting call.
fn remoting_code(e: &RemotingError) -> Code {
    match e {
        RemotingError::Timeout { .. } | RemotingError::ConnectTimeout { .. } => Code::ProxyTimeout,
        RemotingError::Remote { code, .. } => match ResponseCode::from_i32(*code) {
            Some(ResponseCode::SYSTEM_BUSY) => Code::TooManyRequests,
            Some(ResponseCode::REQUEST_CODE_NOT_SUPPORTED) => Code::NotImplemented,
            Some(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST) => Code::ConsumerGroupNotFound,
            Some(ResponseCode::TOPIC_NOT_EXIST) => Code::TopicNotFound,
            Some(ResponseCode::NO_PERMISSION) => Code::Forbidden,
            // An ack or invisible-time change whose handle the broker no longer holds.
            Some(ResponseCode::NO_MESSAGE) => Code::InvalidReceiptHandle,
            // A recall the broker refuses: a handle for another topic or broker, past its
            // time, or of a message no longer waiting (the remark says which).
            Some(ResponseCode::ILLEGAL_OPERATION) => Code::BadRequest,
            Some(ResponseCode::LITE_SUBSCRIPTION_QUOTA_EXCEEDED) => {
                Code::LiteSubscriptionQuotaExceeded
            }
            Some(ResponseCode::LMQ_QUOTA_EXCEEDED) => Code::LiteTopicQuotaExceeded,
            _ => Code::InternalServerError,
        },
        _ => Code::InternalServerError,
    }
}

/// The name of a RocketMQ 5 status code (`OK`, `UNAUTHORIZED`), for metrics.
pub fn code_name(code: i32) -> &'static str {
    Code::try_from(code).map_or("UNKNOWN", |c| c.as_str_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_share_a_code_or_are_multiple() {
        assert_eq!(common_status([]).code, Code::Ok as i32);
        assert_eq!(common_status([Code::Ok as i32; 3]).message, "OK");
        let mixed = common_status([Code::Ok as i32, Code::InvalidReceiptHandle as i32]);
        assert_eq!(mixed.code, Code::MultipleResults as i32);
    }

    #[test]
    fn broker_codes_map_as_rocketmq_proxy_maps_them() {
        let remote = |code: ResponseCode| {
            Refusal::from(ClusterError::Remoting(RemotingError::Remote {
                addr: "b".into(),
                code: code.as_i32(),
                remark: "r".into(),
            }))
            .code
        };
        assert_eq!(remote(ResponseCode::SYSTEM_BUSY), Code::TooManyRequests);
        assert_eq!(remote(ResponseCode::TOPIC_NOT_EXIST), Code::TopicNotFound);
        assert_eq!(
            remote(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST),
            Code::ConsumerGroupNotFound
        );
        assert_eq!(
            remote(ResponseCode::MESSAGE_ILLEGAL),
            Code::InternalServerError
        );
        assert_eq!(remote(ResponseCode::ILLEGAL_OPERATION), Code::BadRequest);
    }
}
