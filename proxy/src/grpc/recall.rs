//! RecallMessage (RocketMQ 5.3.2+): a producer takes back a delay message before it is due,
//! with the recall handle its SendMessage answered. The handle names the broker; the proxy
//! relays RECALL_MESSAGE to that broker's master, as RocketMQ's proxy does.

use stellmq_remoting::protocol::recall::RecallHandle;

use super::send::check_kind;
use super::status::{ok, Refusal};
use super::{topic_name, Caller, Proxy};
use crate::pb::{Code, MessageType, RecallMessageRequest, RecallMessageResponse};

pub async fn recall_message(
    proxy: &Proxy,
    _caller: Caller,
    request: RecallMessageRequest,
) -> Result<RecallMessageResponse, Refusal> {
    let topic = topic_name(request.topic.as_ref())?;
    if proxy.config.enable_topic_message_type_check {
        let topic_kind = proxy.cluster.topic_message_type(&topic).await?;
        check_kind(&topic, topic_kind, MessageType::Delay)?;
    }
    let handle = RecallHandle::decode(&request.recall_handle)
        .map_err(|e| Refusal::new(Code::BadRequest, e.to_string()))?;
    let message_id = proxy
        .cluster
        .recall(&topic, &handle.broker_name, &request.recall_handle)
        .await?;
    Ok(RecallMessageResponse {
        status: Some(ok()),
        message_id,
    })
}
