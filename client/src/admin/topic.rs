//! Topics: routes and the topic list from the name servers, topic configs, stats and raw
//! ConsumeQueue entries from brokers.

use stellmq_remoting::protocol::body::{
    attributes_as_changes, fastjson, CreateTopicListRequestBody, GroupList,
};
use stellmq_remoting::protocol::body::{
    QueryConsumeQueueResponseBody, TopicConfig, TopicConfigSerializeWrapper, TopicList,
    TopicRouteData, TopicStatsTable,
};
use stellmq_remoting::protocol::headers::{
    topic_pages, CreateTopicRequestHeader, DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader, GetRouteInfoRequestHeader, GetTopicStatsInfoRequestHeader,
    QueryConsumeQueueRequestHeader, QueryTopicConsumeByWhoRequestHeader,
};
use stellmq_remoting::protocol::{RequestCode, ResponseCode};

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{bare, read, request};

impl AdminClient {
    pub async fn topic_route(&self, topic: &str) -> Result<TopicRouteData, ClientError> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: None,
        };
        let request = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header);
        self.ask_or_none(
            To::NameServer,
            request,
            ResponseCode::TOPIC_NOT_EXIST,
            read::json,
        )
        .await?
        .ok_or_else(|| ClientError::TopicNotExist(topic.to_owned()))
    }

    pub async fn topic_list(&self) -> Result<Vec<String>, ClientError> {
        let request = bare(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
        let list: TopicList = self.ask(To::NameServer, request, read::json).await?;
        Ok(list.topic_list)
    }

    /// Up to `max` topics after `after` (from the first when `None`), in name order, and
    /// whether more follow: StellMQ name servers answer pages; a RocketMQ name server
    /// answers every topic at once (and no more then).
    pub async fn topic_page(
        &self,
        after: Option<&str>,
        max: usize,
    ) -> Result<(Vec<String>, bool), ClientError> {
        let mut request = bare(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
        request
            .ext_fields
            .insert(topic_pages::MAX_TOPIC_NUM, max.to_string());
        if let Some(after) = after {
            request.ext_fields.insert(topic_pages::AFTER_TOPIC, after);
        }
        let (list, more): (TopicList, bool) = self
            .ask(To::NameServer, request, |response| {
                let more = response.ext_fields.get(topic_pages::MORE_TOPICS) == Some("true");
                read::json(response).map(|list| (list, more))
            })
            .await?;
        Ok((list.topic_list, more))
    }

    /// Creates or updates a topic on `broker`, with `config`'s attributes.
    pub async fn create_topic(
        &self,
        broker: &str,
        config: &TopicConfig,
    ) -> Result<(), ClientError> {
        let changes = attributes_as_changes(&config.attributes);
        self.create_topic_with_attribute_changes(broker, config, changes.as_deref())
            .await
    }

    /// Like [`Self::create_topic`], with RocketMQ's attribute changes (`+key=value` sets,
    /// `-key` removes, comma separated) applied by the broker to the topic's current ones.
    pub async fn create_topic_with_attribute_changes(
        &self,
        broker: &str,
        config: &TopicConfig,
        attribute_changes: Option<&str>,
    ) -> Result<(), ClientError> {
        let header = CreateTopicRequestHeader {
            topic: config.topic_name.clone(),
            default_topic: "TBW102".into(),
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
            perm: config.perm,
            topic_filter_type: config.topic_filter_type.clone(),
            topic_sys_flag: Some(config.topic_sys_flag),
            order: Some(config.order),
            attributes: attribute_changes.map(str::to_owned),
            force: None,
        };
        let request = request(RequestCode::UPDATE_AND_CREATE_TOPIC, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// UPDATE_AND_CREATE_TOPIC_LIST: many topics in one request, each config's `attributes`
    /// as changes (`+key` sets, `-key` removes; a bare key sets); the broker refuses the
    /// whole list if one entry is bad.
    pub async fn create_topic_list(
        &self,
        broker: &str,
        configs: &[TopicConfig],
    ) -> Result<(), ClientError> {
        let body = CreateTopicListRequestBody {
            topic_config_list: configs.to_vec(),
        };
        let request =
            bare(RequestCode::UPDATE_AND_CREATE_TOPIC_LIST).with_body(fastjson::encode(&body));
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    pub async fn delete_topic_in_broker(
        &self,
        broker: &str,
        topic: &str,
    ) -> Result<(), ClientError> {
        let header = DeleteTopicRequestHeader {
            topic: topic.to_owned(),
        };
        let request = request(RequestCode::DELETE_TOPIC_IN_BROKER, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// Deletes the topic's routes in every name server.
    pub async fn delete_topic_in_namesrv(
        &self,
        topic: &str,
        cluster: Option<&str>,
    ) -> Result<(), ClientError> {
        let header = DeleteTopicFromNamesrvRequestHeader {
            topic: topic.to_owned(),
            cluster_name: cluster.map(str::to_owned),
        };
        self.tell_every_namesrv(request(RequestCode::DELETE_TOPIC_IN_NAMESRV, &header))
            .await
    }

    pub async fn all_topic_config(
        &self,
        broker: &str,
    ) -> Result<TopicConfigSerializeWrapper, ClientError> {
        let request = bare(RequestCode::GET_ALL_TOPIC_CONFIG);
        self.ask(To::Addr(broker), request, read::json).await
    }

    pub async fn topic_stats(
        &self,
        broker: &str,
        topic: &str,
    ) -> Result<TopicStatsTable, ClientError> {
        let header = GetTopicStatsInfoRequestHeader {
            topic: topic.to_owned(),
        };
        let request = request(RequestCode::GET_TOPIC_STATS_INFO, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// `count` ConsumeQueue entries of a queue from `index` (QUERY_CONSUME_QUEUE).
    pub async fn query_consume_queue(
        &self,
        broker: &str,
        mq: (&str, i32),
        index: i64,
        count: i32,
        group: Option<&str>,
    ) -> Result<QueryConsumeQueueResponseBody, ClientError> {
        let header = QueryConsumeQueueRequestHeader {
            topic: mq.0.to_owned(),
            queue_id: mq.1,
            index,
            count,
            consumer_group: group.map(str::to_owned),
        };
        let request = request(RequestCode::QUERY_CONSUME_QUEUE, &header);
        self.ask(To::Addr(broker), request, read::json).await
    }

    /// Groups with offsets for `topic` on `broker` (QUERY_TOPIC_CONSUME_BY_WHO).
    pub async fn topic_consumed_by(
        &self,
        broker: &str,
        topic: &str,
    ) -> Result<Vec<String>, ClientError> {
        let header = QueryTopicConsumeByWhoRequestHeader {
            topic: topic.to_owned(),
        };
        let request = request(RequestCode::QUERY_TOPIC_CONSUME_BY_WHO, &header);
        let groups: GroupList = self.ask(To::Addr(broker), request, read::json).await?;
        Ok(groups.group_list)
    }
}
