//! Subscription groups: creating, reading and deleting them, their consume progress and the
//! producer and consumer connections of a group (or of a whole broker).

use stellmq_remoting::protocol::body::{
    fastjson, ConsumeStats, ConsumerConnection, ProducerConnection, ProducerTableInfo,
    SubscriptionGroupConfig, SubscriptionGroupList, SubscriptionGroupWrapper,
};
use stellmq_remoting::protocol::headers::{
    DeleteSubscriptionGroupRequestHeader, GetConsumeStatsRequestHeader,
    GetConsumerConnectionListRequestHeader, GetProducerConnectionListRequestHeader,
};
use stellmq_remoting::protocol::RequestCode;

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{bare, read, request};

impl AdminClient {
    pub async fn create_group(
        &self,
        broker: &str,
        config: &SubscriptionGroupConfig,
    ) -> Result<(), ClientError> {
        let request = bare(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
            .with_body(fastjson::encode(config));
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: many groups in one request; the broker
    /// refuses the whole list if one entry is bad.
    pub async fn create_group_list(
        &self,
        broker: &str,
        configs: &[SubscriptionGroupConfig],
    ) -> Result<(), ClientError> {
        let body = SubscriptionGroupList {
            group_config_list: configs.to_vec(),
        };
        let request = bare(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST)
            .with_body(fastjson::encode(&body));
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    pub async fn delete_group(&self, broker: &str, group: &str) -> Result<(), ClientError> {
        self.delete_group_with(broker, group, true).await
    }

    /// DELETE_SUBSCRIPTIONGROUP; the group's consumer offsets go too when `remove_offset`.
    pub async fn delete_group_with(
        &self,
        broker: &str,
        group: &str,
        remove_offset: bool,
    ) -> Result<(), ClientError> {
        let header = DeleteSubscriptionGroupRequestHeader {
            group_name: group.to_owned(),
            remove_offset: Some(remove_offset),
            clean_offset: Some(remove_offset),
        };
        let request = request(RequestCode::DELETE_SUBSCRIPTIONGROUP, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    pub async fn consume_stats(
        &self,
        broker: &str,
        group: &str,
        topic: Option<&str>,
    ) -> Result<ConsumeStats, ClientError> {
        let header = GetConsumeStatsRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.map(str::to_owned),
        };
        let request = request(RequestCode::GET_CONSUME_STATS, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    pub async fn consumer_connection(
        &self,
        broker: &str,
        group: &str,
    ) -> Result<ConsumerConnection, ClientError> {
        let header = GetConsumerConnectionListRequestHeader {
            consumer_group: group.to_owned(),
        };
        let request = request(RequestCode::GET_CONSUMER_CONNECTION_LIST, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    pub async fn producer_connection(
        &self,
        broker: &str,
        group: &str,
    ) -> Result<ProducerConnection, ClientError> {
        let header = GetProducerConnectionListRequestHeader {
            producer_group: group.to_owned(),
        };
        let request = request(RequestCode::GET_PRODUCER_CONNECTION_LIST, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// GET_ALL_PRODUCER_INFO: every producer connected to `broker`, by group.
    pub async fn all_producer_info(&self, broker: &str) -> Result<ProducerTableInfo, ClientError> {
        let request = bare(RequestCode::GET_ALL_PRODUCER_INFO);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// Every subscription group config of `broker` (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
    pub async fn all_subscription_groups(
        &self,
        broker: &str,
    ) -> Result<SubscriptionGroupWrapper, ClientError> {
        let request = bare(RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// `group`'s subscription group config on `broker`, from its whole table
    /// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, which every 4.x broker serves).
    pub async fn subscription_group_config(
        &self,
        broker: &str,
        group: &str,
    ) -> Result<Option<SubscriptionGroupConfig>, ClientError> {
        let mut all = self.all_subscription_groups(broker).await?;
        Ok(all.subscription_group_table.remove(group))
    }
}
