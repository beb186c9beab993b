//! The lite topic admin requests (RocketMQ 5.5's `LiteManagerProcessor`):
//! GET_BROKER_LITE_INFO, GET_PARENT_TOPIC_INFO, GET_LITE_TOPIC_INFO, GET_LITE_CLIENT_INFO,
//! GET_LITE_GROUP_INFO and TRIGGER_LITE_DISPATCH, with RocketMQ's checks and remarks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::lite::{
    ClientGroup, GetBrokerLiteInfoResponseBody, GetLiteClientInfoResponseBody,
    GetLiteGroupInfoResponseBody, GetLiteTopicInfoResponseBody, GetParentTopicInfoResponseBody,
    LiteLagInfo,
};
use stellmq_remoting::protocol::body::{
    fastjson, OffsetWrapper, SubscriptionGroupConfig, TopicConfig, TopicOffset,
    MESSAGE_TYPE_ATTRIBUTE,
};
use stellmq_remoting::protocol::headers::{
    GetLiteClientInfoRequestHeader, GetLiteGroupInfoRequestHeader, GetLiteTopicInfoRequestHeader,
    GetParentTopicInfoRequestHeader, TriggerLiteDispatchRequestHeader,
};
use stellmq_remoting::protocol::lite::{lmq_name, split_lmq_name, LMQ_QUEUE_ID};
use stellmq_remoting::protocol::message::MessageKind;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::lifecycle::LITE_TOPIC_EXPIRATION_ATTRIBUTE;
use super::{parking_key, PopCore, PopHoldService, LITE_BIND_TOPIC_ATTRIBUTE};
use crate::processor::header;

/// Lite topics a GET_LITE_CLIENT_INFO answers at most.
const MAX_CLIENT_TOPICS: i32 = 10_000;

pub struct LiteAdminProcessor {
    pub core: Arc<PopCore>,
    pub hold: Arc<PopHoldService>,
}

fn answer(request: &RemotingCommand, body: &impl serde::Serialize) -> ProcessResult {
    Ok(Some(request.success_to().with_body(fastjson::encode(body))))
}

/// A LITE topic, or RocketMQ's refusal.
fn lite_topic(core: &PopCore, topic: &str) -> Result<TopicConfig, ProcessorError> {
    let config = core.topics.get(topic).ok_or_else(|| {
        ProcessorError::new(
            ResponseCode::TOPIC_NOT_EXIST,
            format!("Topic [{topic}] not exist."),
        )
    })?;
    if !is_lite(&config) {
        return Err(ProcessorError::new(
            ResponseCode::INVALID_PARAMETER,
            format!("Topic [{topic}] type not match."),
        ));
    }
    Ok(config)
}

fn is_lite(config: &TopicConfig) -> bool {
    config
        .attributes
        .get(MESSAGE_TYPE_ATTRIBUTE)
        .map(String::as_str)
        == Some(MessageKind::Lite.name())
}

/// A lite group and its parent topic, or RocketMQ's refusal.
fn lite_group(
    core: &PopCore,
    group: &str,
) -> Result<(SubscriptionGroupConfig, String), ProcessorError> {
    let config = core.groups.get(group).ok_or_else(|| {
        ProcessorError::new(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("Group [{group}] not exist."),
        )
    })?;
    let bound = config
        .attributes
        .get(LITE_BIND_TOPIC_ATTRIBUTE)
        .filter(|t| !t.is_empty())
        .cloned()
        .ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::INVALID_PARAMETER,
                format!("Group [{group}] is not a LITE group."),
            )
        })?;
    Ok((config, bound))
}

fn expiration(config: &TopicConfig) -> i32 {
    config
        .attributes
        .get(LITE_TOPIC_EXPIRATION_ATTRIBUTE)
        .and_then(|m| m.trim().parse().ok())
        .unwrap_or(-1)
}

/// Each parent topic and the groups bound to it.
fn groups_by_parent(core: &PopCore) -> BTreeMap<String, BTreeSet<String>> {
    let mut meta: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, config) in core.groups.wrapper().subscription_group_table {
        if let Some(parent) = config.attributes.get(LITE_BIND_TOPIC_ATTRIBUTE) {
            meta.entry(parent.clone()).or_default().insert(name);
        }
    }
    meta
}

