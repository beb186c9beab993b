//! Request processors, one module per area; each gets only the state it needs.

pub mod admin;
pub mod client_manage;
pub mod consumer_manage;
pub mod end_transaction;
pub mod guard;
pub mod pop;
pub mod pull;
pub mod query;
pub mod recall;
pub mod send;

use stellmq_remoting::net::ProcessorError;
use stellmq_remoting::protocol::headers::CommandHeader;
use stellmq_remoting::protocol::RemotingCommand;

/// Reads the typed header of `request`; a bad header is a SYSTEM_ERROR naming the field.
pub fn header<H: CommandHeader>(request: &RemotingCommand) -> Result<H, ProcessorError> {
    Ok(H::from_ext_fields(&request.ext_fields)?)
}

/// RocketMQ's "see the FAQ" suffix.
pub const FAQ: &str = "\nSee http://rocketmq.apache.org/docs/faq/ for further details.";
