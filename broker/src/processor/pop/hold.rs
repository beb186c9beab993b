//! Long polling of POPs and NOTIFICATIONs that found nothing (RocketMQ's
//! `PopLongPollingService`), in the manner of the pull hold (`pull/hold.rs`): the request is
//! parked, without a lane worker, until a message reaches its topic or its retry topic (the
//! store's dispatcher tells [`PopHoldService::arriving`]), its poll time ends, or its
//! connection closes; then it is run again, and answered or parked again.
//!
//! Bounded as RocketMQ bounds it: `maxPopPollingSize` parked in all and `popPollingSize` per
//! topic; beyond either a POP is answered POLLING_FULL (a NOTIFICATION `hasMsg=false`).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::net::RequestContext;
use stellmq_remoting::protocol::headers::{
    CommandHeader, NotificationResponseHeader, PopMessageResponseHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_store::MessageArrivingListener;
use tokio_util::sync::CancellationToken;

use super::message::Popped;
use super::PopCore;
use crate::context::now_ms;

/// Passes of the 100 ms check between lite subscription expiries (2 minutes).
const LITE_EXPIRY_PASSES: u64 = 1_200;
/// A lite client whose subscription did not change for this long is forgotten (its
/// consumer renews it every 30 s).
const LITE_SUBSCRIPTION_TIMEOUT_MS: i64 = 180_000;

/// How long after parking a POP that may have missed a message is run again.
const RECHECK_DELAY: Duration = Duration::from_millis(20);

/// Where a POP waits: its topic (one queue or any) and its retry topic.
#[derive(Debug, Clone)]
pub struct Parking {
    pub topic: String,
    pub retry_topic: String,
    pub group: String,
    /// -1 = any queue.
    pub queue_id: i32,
    pub deadline_ms: i64,
    /// A NOTIFICATION rather than a POP.
    pub notification: bool,
    /// An orderly POP (its blocked queues do not count as new data).
    pub order: bool,
    pub attempt_id: Option<String>,
}

struct Parked {
    ctx: RequestContext,
    request: RemotingCommand,
    parking: Parking,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    entries: HashMap<u64, Parked>,
    /// Topic -> ids waiting on it.
    by_topic: HashMap<String, Vec<u64>>,
}

impl Table {
    fn count_on(&self, topic: &str) -> usize {
        self.by_topic.get(topic).map_or(0, Vec::len)
    }

    fn insert(&mut self, parked: Parked) {
        let id = self.next_id;
        self.next_id += 1;
        let (topic, retry) = (&parked.parking.topic, &parked.parking.retry_topic);
        self.by_topic.entry(topic.clone()).or_default().push(id);
        if retry != topic {
            self.by_topic.entry(retry.clone()).or_default().push(id);
        }
        self.entries.insert(id, parked);
    }

    fn take(&mut self, id: u64) -> Option<Parked> {
        let parked = self.entries.remove(&id)?;
        for topic in [&parked.parking.topic, &parked.parking.retry_topic] {
            if let Some(ids) = self.by_topic.get_mut(topic) {
                ids.retain(|i| *i != id);
                if ids.is_empty() {
                    self.by_topic.remove(topic);
                }
            }
        }
        Some(parked)
    }

    /// Takes what waits on `topic` (queue `queue_id`, or any with -1).
    fn take_topic(&mut self, topic: &str, queue_id: i32) -> Vec<Parked> {
        let ids: Vec<u64> = self
            .by_topic
            .get(topic)
            .map(|ids| {
                ids.iter()
                    .copied()
                    .filter(|id| {
                        self.entries.get(id).is_some_and(|p| {
                            queue_id < 0
                                || p.parking.queue_id < 0
                                || p.parking.queue_id == queue_id
                                || p.parking.retry_topic == topic
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        ids.into_iter().filter_map(|id| self.take(id)).collect()
    }
}

/// Parked POPs and notifications.
pub struct PopHoldService {
    core: Weak<PopCore>,
    table: Mutex<Table>,
    max_total: usize,
    max_per_topic: usize,
    runtime: tokio::runtime::Handle,
}

impl PopHoldService {
    pub fn new(core: &Arc<PopCore>, runtime: tokio::runtime::Handle) -> Arc<Self> {
        let (max_total, max_per_topic) = {
            let c = core.settings.get();
            (c.max_pop_polling_size.max(1), c.pop_polling_size.max(1))
        };
        Arc::new(Self {
            core: Arc::downgrade(core),
            table: Mutex::new(Table::default()),
            max_total,
            max_per_topic,
            runtime,
        })
    }

    /// Parks a request; `Some(answer)` when the table is full.
    pub(super) fn park(
        self: &Arc<Self>,
        core: &PopCore,
        ctx: RequestContext,
        request: RemotingCommand,
        parking: Parking,
    ) -> Option<RemotingCommand> {
        let (topic, queue_id, group, order, attempt) = (
            parking.topic.clone(),
            parking.queue_id,
            parking.group.clone(),
            parking.order,
            parking.attempt_id.clone(),
        );
        {
            let mut table = self.table.lock();
            if table.entries.len() >= self.max_total || table.count_on(&topic) >= self.max_per_topic
            {
                tracing::warn!(%topic, parked = table.entries.len(), "POP long-polling table full");
                return Some(full(&request, parking.notification));
            }
            ctx.release_worker();
            table.insert(Parked {
                ctx,
                request,
                parking,
            });
        }
        // A message may have arrived between the read and the parking. The re-run comes a
        // little later, so that a queue another POP holds (skipped, but with messages) is
        // not re-run in a tight loop.
        let order = order.then_some(attempt.as_deref());
        if super::peek::has_new(core, &group, &topic, queue_id, order) {
            let hold = self.clone();
            self.runtime.spawn(async move {
                tokio::time::sleep(RECHECK_DELAY).await;
                hold.wake(&topic, queue_id);
            });
        }
        None
    }

    /// Runs again what waits on `topic`.
    pub fn wake(self: &Arc<Self>, topic: &str, queue_id: i32) {
        let woken = {
            let mut table = self.table.lock();
            if table.entries.is_empty() {
                return;
            }
            table.take_topic(topic, queue_id)
        };
        for parked in woken {
            self.resume(parked);
        }
    }

    fn resume(self: &Arc<Self>, parked: Parked) {
        if parked.ctx.channel.is_closed() {
            return;
        }
        let Some(core) = self.core.upgrade() else {
            return;
        };
        let hold = self.clone();
        self.runtime.spawn(async move {
            let outcome = if parked.parking.notification {
                super::peek::run_notification(&core, &parked.request)
            } else if parked.request.code == RequestCode::POP_LITE_MESSAGE.as_i32() {
                super::lite::run(&core, &parked.request)
            } else {
                super::message::run(&core, None, &parked.request).await
            };
            let response = match outcome {
                Ok(Popped::Answer(response)) => response,
                Ok(Popped::Park(parking)) => {
                    match hold.park(&core, parked.ctx.clone(), parked.request.clone(), parking) {
                        None => return,
                        Some(full) => full,
                    }
                }
                Err(e) => parked.request.response_to(e.code, Some(e.remark)),
            };
            if !parked.ctx.channel.try_send(response) {
                tracing::debug!("consumer left before its POP was answered");
            }
        });
    }

    /// Periodic pass: answers what is due, forgets closed connections.
    pub(crate) fn check_all(self: &Arc<Self>) {
        let Some(now) = self.core.upgrade().map(|core| core.clock.now_ms()) else {
            return;
        };
        let due: Vec<Parked> = {
            let mut table = self.table.lock();
            let ids: Vec<u64> = table
                .entries
                .iter()
                .filter(|(_, p)| now >= p.parking.deadline_ms || p.ctx.channel.is_closed())
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter().filter_map(|id| table.take(id)).collect()
        };
        for parked in due {
            self.resume(parked);
        }
    }

    /// Runs the periodic check every 100 ms until `stop`; every 2 minutes it forgets lite
    /// clients whose subscription did not change for 3 (RocketMQ's
    /// `liteSubscriptionCheckInterval` and `liteSubscriptionCheckTimeoutMills`).
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut passes: u64 = 0;
        let started = std::time::Instant::now();
        let mut expiry: Option<tokio::task::JoinHandle<usize>> = None;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(100)) => self.check_all(),
            }
            passes += 1;
            if passes.is_multiple_of(LITE_EXPIRY_PASSES) {
                if let Some(core) = self.core.upgrade() {
                    let before = core.clock.now_ms() - LITE_SUBSCRIPTION_TIMEOUT_MS;
                    let gone = core.lite.expire(before);
                    if gone > 0 {
                        tracing::info!(
                            clients = gone,
                            "lite subscriptions of silent clients dropped"
                        );
                    }
                    // Deleting files blocks: off the runtime's workers, and not waited for
                    // (the held POPs' deadlines keep being checked); one pass at a time.
                    if expiry.as_ref().is_none_or(|e| e.is_finished()) {
                        let uptime = started.elapsed().as_millis() as i64;
                        expiry = Some(tokio::task::spawn_blocking(move || {
                            super::lite::lifecycle::expire_idle(&core, uptime)
                        }));
                    }
                }
            }
        }
    }

    /// A message arrived in `topic`: the lite clients chosen for it, when it is a lite
    /// topic's queue, run their held POPs again.
    fn arriving_lite(self: &Arc<Self>, topic: &str) {
        let Some(core) = self.core.upgrade() else {
            return;
        };
        for key in super::lite::arrivals(&core, topic) {
            self.wake(&key, -1);
        }
    }

    /// Parked POPs of a group on a topic's queue (`POLLING_INFO`).
    pub fn polling_num(&self, topic: &str, group: &str, queue_id: i32) -> usize {
        let table = self.table.lock();
        table
            .by_topic
            .get(topic)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| table.entries.get(id))
                    .filter(|p| {
                        p.parking.topic == topic
                            && p.parking.group == group
                            && p.parking.queue_id == queue_id
                            && !p.parking.notification
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    /// Requests parked now.
    pub fn parked_count(&self) -> usize {
        self.table.lock().entries.len()
    }
}

fn full(request: &RemotingCommand, notification: bool) -> RemotingCommand {
    if notification {
        return request
            .response_to(ResponseCode::SUCCESS, None)
            .with_ext_fields(NotificationResponseHeader { has_msg: false }.to_ext_fields());
    }
    // RocketMQ's clients read the POP response header of a POLLING_FULL answer too.
    let invisible_time = request
        .ext_fields
        .get("invisibleTime")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let fields = PopMessageResponseHeader {
        pop_time: now_ms(),
        invisible_time,
        ..Default::default()
    }
    .to_ext_fields();
    request
        .response_to(
            ResponseCode::POLLING_FULL,
            Some(
                "[POLLING_FULL] too many POP requests are waiting on this broker; try again later"
                    .to_owned(),
            ),
        )
        .with_ext_fields(fields)
}

/// The store's arrival listener for both long-polling tables: pulls and POPs.
pub struct Arrivals {
    pub pulls: Arc<crate::processor::pull::PullHoldService>,
    pub pops: Arc<PopHoldService>,
}

impl MessageArrivingListener for Arrivals {
    fn arriving(&self, topic: &str, queue_id: i32, offset: i64, tags_code: i64, store_ts: i64) {
        self.pulls
            .arriving(topic, queue_id, offset, tags_code, store_ts);
        self.pops.wake(topic, queue_id);
        if topic.starts_with(stellmq_remoting::protocol::lite::LITE_TOPIC_PREFIX) {
            self.pops.arriving_lite(topic);
        }
    }
}
