//! The settings the proxy answers a client's Settings with (RocketMQ's
//! `GrpcClientSettingsManager`): the client's own, plus the producer's retry policy and size
//! limit, or the consumer group's batch size, long-polling time, FIFO flag and retry policy.

use stellmq_remoting::protocol::body::SubscriptionGroupConfig;
use stellmq_remoting::protocol::lite::MAX_LITE_TOPIC_SIZE;

use super::message::ms_duration;
use crate::config::ProxyConfig;
use crate::pb::{
    retry_policy::Strategy, settings::PubSub, CustomizedBackoff, ExponentialBackoff, Metric,
    RetryPolicy, Settings,
};

/// Producers retry a failed send this many times in all (RocketMQ's default).
const PRODUCER_MAX_ATTEMPTS: i32 = 3;
/// RocketMQ's default retry delays of a consumer group (1s 5s 10s 30s 1m ... 2h).
const GROUP_RETRY_DELAYS_SECONDS: &[i64] = &[
    1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
];
/// Most messages a receive asks for.
const RECEIVE_BATCH_SIZE: i32 = 32;
/// A group's retries when the broker does not know the group (RocketMQ's default).
const DEFAULT_RETRY_MAX_TIMES: i32 = 16;

/// `client` merged with what the proxy decides; `group` is the consumer group's config on
/// the brokers, when it has one.
pub fn answer(
    client: &Settings,
    config: &ProxyConfig,
    group: Option<&SubscriptionGroupConfig>,
) -> Settings {
    let mut settings = client.clone();
    settings.metric = Some(Metric {
        on: false,
        endpoints: None,
    });
    match &mut settings.pub_sub {
        Some(PubSub::Publishing(publishing)) => {
            publishing.max_body_size = i32::try_from(config.max_message_size).unwrap_or(i32::MAX);
            publishing.validate_message_type = config.enable_topic_message_type_check;
            settings.backoff_policy = Some(RetryPolicy {
                max_attempts: PRODUCER_MAX_ATTEMPTS,
                strategy: Some(Strategy::ExponentialBackoff(ExponentialBackoff {
                    initial: Some(ms_duration(10)),
                    max: Some(ms_duration(1000)),
                    multiplier: 2.0,
                })),
            });
        }
        Some(PubSub::Subscription(subscription)) => {
            subscription.receive_batch_size = Some(RECEIVE_BATCH_SIZE);
            subscription.long_polling_timeout = Some(ms_duration(
                config.grpc_client_consumer_long_polling_timeout_millis as i64,
            ));
            subscription.fifo = Some(group.is_some_and(|g| g.consume_message_orderly));
            // Lite consumers check these themselves before they subscribe.
            subscription.lite_subscription_quota =
                Some(i32::try_from(super::lite::lite_quota(group)).unwrap_or(i32::MAX));
            subscription.max_lite_topic_size = Some(MAX_LITE_TOPIC_SIZE as i32);
            let retries = group.map_or(DEFAULT_RETRY_MAX_TIMES, |g| g.retry_max_times);
            settings.backoff_policy = Some(RetryPolicy {
                max_attempts: retries.saturating_add(1),
                strategy: Some(Strategy::CustomizedBackoff(CustomizedBackoff {
                    next: GROUP_RETRY_DELAYS_SECONDS
                        .iter()
                        .map(|s| ms_duration(s * 1000))
                        .collect(),
                })),
            });
        }
        None => {}
    }
    settings
}

/// How many times a group's message is delivered before it goes to the DLQ.
pub fn max_delivery_attempts(settings: &Settings) -> i32 {
    settings
        .backoff_policy
        .as_ref()
        .map_or(DEFAULT_RETRY_MAX_TIMES + 1, |p| p.max_attempts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::{Publishing, Subscription};

    #[test]
    fn producers_get_the_size_limit_and_retries() {
        let client = Settings {
            pub_sub: Some(PubSub::Publishing(Publishing::default())),
            ..Default::default()
        };
        let s = answer(&client, &ProxyConfig::default(), None);
        let Some(PubSub::Publishing(p)) = s.pub_sub else {
            panic!("publishing expected")
        };
        assert_eq!(p.max_body_size, 4 * 1024 * 1024);
        assert!(p.validate_message_type);
        assert_eq!(s.backoff_policy.unwrap().max_attempts, 3);
    }

    #[test]
    fn consumers_get_their_group_policy() {
        let client = Settings {
            pub_sub: Some(PubSub::Subscription(Subscription::default())),
            ..Default::default()
        };
        let mut group = SubscriptionGroupConfig::new("G");
        group.consume_message_orderly = true;
        group.retry_max_times = 3;
        let s = answer(&client, &ProxyConfig::default(), Some(&group));
        assert_eq!(max_delivery_attempts(&s), 4);
        let Some(PubSub::Subscription(sub)) = s.pub_sub else {
            panic!("subscription expected")
        };
        assert_eq!(sub.fifo, Some(true));
        assert_eq!(sub.long_polling_timeout.unwrap().seconds, 20);
        assert_eq!(sub.receive_batch_size, Some(32));
    }
}
