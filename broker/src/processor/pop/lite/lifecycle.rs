//! Idle lite topics go (RocketMQ 5.5's `LiteLifecycleManager`): a lite topic whose last
//! message is older than its parent's `lite.topic.expiration` (minutes; -1 or 0: never) is
//! deleted with its queue, its groups' offsets and batches in flight, and its subscriptions.
//! A lite topic whose parent topic is gone goes too. Nothing goes before the broker has run
//! [`MIN_LITE_TTL_MS`], and no lite topic lives less than that since its last message.

use stellmq_remoting::protocol::lite::{split_lmq_name, LMQ_QUEUE_ID};

use super::PopCore;

/// RocketMQ's `minLiteTTl`: 15 minutes.
pub const MIN_LITE_TTL_MS: i64 = 15 * 60_000;
/// The parent topic's attribute: minutes a lite topic lives after its last message.
pub const LITE_TOPIC_EXPIRATION_ATTRIBUTE: &str = "lite.topic.expiration";

/// How long lite topics of `parent` live after their last message; `None`: for ever.
fn time_to_live_ms(core: &PopCore, parent: &str) -> Option<i64> {
    let Some(config) = core.topics.get(parent) else {
        // The parent is gone: so are its lite topics.
        return Some(0);
    };
    let minutes = config
        .attributes
        .get(LITE_TOPIC_EXPIRATION_ATTRIBUTE)
        .and_then(|m| m.trim().parse::<i64>().ok())
        .filter(|m| *m > 0)?;
    Some(minutes.saturating_mul(60_000))
}

/// One pass (blocking: it deletes files); how many lite topics it deleted. `uptime_ms`:
/// how long the broker has run.
pub fn expire_idle(core: &PopCore, uptime_ms: i64) -> usize {
    if uptime_ms < MIN_LITE_TTL_MS {
        return 0;
    }
    let now = core.clock.now_ms();
    let mut deleted = 0;
    for lmq in core.store.topics() {
        let Some((parent, _)) = split_lmq_name(&lmq) else {
            continue;
        };
        let Some(ttl) = time_to_live_ms(core, parent) else {
            continue;
        };
        let max = core.store.max_offset_in_queue(&lmq, LMQ_QUEUE_ID);
        let last = if max > 0 {
            core.store
                .message_store_timestamp(&lmq, LMQ_QUEUE_ID, max - 1)
        } else {
            None
        };
        // A lite topic whose last message is no longer readable has had its time.
        let idle = last.map_or(i64::MAX, |t| now.saturating_sub(t));
        if idle < ttl.max(MIN_LITE_TTL_MS) {
            continue;
        }
        match delete(core, &lmq) {
            Ok(()) => deleted += 1,
            Err(e) => {
                tracing::warn!(lite_topic = %lmq, error = %e, "cannot delete an idle lite topic")
            }
        }
    }
    if deleted > 0 {
        tracing::info!(
            event = "LITE_TOPICS_EXPIRED",
            deleted,
            "idle lite topics deleted"
        );
    }
    deleted
}

/// Deletes a lite topic: subscriptions, batches in flight, offsets, then its queue.
pub fn delete(core: &PopCore, lmq: &str) -> Result<(), stellmq_store::StoreError> {
    core.lite.forget_lmq(lmq);
    core.orders.remove_topic(lmq);
    core.offsets.remove_topic(lmq);
    core.store.delete_topic(lmq)
}
