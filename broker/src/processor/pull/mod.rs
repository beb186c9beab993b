//! PULL_MESSAGE and LITE_PULL_MESSAGE with long polling (protocol.md 2.5).
//!
//! A pull that finds nothing, has FLAG_SUSPEND and is on its first pass is parked in the
//! [`PullHoldService`] instead of answered; the store's dispatcher wakes it when a message
//! reaches that queue, a periodic check re-runs it, and at its deadline it is answered
//! PULL_NOT_FOUND. Re-runs never suspend again and never commit the offset again.

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::{perm, MessageModel, SubscriptionData};
use stellmq_remoting::protocol::headers::{
    CommandHeader, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stellmq_remoting::protocol::message::pull_sys_flag;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::{GetMessageResult, GetMessageStatus, MessageStore};

use super::{guard, header, FAQ};

mod hold;
use crate::clients::ConsumerManager;
use crate::config::BrokerConfig;
use crate::context::{BrokerIdentity, Clock};
use crate::filter::{self, FilterError, SelectorCache, SubscriptionFilter};
use crate::group::SubscriptionGroupManager;
use crate::offset::ConsumerOffsetManager;
use crate::settings::Settings;
use crate::stats::{BrokerStats, GROUP_GET_NUMS, GROUP_GET_SIZE};
use crate::topic::TopicConfigManager;
use hold::{key, Parked};
pub use hold::{HoldLimits, PullHoldService, PARKED_FULL_REMARK};

/// Everything a pull reads.
pub struct PullCore {
    pub identity: Arc<BrokerIdentity>,
    pub settings: Settings<PullSettings>,
    pub store: Arc<MessageStore>,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub consumers: Arc<ConsumerManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    /// Parsed SQL92 subscriptions.
    pub selectors: SelectorCache,
    pub traffic: Arc<BrokerStats>,
    /// Long-poll deadlines run on this clock.
    pub clock: Arc<Clock>,
}

/// The outcome of running a pull once.
enum Pulled {
    Answer(RemotingCommand),
    /// Nothing yet: park until `offset` of the queue has a message.
    Park {
        topic: String,
        queue_id: i32,
        offset: i64,
        timeout: Duration,
        filter: SubscriptionFilter,
    },
}

/// The broker settings a pull reads (replaced when the configuration changes).
#[derive(Debug, Clone)]
pub struct PullSettings {
    pub broker_permission: i32,
    pub enable_property_filter: bool,
    pub slave_read_enable: bool,
    pub long_polling_enable: bool,
    pub short_polling_time_mills: u64,
    pub long_polling_max_suspend_millis: u64,
    pub offset_check_in_slave: bool,
}

impl From<&BrokerConfig> for PullSettings {
    fn from(c: &BrokerConfig) -> Self {
        Self {
            broker_permission: c.broker_permission,
            enable_property_filter: c.enable_property_filter,
            slave_read_enable: c.slave_read_enable,
            long_polling_enable: c.long_polling_enable,
            short_polling_time_mills: c.short_polling_time_mills,
            long_polling_max_suspend_millis: c.long_polling_max_suspend_millis,
            offset_check_in_slave: c.offset_check_in_slave,
        }
    }
}

impl PullCore {
    fn subscription(
        &self,
        h: &PullMessageRequestHeader,
    ) -> Result<SubscriptionData, ProcessorError> {
        let has_subscription = h.sys_flag & pull_sys_flag::SUBSCRIPTION != 0;
        if has_subscription {
            let expression = h.subscription.as_deref().unwrap_or("*");
            if filter::is_tag_type(h.expression_type.as_deref()) {
                return Ok(filter::build_subscription(
                    &h.topic,
                    expression,
                    h.sub_version,
                ));
            }
            return Ok(filter::normalize(SubscriptionData {
                topic: h.topic.clone(),
                sub_string: expression.to_owned(),
                sub_version: h.sub_version,
                expression_type: h.expression_type.clone(),
                ..Default::default()
            }));
        }
        let info = self.consumers.group(&h.consumer_group).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::SUBSCRIPTION_NOT_EXIST,
                format!("the consumer's group info not exist{FAQ}"),
            )
        })?;
        let sub = info.subscriptions.get(&h.topic).cloned().ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::SUBSCRIPTION_NOT_EXIST,
                format!("the consumer's subscription not exist{FAQ}"),
            )
        })?;
        if sub.sub_version < h.sub_version {
            return Err(ProcessorError::new(
                ResponseCode::SUBSCRIPTION_NOT_LATEST,
                "the consumer's subscription not latest",
            ));
        }
        if info.message_model == MessageModel::Broadcasting
            && !self
                .groups
                .get(&h.consumer_group)
                .is_none_or(|g| g.consume_broadcast_enable)
        {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!(
                    "the consumer group[{}] can not consume by broadcast way",
                    h.consumer_group
                ),
            ));
        }
        Ok(filter::normalize(sub))
    }

    fn run(
        &self,
        request: &RemotingCommand,
        allow_suspend: bool,
    ) -> Result<Pulled, ProcessorError> {
        let h: PullMessageRequestHeader = header(request)?;
        let config = self.settings.get();
        if !perm::is_readable(config.broker_permission) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!(
                    "the broker[{}] pulling message is forbidden",
                    self.identity.broker_addr
                ),
            ));
        }
        let group = self
            .groups
            .find_or_create(&h.consumer_group)
            .map_err(guard::group_refusal)?;
        if !group.consume_enable {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("subscription group no permission, {}", h.consumer_group),
            ));
        }
        let topic = self.topics.get(&h.topic).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist, apply first please!{FAQ}", h.topic),
            )
        })?;
        if !perm::is_readable(topic.perm) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("the topic[{}] pulling message is forbidden", h.topic),
            ));
        }
        if h.queue_id < 0 || h.queue_id >= topic.read_queue_nums {
            return Err(ProcessorError::system(format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{}]",
                h.queue_id, h.topic, topic.read_queue_nums, h.consumer_group
            )));
        }
        let sub = self.subscription(&h)?;
        let tag_filter =
            SubscriptionFilter::new(&sub, config.enable_property_filter, &self.selectors).map_err(
                |e| match e {
                    FilterError::NotSupported(_) => ProcessorError::system(e.to_string()),
                    FilterError::Parse(_) => ProcessorError::new(
                        ResponseCode::SUBSCRIPTION_PARSE_FAILED,
                        format!("parse the consumer's subscription failed: {e}"),
                    ),
                },
            )?;
        let max = usize::try_from(h.max_msg_nums).unwrap_or(0).clamp(1, 256);
        let mut result =
            self.store
                .get_messages(&h.topic, h.queue_id, h.queue_offset, max, &tag_filter);

        let is_master = self.identity.is_master();
        if allow_suspend && is_master && h.sys_flag & pull_sys_flag::COMMIT_OFFSET != 0 {
            self.offsets
                .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
        }
        let mut suggest = if config.slave_read_enable && result.suggest_pull_from_slave {
            group.which_broker_when_consume_slowly
        } else if config.slave_read_enable {
            group.broker_id
        } else {
            0
        };
        let mut code = status_code(&result, h.queue_offset);
        let mut next_begin_offset = result.next_begin_offset;
        if code == ResponseCode::PULL_OFFSET_MOVED && !is_master && !config.offset_check_in_slave {
            // A slave behind its master does not move the consumer (RocketMQ's
            // nextOffsetCorrection): it is sent to the master at the same offset.
            code = ResponseCode::PULL_RETRY_IMMEDIATELY;
            next_begin_offset = h.queue_offset;
            suggest = group.broker_id;
        }
        if code == ResponseCode::PULL_NOT_FOUND
            && allow_suspend
            && h.sys_flag & pull_sys_flag::SUSPEND != 0
        {
            let timeout = if config.long_polling_enable {
                Duration::from_millis(
                    (h.suspend_timeout_millis.max(0) as u64)
                        .min(config.long_polling_max_suspend_millis),
                )
            } else {
                Duration::from_millis(config.short_polling_time_mills)
            };
            return Ok(Pulled::Park {
                topic: h.topic,
                queue_id: h.queue_id,
                offset: h.queue_offset,
                timeout,
                filter: tag_filter,
            });
        }
        let fields = PullMessageResponseHeader {
            suggest_which_broker_id: suggest,
            next_begin_offset,
            min_offset: result.min_offset,
            max_offset: result.max_offset,
        }
        .to_ext_fields();
        let mut response = request
            .response_to(code, Some(result.status.name().to_owned()))
            .with_ext_fields(fields);
        if code == ResponseCode::SUCCESS {
            let key = format!("{}@{}", h.topic, h.consumer_group);
            let bytes: usize = result.messages.iter().map(|m| m.len()).sum();
            self.traffic
                .add(GROUP_GET_NUMS, &key, result.messages.len() as u64, 1);
            self.traffic.add(GROUP_GET_SIZE, &key, bytes as u64, 1);
            self.traffic.metrics.record_out(
                &h.topic,
                &h.consumer_group,
                result.messages.len() as u64,
                bytes as u64,
            );
            response = response.with_body_parts(std::mem::take(&mut result.messages));
        }
        Ok(Pulled::Answer(response))
    }
}

