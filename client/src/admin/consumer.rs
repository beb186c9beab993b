//! Questions to a running consumer, asked through a broker it is connected to (the broker
//! relays them on the consumer's connection): its running info, the offsets every member
//! holds for a topic, and consuming one message with its listener.

use std::time::Duration;

use stellmq_remoting::protocol::body::{
    ConsumeMessageDirectlyResult, ConsumerRunningInfo, GetConsumerStatusBody,
};
use stellmq_remoting::protocol::headers::{
    ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
};
use stellmq_remoting::protocol::RequestCode;

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{answer, read, request};

/// How long a listener may take with a message consumed directly (RocketMQ's tools wait three
/// times their usual timeout).
const DIRECT_TIMEOUT: Duration = Duration::from_secs(15);

impl AdminClient {
    /// GET_CONSUMER_RUNNING_INFO of `client_id` of `group`, through `broker`.
    pub async fn consumer_running_info(
        &self,
        broker: &str,
        group: &str,
        client_id: &str,
        jstack: bool,
    ) -> Result<ConsumerRunningInfo, ClientError> {
        let header = GetConsumerRunningInfoRequestHeader {
            consumer_group: group.to_owned(),
            client_id: client_id.to_owned(),
            jstack_enable: Some(jstack),
        };
        let request = request(RequestCode::GET_CONSUMER_RUNNING_INFO, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// INVOKE_BROKER_TO_GET_CONSUMER_STATUS: the offsets of `topic` each member of `group`
    /// connected to `broker` holds (only `client_id`'s when given), by client id.
    pub async fn consumer_status(
        &self,
        broker: &str,
        topic: &str,
        group: &str,
        client_id: Option<&str>,
    ) -> Result<GetConsumerStatusBody, ClientError> {
        let header = GetConsumerStatusRequestHeader {
            topic: topic.to_owned(),
            group: group.to_owned(),
            client_addr: client_id.map(str::to_owned),
        };
        let request = request(RequestCode::INVOKE_BROKER_TO_GET_CONSUMER_STATUS, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// CONSUME_MESSAGE_DIRECTLY: `client_id` of `group` runs its listener on the message
    /// `msg_id` (an offset message id of `broker`) and says what it decided.
    pub async fn consume_message_directly(
        &self,
        broker: &str,
        group: &str,
        client_id: &str,
        msg_id: &str,
        topic: Option<&str>,
    ) -> Result<ConsumeMessageDirectlyResult, ClientError> {
        let header = ConsumeMessageDirectlyResultRequestHeader {
            consumer_group: group.to_owned(),
            client_id: Some(client_id.to_owned()),
            msg_id: Some(msg_id.to_owned()),
            topic: topic.map(str::to_owned),
            ..Default::default()
        };
        let request = request(RequestCode::CONSUME_MESSAGE_DIRECTLY, &header);
        let response = self
            .remoting
            .invoke(broker, request, DIRECT_TIMEOUT)
            .await?;
        answer(broker, response, read::json)
    }
}
