//! One long-polling pull loop per assigned queue: flow control, orderly locks, broker
//! choice (master, or the broker a response suggested, or a slave once the master is gone)
//! and what each pull status means for the queue's position.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_remoting::protocol::body::MessageModel;
use stellmq_remoting::protocol::headers::PullMessageRequestHeader;
use stellmq_remoting::protocol::message::{now_ms, pull_sys_flag, MessageRecord};
use stellmq_remoting::protocol::{RequestCode, ResponseCode};

use super::core::ConsumerCore;
use super::queue_state::QueueState;
use crate::message::ReceivedMessage;
use crate::request::request;

const PULL_SUSPEND_MS: i64 = 15_000;
const PULL_TIMEOUT: Duration = Duration::from_secs(30);

/// Long-polls one queue until it is dropped, handing messages to the sink.
pub(crate) async fn run(core: Arc<ConsumerCore>, state: Arc<QueueState>) {
    let mq = state.mq.clone();
    let namespace: Option<Arc<str>> = core.config.namespace.as_deref().map(Arc::from);
    let mut locked_at = Instant::now();
    loop {
        if state.dropped.is_cancelled() {
            return;
        }
        // Broker locks expire after 60 s: renew every 20 s, as Java clients do.
        if state.locked.load(Ordering::Acquire) && locked_at.elapsed() >= Duration::from_secs(20) {
            let renewed = core.lock_call(RequestCode::LOCK_BATCH_MQ, &mq).await;
            state.locked.store(renewed, Ordering::Release);
            if renewed {
                state.last_lock_ms.store(now_ms(), Ordering::Release);
            }
            locked_at = Instant::now();
        }
        if state.in_flight_count() >= core.config.pull_threshold_for_queue
            || state.in_flight_bytes() >= core.config.pull_threshold_size_for_queue << 20
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        if core.sink.orderly()
            && core.config.message_model == MessageModel::Clustering
            && !state.locked.load(Ordering::Acquire)
        {
            if core.lock_call(RequestCode::LOCK_BATCH_MQ, &mq).await {
                state.locked.store(true, Ordering::Release);
                state.last_lock_ms.store(now_ms(), Ordering::Release);
                locked_at = Instant::now();
            } else {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        }
        let suggested = state.suggested_broker.load(Ordering::Acquire);
        let Some((addr, is_master)) = core.routes.pull_addr(&mq.broker_name, suggested) else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let Some(sub) = core.subscriptions.get(&mq.topic) else {
            return;
        };
        let offset = state.next_pull.load(Ordering::Acquire);
        let commit = core
            .offsets
            .get(&mq)
            .filter(|_| !core.offsets.is_local())
            .unwrap_or(0);
        let mut sys_flag = pull_sys_flag::SUSPEND | pull_sys_flag::SUBSCRIPTION;
        // Offsets are committed to masters only; a slave's copy comes from its master.
        if commit > 0 && is_master {
            sys_flag |= pull_sys_flag::COMMIT_OFFSET;
        }
        let header = PullMessageRequestHeader {
            consumer_group: core.config.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            queue_offset: offset,
            max_msg_nums: core.config.pull_batch_size,
            sys_flag,
            commit_offset: commit,
            suspend_timeout_millis: PULL_SUSPEND_MS,
            subscription: Some(sub.sub_string.clone()),
            sub_version: sub.sub_version,
            expression_type: sub.expression_type.clone(),
            max_msg_bytes: None,
        };
        let request = request(RequestCode::PULL_MESSAGE, &header);
        let pull_started = Instant::now();
        let response = tokio::select! {
            _ = state.dropped.cancelled() => return,
            _ = state.repositioned.notified() => continue,
            r = core.instance.remoting.invoke(&addr, request, PULL_TIMEOUT) => r,
        };
        if state.next_pull.load(Ordering::Acquire) != offset {
            // Repositioned while this pull was out: its answer is for the old position.
            continue;
        }
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(queue = ?mq, %addr, error = %e, "pull failed, retrying in 3 s");
                // The broker may be gone for good: a fresh route may offer its slave.
                state.suggested_broker.store(0, Ordering::Release);
                core.refresh_routes_soon();
                tokio::time::sleep(Duration::from_secs(3)).await;
                continue;
            }
        };
        state.last_pull_ms.store(now_ms(), Ordering::Release);
        if let Some(id) = response
            .ext_fields
            .get("suggestWhichBrokerId")
            .and_then(|v| v.parse::<i64>().ok())
        {
            state.suggested_broker.store(id, Ordering::Release);
        }
        let next = response
            .ext_fields
            .get("nextBeginOffset")
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(offset);
        match response.response_code() {
            Some(ResponseCode::SUCCESS) => {
                let records =
                    MessageRecord::decode_all(response.body.clone(), false).unwrap_or_default();
                state.next_pull.store(next, Ordering::Release);
                let rt_ms = pull_started.elapsed().as_millis() as u64;
                core.stats.pulled(&mq.topic, rt_ms, records.len());
                // The broker filters by tag hash; collisions are removed here by the real tag.
                let wanted: Vec<ReceivedMessage> = records
                    .into_iter()
                    .filter(|r| {
                        sub.tags_set.is_empty()
                            || r.properties
                                .tags()
                                .is_some_and(|t| sub.tags_set.contains(t))
                    })
                    .map(|r| ReceivedMessage::new(r, mq.clone()).in_namespace(namespace.as_ref()))
                    .collect();
                if wanted.is_empty() {
                    core.offsets
                        .record(&mq, state.consumed_offset(), &state.dropped);
                } else {
                    state.begin(wanted.iter().map(|m| (m.queue_offset(), m.body.len())));
                    core.sink.deliver(core.clone(), state.clone(), wanted).await;
                }
            }
            Some(ResponseCode::PULL_NOT_FOUND) | Some(ResponseCode::PULL_RETRY_IMMEDIATELY) => {
                state.next_pull.store(next, Ordering::Release);
                core.offsets
                    .record(&mq, state.consumed_offset(), &state.dropped);
            }
            Some(ResponseCode::PULL_OFFSET_MOVED) => {
                tracing::warn!(queue = ?mq, from = offset, to = next, "offset moved by the broker");
                state.next_pull.store(next, Ordering::Release);
                core.offsets.update(&mq, next, true);
            }
            _ => {
                tracing::debug!(queue = ?mq, code = response.code, remark = response.remark_str(), "pull refused, retrying in 3 s");
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
        }
    }
}