/// RocketMQ's status-to-code mapping on a master (protocol.md 2.5).
fn status_code(result: &GetMessageResult, offset: i64) -> ResponseCode {
    match result.status {
        GetMessageStatus::Found => ResponseCode::SUCCESS,
        GetMessageStatus::NoMatchedMessage | GetMessageStatus::MessageWasRemoving => {
            ResponseCode::PULL_RETRY_IMMEDIATELY
        }
        GetMessageStatus::NoMatchedLogicQueue | GetMessageStatus::NoMessageInQueue => {
            if offset != 0 {
                ResponseCode::PULL_OFFSET_MOVED
            } else {
                ResponseCode::PULL_NOT_FOUND
            }
        }
        GetMessageStatus::OffsetFoundNull | GetMessageStatus::OffsetOverflowOne => {
            ResponseCode::PULL_NOT_FOUND
        }
        GetMessageStatus::OffsetOverflowBadly | GetMessageStatus::OffsetTooSmall => {
            ResponseCode::PULL_OFFSET_MOVED
        }
    }
}

pub struct PullProcessor {
    pub hold: Arc<PullHoldService>,
}

impl PullProcessor {
    /// PULL_MESSAGE and LITE_PULL_MESSAGE: answered now, or parked until data arrives.
    pub(crate) fn pull(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessResult {
        match self.hold.core.run(&request, true) {
            Ok(Pulled::Answer(response)) => Ok(Some(response)),
            Ok(Pulled::Park {
                topic,
                queue_id,
                offset,
                timeout,
                filter,
            }) => {
                let timeout_ms = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX);
                let deadline_ms = self.hold.core.clock.now_ms().saturating_add(timeout_ms);
                let parked = Parked::new(ctx, request, offset, deadline_ms, filter);
                self.hold.park(key(&topic, queue_id), parked).map(|()| {
                    // A message may have arrived between the read and the parking.
                    let max = self.hold.core.store.max_offset_in_queue(&topic, queue_id);
                    self.hold.check_queue(&key(&topic, queue_id), max, None);
                    None
                })
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests;
