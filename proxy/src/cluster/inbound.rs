//! What brokers ask of the proxy on its connections: transaction checks for the producers
//! behind it (handed on to a gRPC producer of the topic by the telemetry side).

use std::sync::Arc;
use std::time::Instant;

use stellmq_remoting::net::{Channel, InboundHandler};
use stellmq_remoting::protocol::headers::{CheckTransactionStateRequestHeader, CommandHeader};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

/// A broker's CHECK_TRANSACTION_STATE: which broker asked, its header and the half message.
#[derive(Debug, Clone)]
pub struct TransactionCheck {
    pub broker_addr: String,
    pub header: CheckTransactionStateRequestHeader,
    pub half: MessageRecord,
}

/// Where checks go.
pub type TransactionChecks = Arc<dyn Fn(TransactionCheck) + Send + Sync>;

pub(super) struct BrokerCalls {
    checks: TransactionChecks,
}

impl BrokerCalls {
    pub fn new(checks: TransactionChecks) -> Self {
        Self { checks }
    }
}

impl InboundHandler for BrokerCalls {
    fn on_request(&self, channel: Channel, request: RemotingCommand, _received_at: Instant) {
        match request.request_code_typed() {
            Some(RequestCode::CHECK_TRANSACTION_STATE) => {
                let header = match CheckTransactionStateRequestHeader::from_ext_fields(
                    &request.ext_fields,
                ) {
                    Ok(h) => h,
                    Err(e) => {
                        tracing::warn!(error = %e, "transaction check without a usable header");
                        return;
                    }
                };
                let half = match MessageRecord::decode(&request.body, false) {
                    Ok((record, _)) => record,
                    Err(e) => {
                        tracing::warn!(error = %e, "transaction check with an unreadable message");
                        return;
                    }
                };
                (self.checks)(TransactionCheck {
                    broker_addr: channel.peer().to_string(),
                    header,
                    half,
                });
            }
            Some(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED) => {}
            _ if !request.is_oneway() => {
                channel.try_send(request.not_supported_to());
            }
            _ => {}
        }
    }
}