fn lite_queues(core: &PopCore) -> Vec<String> {
    core.store
        .topics()
        .into_iter()
        .filter(|t| split_lmq_name(t).is_some())
        .collect()
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl LiteAdminProcessor {
    /// GET_BROKER_LITE_INFO (200074).
    pub(crate) fn broker_info(
        &self,
        _ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let core = &self.core;
        let topic_meta = core
            .topics
            .all()
            .into_iter()
            .filter(|(_, c)| is_lite(c))
            .map(|(name, c)| {
                let ttl = expiration(&c);
                (name, ttl)
            })
            .collect();
        let body = GetBrokerLiteInfoResponseBody {
            store_type: "default".into(),
            max_lmq_num: -1,
            current_lmq_num: count(lite_queues(core).len()),
            lite_subscription_count: count(core.lite.pairs()),
            order_info_count: count(core.orders.len()),
            cq_table_size: count(core.store.consume_queues_open().1),
            offset_table_size: count(core.offsets.groups().len()),
            event_map_size: count(core.lite.event_clients()),
            topic_meta,
            group_meta: groups_by_parent(core),
        };
        answer(&request, &body)
    }

    /// GET_PARENT_TOPIC_INFO (200075).
    pub(crate) fn parent_topic_info(
        &self,
        _ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: GetParentTopicInfoRequestHeader = header(&request)?;
        let core = &self.core;
        let config = lite_topic(core, &h.topic)?;
        let queues = lite_queues(core);
        let lite_topic_count = queues
            .iter()
            .filter(|q| split_lmq_name(q).is_some_and(|(parent, _)| parent == h.topic))
            .filter(|q| core.store.max_offset_in_queue(q, LMQ_QUEUE_ID) > 0)
            .count();
        let body = GetParentTopicInfoResponseBody {
            ttl: expiration(&config),
            groups: groups_by_parent(core).remove(&h.topic),
            lmq_num: count(queues.len()),
            lite_topic_count: count(lite_topic_count),
            topic: h.topic,
        };
        answer(&request, &body)
    }

    /// GET_LITE_TOPIC_INFO (200076).
    pub(crate) fn lite_topic_info(
        &self,
        _ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: GetLiteTopicInfoRequestHeader = header(&request)?;
        let core = &self.core;
        lite_topic(core, &h.parent_topic)?;
        let lmq = lmq_name(&h.parent_topic, &h.lite_topic);
        let max = core.store.max_offset_in_queue(&lmq, LMQ_QUEUE_ID).max(0);
        let topic_offset = if max > 0 {
            TopicOffset {
                min_offset: core.store.min_offset_in_queue(&lmq, LMQ_QUEUE_ID).max(0),
                max_offset: max,
                last_update_timestamp: core
                    .store
                    .message_store_timestamp(&lmq, LMQ_QUEUE_ID, max - 1)
                    .unwrap_or(0),
            }
        } else {
            TopicOffset::default()
        };
        let body = GetLiteTopicInfoResponseBody {
            subscriber: core
                .lite
                .subscribers(&lmq)
                .into_iter()
                .map(|(client_id, group)| ClientGroup { client_id, group })
                .collect(),
            topic_offset,
            // Every broker serves the lite topics it is sent (no sharding across brokers).
            sharding_to_broker: true,
            parent_topic: h.parent_topic,
            lite_topic: h.lite_topic,
        };
        answer(&request, &body)
    }

    /// GET_LITE_CLIENT_INFO (200077).
    pub(crate) fn lite_client_info(
        &self,
        _ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: GetLiteClientInfoRequestHeader = header(&request)?;
        let max_count = h.max_count.unwrap_or(1_000);
        if max_count <= 0 {
            return Err(ProcessorError::system("[maxCount] field invalid"));
        }
        let core = &self.core;
        lite_topic(core, &h.parent_topic)?;
        let group = core.groups.get(&h.group).ok_or_else(|| {
            ProcessorError::new(
                ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("Group [{}] not exist.", h.group),
            )
        })?;
        if group.attributes.get(LITE_BIND_TOPIC_ATTRIBUTE) != Some(&h.parent_topic) {
            return Err(ProcessorError::new(
                ResponseCode::INVALID_PARAMETER,
                format!("Subscription [{}]-[{}] not match.", h.group, h.parent_topic),
            ));
        }
        let limit = max_count.min(MAX_CLIENT_TOPICS) as usize;
        let sub = core.lite.subscription(&h.client_id);
        let body = GetLiteClientInfoResponseBody {
            last_access_time: core.lite.last_access(&h.client_id),
            last_consume_time: 0,
            lite_topic_count: sub.as_ref().map_or(-1, |s| count(s.lmqs.len())),
            lite_topic_set: sub.map(|s| s.lmqs.into_iter().take(limit).collect()),
            parent_topic: h.parent_topic,
            group: h.group,
            client_id: h.client_id,
        };
        answer(&request, &body)
    }

    /// GET_LITE_GROUP_INFO (200078).
    pub(crate) fn lite_group_info(
        &self,
        _ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: GetLiteGroupInfoRequestHeader = header(&request)?;
        let core = &self.core;
        let (_, parent) = lite_group(core, &h.group)?;
        let mut body = GetLiteGroupInfoResponseBody {
            group: h.group.clone(),
            parent_topic: parent.clone(),
            lite_topic: h.lite_topic.clone(),
            earliest_unconsumed_timestamp: -1,
            ..Default::default()
        };
        match h.lite_topic.as_deref().filter(|l| !l.is_empty()) {
            Some(lite) => {
                let lmq = lmq_name(&parent, lite);
                let max = core.store.max_offset_in_queue(&lmq, LMQ_QUEUE_ID);
                if max <= 0 {
                    body.total_lag_count = -1;
                } else if let Some(commit) = core
                    .offsets
                    .query(&h.group, &lmq, LMQ_QUEUE_ID)
                    .filter(|c| *c >= 0)
                {
                    let stored = |o: i64| core.store.message_store_timestamp(&lmq, LMQ_QUEUE_ID, o);
                    body.total_lag_count = max - commit;
                    body.earliest_unconsumed_timestamp = stored(commit).unwrap_or(-1);
                    body.lite_topic_offset_wrapper = Some(OffsetWrapper {
                        broker_offset: max,
                        consumer_offset: commit,
                        last_timestamp: if commit >= 1 {
                            stored(commit - 1).unwrap_or(0)
                        } else {
                            0
                        },
                        pull_offset: 0,
                    });
                }
            }
            None => {
                let top_k = h.top_k.unwrap_or(0);
                if top_k <= 0 {
                    return Err(ProcessorError::new(
                        ResponseCode::INVALID_PARAMETER,
                        format!("topK must be positive, not {top_k}"),
                    ));
                }
                let lags = self.lags(&h.group, &parent);
                body.total_lag_count = lags.iter().map(|l| l.lag_count).sum();
                let mut by_count = lags.clone();
                by_count.sort_by_key(|l| std::cmp::Reverse(l.lag_count));
                by_count.truncate(top_k as usize);
                let mut by_time: Vec<LiteLagInfo> = lags
                    .into_iter()
                    .filter(|l| l.earliest_unconsumed_timestamp > 0)
                    .collect();
                by_time.sort_by_key(|l| l.earliest_unconsumed_timestamp);
                by_time.truncate(top_k as usize);
                body.earliest_unconsumed_timestamp = by_time
                    .first()
                    .map_or(-1, |l| l.earliest_unconsumed_timestamp);
                body.lag_count_top_k = by_count;
                body.lag_timestamp_top_k = by_time;
            }
        }
        answer(&request, &body)
    }

    /// The lag of every lite topic of `parent` that `group` has an offset in.
    fn lags(&self, group: &str, parent: &str) -> Vec<LiteLagInfo> {
        let core = &self.core;
        core.offsets
            .topics_of_group(group)
            .into_iter()
            .filter_map(|lmq| {
                let (p, lite) = split_lmq_name(&lmq)?;
                if p != parent {
                    return None;
                }
                let commit = core.offsets.query(group, &lmq, LMQ_QUEUE_ID)?;
                let lag = core.store.max_offset_in_queue(&lmq, LMQ_QUEUE_ID) - commit;
                (commit >= 0 && lag > 0).then(|| LiteLagInfo {
                    lite_topic: lite.to_owned(),
                    lag_count: lag,
                    earliest_unconsumed_timestamp: core
                        .store
                        .message_store_timestamp(&lmq, LMQ_QUEUE_ID, commit)
                        .unwrap_or(-1),
                })
            })
            .collect()
    }

    /// TRIGGER_LITE_DISPATCH (200079).
    pub(crate) fn trigger_dispatch(
        &self,
        _ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: TriggerLiteDispatchRequestHeader = header(&request)?;
        let core = &self.core;
        lite_group(core, &h.group)?;
        let clients = match h.client_id.filter(|c| !c.is_empty()) {
            Some(client) => vec![client],
            None => core.lite.clients_of_group(&h.group),
        };
        for client in clients {
            let has_backlog = |lmq: &str| {
                let consumed = core.offsets.query(&h.group, lmq, LMQ_QUEUE_ID).unwrap_or(0);
                core.store.max_offset_in_queue(lmq, LMQ_QUEUE_ID) > consumed
            };
            if core.lite.renotify(&client, has_backlog) {
                self.hold.wake(&parking_key(&client), -1);
            }
        }
        Ok(Some(request.success_to()))
    }
}
