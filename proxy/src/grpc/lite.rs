//! SyncLiteSubscription (RocketMQ 5.5's lite topics): a lite consumer adds and removes the
//! lite topics it receives; the proxy checks the request as RocketMQ's proxy does and hands
//! it to every master of the parent topic (LITE_SUBSCRIPTION_CTL).

use stellmq_remoting::protocol::body::lite::action;
use stellmq_remoting::protocol::body::SubscriptionGroupConfig;
use stellmq_remoting::protocol::lite::{check_lite_topic, MAX_LITE_TOPIC_SIZE};

use super::status::{ok, Refusal};
use super::{group_name, topic_name, Caller, Proxy};
use crate::cluster::LiteSubscription;
use crate::pb::{
    settings::PubSub, Code, LiteSubscriptionAction, Settings, SyncLiteSubscriptionRequest,
    SyncLiteSubscriptionResponse,
};

/// The group attribute naming a lite group's parent topic.
const LITE_BIND_TOPIC: &str = "lite.bind.topic";
/// The group attribute bounding a client's lite subscriptions, and its default.
const LITE_SUB_CLIENT_QUOTA: &str = "lite.sub.client.quota";
const DEFAULT_LITE_SUB_CLIENT_QUOTA: i64 = 2_000;
/// What a whole-set sync may carry beyond the quota (RocketMQ's proxy allows 300).
const QUOTA_SLACK: i64 = 300;

/// A group's lite subscription quota a client (`lite.sub.client.quota`, 2000 by default).
pub fn lite_quota(group: Option<&SubscriptionGroupConfig>) -> i64 {
    group
        .and_then(|g| g.attributes.get(LITE_SUB_CLIENT_QUOTA))
        .and_then(|q| q.trim().parse::<i64>().ok())
        .unwrap_or(DEFAULT_LITE_SUB_CLIENT_QUOTA)
}

pub async fn sync_lite_subscription(
    proxy: &Proxy,
    caller: Caller,
    request: SyncLiteSubscriptionRequest,
) -> Result<SyncLiteSubscriptionResponse, Refusal> {
    let topic = topic_name(request.topic.as_ref())?;
    let group = group_name(request.group.as_ref())?;
    let action = match LiteSubscriptionAction::try_from(request.action) {
        Ok(LiteSubscriptionAction::PartialAdd) => action::PARTIAL_ADD,
        Ok(LiteSubscriptionAction::PartialRemove) => action::PARTIAL_REMOVE,
        Ok(LiteSubscriptionAction::CompleteAdd) => action::COMPLETE_ADD,
        Ok(LiteSubscriptionAction::CompleteRemove) => action::COMPLETE_REMOVE,
        Err(_) => {
            return Err(Refusal::new(
                Code::BadRequest,
                format!("unknown lite subscription action {}", request.action),
            ))
        }
    };
    let config = proxy
        .cluster
        .group_config(&topic, &group)
        .await?
        .ok_or_else(|| Refusal::new(Code::IllegalConsumerGroup, "group not found"))?;
    let bound = config.attributes.get(LITE_BIND_TOPIC).map(String::as_str);
    if bound != Some(topic.as_str()) {
        return Err(Refusal::new(
            Code::IllegalTopic,
            format!(
                "lite group {group} is expected to bind topic {}, but actual is {topic}",
                bound.unwrap_or("")
            ),
        ));
    }
    if matches!(action, action::PARTIAL_ADD | action::COMPLETE_ADD) {
        for lite in &request.lite_topic_set {
            check_lite_topic(lite, MAX_LITE_TOPIC_SIZE)
                .map_err(|reason| Refusal::new(Code::IllegalLiteTopic, reason))?;
        }
    }
    let quota = lite_quota(Some(&config));
    if quota >= 0 && request.lite_topic_set.len() as i64 > quota.saturating_add(QUOTA_SLACK) {
        return Err(Refusal::new(
            Code::LiteSubscriptionQuotaExceeded,
            format!("lite subscription quota exceeded: {quota}"),
        ));
    }
    let change = LiteSubscription {
        action,
        client_id: caller.client_id.clone(),
        group,
        topic,
        lite_topics: request.lite_topic_set.clone(),
        version: request.version,
    };
    proxy.cluster.sync_lite_subscription(&change).await?;
    Ok(SyncLiteSubscriptionResponse { status: Some(ok()) })
}

/// A lite consumer that leaves: its subscriptions go at once (COMPLETE_REMOVE) rather than
/// when the brokers notice its silence.
pub async fn forget_client(proxy: &Proxy, caller: &Caller, settings: &Settings) {
    if !super::receive::is_lite_consumer(settings) {
        return;
    }
    let Some(PubSub::Subscription(subscription)) = &settings.pub_sub else {
        return;
    };
    let (Ok(group), Some(topic)) = (
        group_name(subscription.group.as_ref()),
        subscription
            .subscriptions
            .iter()
            .find_map(|s| topic_name(s.topic.as_ref()).ok()),
    ) else {
        return;
    };
    let change = LiteSubscription {
        action: action::COMPLETE_REMOVE,
        client_id: caller.client_id.clone(),
        group,
        topic,
        lite_topics: Vec::new(),
        version: None,
    };
    if let Err(e) = proxy.cluster.sync_lite_subscription(&change).await {
        tracing::debug!(client = %caller.client_id, error = %e, "lite subscriptions of a leaving client not removed; the brokers drop them when it stays silent");
    }
}
