//! LITE_SUBSCRIPTION_CTL (RocketMQ 5.5's `LiteSubscriptionCtlProcessor`): clients (through
//! mqproxy) add and remove the lite topics they receive.

use std::sync::Arc;

use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::lite::{action, LiteSubscriptionCtlRequestBody};
use stellmq_remoting::protocol::lite::{check_lite_topic, lmq_name, MAX_LITE_TOPIC_SIZE};
use stellmq_remoting::protocol::names;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use super::registry::SubscribeError;
use super::{arrivals_for_client, PopCore, PopHoldService};

/// The most subscription entries one request may carry.
const MAX_ENTRIES: usize = 1_000;
/// The most lite topics one entry may name.
const MAX_LITE_TOPICS: usize = 100_000;

pub struct LiteCtlProcessor {
    pub core: Arc<PopCore>,
    pub hold: Arc<PopHoldService>,
}

fn refused(remark: impl Into<String>) -> ProcessorError {
    ProcessorError::new(ResponseCode::ILLEGAL_OPERATION, remark)
}

impl LiteCtlProcessor {
    pub(crate) fn ctl(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessResult {
        let request = &request;
        if request.body.is_empty() {
            return Err(refused("Request body is null."));
        }
        let body: LiteSubscriptionCtlRequestBody = fastjson::decode(&request.body)?;
        if body.subscription_set.is_empty() {
            return Err(refused("LiteSubscriptionCtlRequestBody is empty."));
        }
        if body.subscription_set.len() > MAX_ENTRIES {
            return Err(refused(format!(
                "at most {MAX_ENTRIES} subscriptions a request"
            )));
        }
        let core = &self.core;
        let now = core.clock.now_ms();
        for entry in &body.subscription_set {
            if entry.client_id.trim().is_empty()
                || entry.group.trim().is_empty()
                || entry.topic.trim().is_empty()
            {
                continue;
            }
            names::check_topic(&entry.topic).map_err(|e| refused(e.to_string()))?;
            names::check_group(&entry.group).map_err(|e| refused(e.to_string()))?;
            if entry.lite_topic_set.len() > MAX_LITE_TOPICS {
                return Err(refused(format!(
                    "at most {MAX_LITE_TOPICS} lite topics a subscription"
                )));
            }
            let mut lmqs = Vec::with_capacity(entry.lite_topic_set.len());
            for lite in &entry.lite_topic_set {
                check_lite_topic(lite, MAX_LITE_TOPIC_SIZE).map_err(refused)?;
                lmqs.push(lmq_name(&entry.topic, lite));
            }
            let adding = matches!(
                entry.action.as_str(),
                action::PARTIAL_ADD | action::COMPLETE_ADD
            );
            if adding {
                match core.groups.get(&entry.group) {
                    Some(group) if group.consume_enable => {}
                    _ => return Err(refused("Consumer group is not allowed to consume.")),
                }
            }
            let outcome = match entry.action.as_str() {
                action::PARTIAL_ADD | action::COMPLETE_ADD => core.lite.add(
                    &entry.client_id,
                    &entry.group,
                    &entry.topic,
                    &lmqs,
                    entry.action == action::COMPLETE_ADD,
                    now,
                ),
                action::PARTIAL_REMOVE => {
                    core.lite.remove(&entry.client_id, &lmqs, now);
                    Ok(())
                }
                action::COMPLETE_REMOVE => {
                    core.lite.remove_client(&entry.client_id);
                    Ok(())
                }
                other => return Err(refused(format!("unknown lite subscription action {other}"))),
            };
            match outcome {
                Ok(()) => {}
                Err(e @ SubscribeError::Quota(_)) => {
                    return Err(ProcessorError::new(
                        ResponseCode::LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
                        e.to_string(),
                    ))
                }
                Err(e) => return Err(refused(e.to_string())),
            }
            if adding {
                // What the lite topics already hold is news for the client.
                if let Some(key) = arrivals_for_client(core, &entry.client_id, &entry.group, &lmqs)
                {
                    self.hold.wake(&key, -1);
                }
            }
        }
        Ok(Some(request.success_to()))
    }
}
