//! RocketMQ 5.5's lite topic administration (request codes 200074-200079).

use stellmq_remoting::protocol::body::lite::{
    GetBrokerLiteInfoResponseBody, GetLiteClientInfoResponseBody, GetLiteGroupInfoResponseBody,
    GetLiteTopicInfoResponseBody, GetParentTopicInfoResponseBody,
};
use stellmq_remoting::protocol::headers::{
    GetLiteClientInfoRequestHeader, GetLiteGroupInfoRequestHeader, GetLiteTopicInfoRequestHeader,
    GetParentTopicInfoRequestHeader, TriggerLiteDispatchRequestHeader,
};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{read, request};

impl AdminClient {
    /// GET_BROKER_LITE_INFO: the broker's lite topics, subscriptions and tables.
    pub async fn broker_lite_info(
        &self,
        broker: &str,
    ) -> Result<GetBrokerLiteInfoResponseBody, ClientError> {
        let request =
            RemotingCommand::request(RequestCode::GET_BROKER_LITE_INFO, ExtFields::default());
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// GET_PARENT_TOPIC_INFO: a LITE topic on `broker`.
    pub async fn parent_topic_info(
        &self,
        broker: &str,
        topic: &str,
    ) -> Result<GetParentTopicInfoResponseBody, ClientError> {
        let header = GetParentTopicInfoRequestHeader {
            topic: topic.to_owned(),
        };
        let request = request(RequestCode::GET_PARENT_TOPIC_INFO, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// GET_LITE_TOPIC_INFO: one lite topic's offsets and subscribers on `broker`.
    pub async fn lite_topic_info(
        &self,
        broker: &str,
        parent: &str,
        lite: &str,
    ) -> Result<GetLiteTopicInfoResponseBody, ClientError> {
        let header = GetLiteTopicInfoRequestHeader {
            parent_topic: parent.to_owned(),
            lite_topic: lite.to_owned(),
        };
        let request = request(RequestCode::GET_LITE_TOPIC_INFO, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// GET_LITE_CLIENT_INFO: what one client subscribed to on `broker`.
    pub async fn lite_client_info(
        &self,
        broker: &str,
        parent: &str,
        group: &str,
        client_id: &str,
    ) -> Result<GetLiteClientInfoResponseBody, ClientError> {
        let header = GetLiteClientInfoRequestHeader {
            parent_topic: parent.to_owned(),
            group: group.to_owned(),
            client_id: client_id.to_owned(),
            max_count: Some(1_000),
        };
        let request = request(RequestCode::GET_LITE_CLIENT_INFO, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// GET_LITE_GROUP_INFO: a lite group's lag on `broker`, of one lite topic or the `top_k`
    /// largest.
    pub async fn lite_group_info(
        &self,
        broker: &str,
        group: &str,
        lite: Option<&str>,
        top_k: i32,
    ) -> Result<GetLiteGroupInfoResponseBody, ClientError> {
        let header = GetLiteGroupInfoRequestHeader {
            group: group.to_owned(),
            lite_topic: lite.map(str::to_owned),
            top_k: Some(top_k),
        };
        let request = request(RequestCode::GET_LITE_GROUP_INFO, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// TRIGGER_LITE_DISPATCH: a client's (or every client of the group's) lite topics with
    /// messages become news again.
    pub async fn trigger_lite_dispatch(
        &self,
        broker: &str,
        group: &str,
        client_id: Option<&str>,
    ) -> Result<(), ClientError> {
        let header = TriggerLiteDispatchRequestHeader {
            group: group.to_owned(),
            client_id: client_id.map(str::to_owned),
        };
        let request = request(RequestCode::TRIGGER_LITE_DISPATCH, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }
}
