//! HEART_BEAT, UNREGISTER_CLIENT and CHECK_CLIENT_CONFIG.

use std::sync::Arc;
use std::time::Instant;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::{fastjson, perm, HeartbeatData, SubscriptionData};
use stellmq_remoting::protocol::headers::UnregisterClientRequestHeader;
use stellmq_remoting::protocol::names;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::header;
use crate::clients::{ClientChannel, ConsumerManager, ConsumerRegistration, ProducerManager};
use crate::filter::sql92::Selector;
use crate::filter::{self, FilterError};
use crate::group::SubscriptionGroupManager;
use crate::topic::{CreateTopicError, TopicConfigManager};

/// CHECK_CLIENT_CONFIG's body.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CheckClientRequestBody {
    #[serde(default)]
    subscription_data: SubscriptionData,
}

pub struct ClientManageProcessor {
    pub consumers: Arc<ConsumerManager>,
    pub producers: Arc<ProducerManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub topics: Arc<TopicConfigManager>,
    pub notify_enabled: bool,
    /// `enablePropertyFilter`: SQL92 subscriptions are served.
    pub property_filter_enabled: bool,
}

impl ClientManageProcessor {
    pub(crate) fn heartbeat(
        &self,
        ctx: &RequestContext,
        request: &RemotingCommand,
    ) -> ProcessResult {
        let data: HeartbeatData = fastjson::decode(&request.body)?;
        let client = ClientChannel {
            channel: ctx.channel.clone(),
            client_id: data.client_id.clone(),
            language: request.language.name().to_owned(),
            version: request.version,
            last_update: Instant::now(),
        };
        for consumer in data.consumer_data_set {
            let group = match self.groups.find_or_create(&consumer.group_name) {
                Ok(group) => group,
                Err(e) => {
                    tracing::debug!(peer = %ctx.channel.peer(), error = %e, "heartbeat for a group that cannot be used skipped");
                    continue;
                }
            };
            if group.retry_queue_nums > 0 {
                let retry = names::retry_topic(&group.group_name)
                    .map_err(CreateTopicError::from)
                    .and_then(|t| {
                        self.topics.auto_create(
                            &t,
                            group.retry_queue_nums,
                            perm::READ | perm::WRITE,
                        )
                    });
                if let Err(e) = retry {
                    tracing::warn!(group = %group.group_name, error = %e, "cannot create the group's retry topic");
                }
            }
            let changed = self.consumers.register(
                &consumer.group_name,
                ConsumerRegistration {
                    client: client.clone(),
                    consume_type: consumer.consume_type,
                    message_model: consumer.message_model,
                    consume_from_where: consumer.consume_from_where,
                    // A subscription to a topic no client could name is left out.
                    subscriptions: consumer
                        .subscription_data_set
                        .into_iter()
                        .filter(|s| names::check_topic(&s.topic).is_ok())
                        .map(filter::normalize)
                        .collect(),
                },
            );
            if changed {
                tracing::info!(event = "CONSUMER_REGISTERED", group = %consumer.group_name, client = %data.client_id, "consumer joined");
                if self.notify_enabled && group.notify_consumer_ids_changed_enable {
                    self.consumers.notify_ids_changed(&consumer.group_name);
                }
            }
        }
        for producer in data.producer_data_set {
            if names::check_group(&producer.group_name).is_ok() {
                self.producers
                    .register(&producer.group_name, client.clone());
            }
        }
        Ok(Some(request.success_to()))
    }

    /// CHECK_CLIENT_CONFIG: Java consumers ask before subscribing with a SQL92 selector
    /// whether this broker can serve it.
    pub(crate) fn check_client_config(&self, request: &RemotingCommand) -> ProcessResult {
        let body: CheckClientRequestBody = fastjson::decode(&request.body)?;
        let sub = body.subscription_data;
        if filter::is_tag_type(sub.expression_type.as_deref()) {
            return Ok(Some(request.success_to()));
        }
        let kind = sub.expression_type.unwrap_or_default();
        if !self.property_filter_enabled || !kind.eq_ignore_ascii_case("SQL92") {
            return Err(ProcessorError::system(
                FilterError::NotSupported(kind).to_string(),
            ));
        }
        match Selector::parse(&sub.sub_string) {
            Ok(_) => Ok(Some(request.success_to())),
            Err(e) => Err(ProcessorError::new(
                ResponseCode::SUBSCRIPTION_PARSE_FAILED,
                e.to_string(),
            )),
        }
    }

    pub(crate) fn unregister(
        &self,
        ctx: &RequestContext,
        request: &RemotingCommand,
    ) -> ProcessResult {
        let h: UnregisterClientRequestHeader = header(request)?;
        if let Some(group) = h.producer_group.as_deref() {
            self.producers.unregister(group, ctx.channel.id());
        }
        if let Some(group) = h.consumer_group.as_deref() {
            if self.consumers.unregister(group, ctx.channel.id()) {
                tracing::info!(event = "CONSUMER_UNREGISTERED", %group, client = %h.client_id, "consumer left");
                if self.notify_enabled
                    && self
                        .groups
                        .get(group)
                        .is_none_or(|g| g.notify_consumer_ids_changed_enable)
                {
                    self.consumers.notify_ids_changed(group);
                }
            }
        }
        Ok(Some(request.success_to()))
    }
}

#[cfg(test)]
mod tests;
