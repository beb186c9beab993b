//! Typed requests: a command is a request code and a typed header (its `extFields`); a
//! response other than SUCCESS is the remote's refusal ([`RemotingError::Remote`] with its
//! address, code and remark).

use stellmq_remoting::net::RemotingError;
use stellmq_remoting::protocol::headers::CommandHeader;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

/// A request of `code` carrying `header`.
pub(crate) fn request(code: RequestCode, header: &impl CommandHeader) -> RemotingCommand {
    RemotingCommand::request(code, header.to_ext_fields())
}

/// A request of `code` without header fields.
pub(crate) fn bare(code: RequestCode) -> RemotingCommand {
    RemotingCommand::request(code, ExtFields::new())
}

/// A response other than SUCCESS, as an error of `addr`.
pub(crate) fn refusal(addr: &str, response: &RemotingCommand) -> RemotingError {
    RemotingError::Remote {
        addr: addr.to_owned(),
        code: response.code,
        remark: response.remark_str().to_owned(),
    }
}
