//! Typed requests and the reading of their answers, by RocketMQ's rules: a request is a code
//! and a typed header (its `extFields`); SUCCESS carries the answer, a code the caller names
//! as "nothing found" is no answer, and any other code is the remote's refusal
//! ([`RemotingError::Remote`] with its address, code and remark). Response codes are mapped
//! to outcomes here and nowhere else.

use serde::de::DeserializeOwned;
use stellmq_remoting::net::RemotingError;
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::headers::CommandHeader;
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use crate::error::ClientError;

/// A request of `code` carrying `header`.
pub(crate) fn request(code: RequestCode, header: &impl CommandHeader) -> RemotingCommand {
    RemotingCommand::request(code, header.to_ext_fields())
}

/// A request of `code` without header fields.
pub(crate) fn bare(code: RequestCode) -> RemotingCommand {
    RemotingCommand::request(code, ExtFields::new())
}

/// The answer of `addr`: SUCCESS is read by `read`; any other code is the remote's refusal.
pub(crate) fn answer<T>(
    addr: &str,
    response: RemotingCommand,
    read: impl FnOnce(RemotingCommand) -> Result<T, ClientError>,
) -> Result<T, ClientError> {
    if response.code == ResponseCode::SUCCESS.as_i32() {
        read(response)
    } else {
        Err(refusal(addr, &response).into())
    }
}

/// Like [`answer`], but `none` (the request's "nothing found" code) is `None`.
pub(crate) fn answer_or_none<T>(
    addr: &str,
    response: RemotingCommand,
    none: ResponseCode,
    read: impl FnOnce(RemotingCommand) -> Result<T, ClientError>,
) -> Result<Option<T>, ClientError> {
    if response.code == none.as_i32() {
        return Ok(None);
    }
    answer(addr, response, read).map(Some)
}

/// A response other than SUCCESS, as an error of `addr`.
pub(crate) fn refusal(addr: &str, response: &RemotingCommand) -> RemotingError {
    RemotingError::Remote {
        addr: addr.to_owned(),
        code: response.code,
        remark: response.remark_str().to_owned(),
    }
}

/// Readers of a SUCCESS response, one per shape of answer.
pub(crate) mod read {
    use super::*;

    /// The answer is SUCCESS itself.
    pub fn nothing(_: RemotingCommand) -> Result<(), ClientError> {
        Ok(())
    }

    /// A JSON (fastjson) body.
    pub fn json<T: DeserializeOwned>(response: RemotingCommand) -> Result<T, ClientError> {
        Ok(fastjson::decode(&response.body)?)
    }

    /// A text body (a properties file), invalid UTF-8 replaced.
    pub fn text(response: RemotingCommand) -> Result<String, ClientError> {
        Ok(String::from_utf8_lossy(&response.body).into_owned())
    }

    /// The response's own typed header.
    pub fn header<H: CommandHeader>(response: RemotingCommand) -> Result<H, ClientError> {
        Ok(H::from_ext_fields(&response.ext_fields)?)
    }

    /// Stored message records in the body.
    pub fn records(response: RemotingCommand) -> Result<Vec<MessageRecord>, ClientError> {
        Ok(MessageRecord::decode_all(response.body, false)?)
    }
}
