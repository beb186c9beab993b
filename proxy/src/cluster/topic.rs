//! What the brokers know of a topic and of a consumer group that the gRPC side needs: the
//! topic's message type (RocketMQ 5's `message.type` attribute) and the group's settings.

use stellmq_remoting::protocol::body::{
    fastjson, SubscriptionGroupConfig, TopicConfig, TopicRouteData, MESSAGE_TYPE_ATTRIBUTE,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, GetSubscriptionGroupConfigRequestHeader, GetTopicConfigRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::error::ClusterError;
use super::Cluster;

/// A topic's message type (RocketMQ's TopicMessageType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicMessageType {
    /// The type could not be learnt.
    Unspecified,
    Normal,
    Fifo,
    Delay,
    Transaction,
    /// RocketMQ 5.4's priority messages.
    Priority,
    /// RocketMQ 5.5's lite topics: messages carry a lite topic.
    Lite,
    /// Any kind of message.
    Mixed,
}

impl TopicMessageType {
    /// The attribute's value; absent means NORMAL, as in RocketMQ.
    pub fn from_attribute(value: Option<&str>) -> Self {
        match value.unwrap_or("NORMAL") {
            "NORMAL" => Self::Normal,
            "FIFO" => Self::Fifo,
            "DELAY" => Self::Delay,
            "TRANSACTION" => Self::Transaction,
            "PRIORITY" => Self::Priority,
            "LITE" => Self::Lite,
            "MIXED" => Self::Mixed,
            _ => Self::Unspecified,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Unspecified => "UNSPECIFIED",
            Self::Normal => "NORMAL",
            Self::Fifo => "FIFO",
            Self::Delay => "DELAY",
            Self::Transaction => "TRANSACTION",
            Self::Priority => "PRIORITY",
            Self::Lite => "LITE",
            Self::Mixed => "MIXED",
        }
    }
}

impl Cluster {
    /// The message type of `topic`, from one of its masters (cached).
    pub async fn topic_message_type(&self, topic: &str) -> Result<TopicMessageType, ClusterError> {
        if let Some(known) = self.topic_types.get(topic) {
            return Ok(known);
        }
        let route = self.route(topic).await?;
        let header = GetTopicConfigRequestHeader {
            topic: topic.to_owned(),
            lo: None,
        };
        let request =
            RemotingCommand::request(RequestCode::GET_TOPIC_CONFIG, header.to_ext_fields());
        let response = self.ask_a_master(&route, request).await?;
        let kind = if response.code == ResponseCode::TOPIC_NOT_EXIST.as_i32() {
            return Err(ClusterError::TopicNotFound(topic.to_owned()));
        } else {
            let config: TopicConfig = fastjson::decode(&response.body)
                .map_err(|e| ClusterError::BadAnswer(format!("config of topic {topic}: {e}")))?;
            TopicMessageType::from_attribute(
                config
                    .attributes
                    .get(MESSAGE_TYPE_ATTRIBUTE)
                    .map(String::as_str),
            )
        };
        self.topic_types.put(topic, kind);
        Ok(kind)
    }

    /// Whether `group` consumes orderly (`consumeMessageOrderly`), asked of a master that
    /// serves `topic` (cached); a group the broker does not know is not orderly.
    pub async fn group_is_fifo(&self, topic: &str, group: &str) -> Result<bool, ClusterError> {
        Ok(self
            .group_config(topic, group)
            .await?
            .is_some_and(|g| g.consume_message_orderly))
    }

    /// The settings of `group` on a master serving `topic`, `None` if it has none.
    pub async fn group_config(
        &self,
        topic: &str,
        group: &str,
    ) -> Result<Option<SubscriptionGroupConfig>, ClusterError> {
        let key = format!("{topic}\u{1}{group}");
        if let Some(known) = self.group_configs.get(&key) {
            return Ok(known);
        }
        let route = self.route(topic).await?;
        let header = GetSubscriptionGroupConfigRequestHeader {
            group: group.to_owned(),
        };
        let request = RemotingCommand::request(
            RequestCode::GET_SUBSCRIPTIONGROUP_CONFIG,
            header.to_ext_fields(),
        );
        let response = self.ask_a_master(&route, request).await?;
        let config = if response.code == ResponseCode::SUCCESS.as_i32() {
            Some(
                fastjson::decode::<SubscriptionGroupConfig>(&response.body).map_err(|e| {
                    ClusterError::BadAnswer(format!("config of group {group}: {e}"))
                })?,
            )
        } else {
            None
        };
        self.group_configs.put(&key, config.clone());
        Ok(config)
    }

    /// Sends `request` to the first master of `route` that answers.
    async fn ask_a_master(
        &self,
        route: &TopicRouteData,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClusterError> {
        let mut last_error = None;
        for addr in route.broker_datas.iter().filter_map(|b| b.master_addr()) {
            match self
                .remoting
                .invoke(addr, request.clone(), self.timeout)
                .await
            {
                Ok(response) => return Ok(response),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.map_or_else(
            || ClusterError::BadAnswer("the route names no master".into()),
            ClusterError::Remoting,
        ))
    }
}
