//! Long polling: pulls that found nothing wait here until a message reaches their queue,
//! their deadline passes, or their connection closes.
//!
//! The table is bounded (`maxParkedPulls`, `maxParkedPullsPerConnection`,
//! `maxParkedPullBytes`): a pull that would exceed a bound is answered SYSTEM_BUSY at once,
//! and clients retry a little later. Parked requests keep their header only (a pull has no
//! use for a body), counted by size.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::net::{ProcessorError, RequestContext};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::MessageArrivingListener;
use tokio_util::sync::CancellationToken;

use super::{PullCore, Pulled};
use crate::filter::SubscriptionFilter;

/// Remark of a pull refused because the table is full.
pub const PARKED_FULL_REMARK: &str =
    "[PULL_HOLD_FULL] too many pulls are waiting on this broker; try again later";

pub(super) struct Parked {
    pub ctx: RequestContext,
    pub request: RemotingCommand,
    pub offset: i64,
    /// When it is answered PULL_NOT_FOUND, on the broker's clock (ms).
    pub deadline_ms: i64,
    pub filter: SubscriptionFilter,
    /// Estimated bytes held.
    weight: usize,
}

impl Parked {
    pub fn new(
        ctx: RequestContext,
        mut request: RemotingCommand,
        offset: i64,
        deadline_ms: i64,
        filter: SubscriptionFilter,
    ) -> Self {
        request.body = bytes::Bytes::new();
        let weight = 512
            + request
                .ext_fields
                .iter()
                .map(|(k, v)| k.len() + v.len() + 32)
                .sum::<usize>();
        Self {
            ctx,
            request,
            offset,
            deadline_ms,
            filter,
            weight,
        }
    }
}

/// The bounds of the table.
#[derive(Debug, Clone, Copy)]
pub struct HoldLimits {
    pub max_pulls: usize,
    pub max_per_connection: usize,
    pub max_bytes: usize,
}

#[derive(Default)]
struct Table {
    by_queue: HashMap<String, Vec<Parked>>,
    count: usize,
    bytes: usize,
    by_channel: HashMap<u64, usize>,
}

impl Table {
    fn admit(&self, p: &Parked, limits: &HoldLimits) -> bool {
        let channel = self
            .by_channel
            .get(&p.ctx.channel.id())
            .copied()
            .unwrap_or(0);
        self.count < limits.max_pulls
            && channel < limits.max_per_connection
            && self.bytes + p.weight <= limits.max_bytes
    }

    fn insert(&mut self, key: String, p: Parked) {
        self.count += 1;
        self.bytes += p.weight;
        *self.by_channel.entry(p.ctx.channel.id()).or_default() += 1;
        self.by_queue.entry(key).or_default().push(p);
    }

    fn forget(&mut self, p: &Parked) {
        self.count -= 1;
        self.bytes -= p.weight;
        let id = p.ctx.channel.id();
        if let Some(n) = self.by_channel.get_mut(&id) {
            *n -= 1;
            if *n == 0 {
                self.by_channel.remove(&id);
            }
        }
    }

    /// Takes the parked pulls of `key` that `ready` selects.
    fn take(&mut self, key: &str, ready: impl Fn(&Parked) -> bool) -> Vec<Parked> {
        let Some(list) = self.by_queue.get_mut(key) else {
            return Vec::new();
        };
        let (taken, waiting): (Vec<Parked>, Vec<Parked>) =
            std::mem::take(list).into_iter().partition(|p| ready(p));
        if waiting.is_empty() {
            self.by_queue.remove(key);
        } else if let Some(list) = self.by_queue.get_mut(key) {
            *list = waiting;
        }
        for p in &taken {
            self.forget(p);
        }
        taken
    }
}

/// Parked pulls by `topic@queueId`.
pub struct PullHoldService {
    pub(super) core: Arc<PullCore>,
    table: Mutex<Table>,
    limits: HoldLimits,
    runtime: tokio::runtime::Handle,
}

pub(super) fn key(topic: &str, queue_id: i32) -> String {
    format!("{topic}@{queue_id}")
}

impl PullHoldService {
    pub fn new(
        core: Arc<PullCore>,
        limits: HoldLimits,
        runtime: tokio::runtime::Handle,
    ) -> Arc<Self> {
        Arc::new(Self {
            core,
            table: Mutex::new(Table::default()),
            limits,
            runtime,
        })
    }

    /// Parks a pull, or refuses it (SYSTEM_BUSY) when the table is full.
    pub(super) fn park(&self, key: String, parked: Parked) -> Result<(), ProcessorError> {
        let mut table = self.table.lock();
        if !table.admit(&parked, &self.limits) {
            tracing::warn!(peer = %parked.ctx.channel.peer(), parked = table.count, "long-polling table full; pull refused");
            return Err(ProcessorError::new(
                ResponseCode::SYSTEM_BUSY,
                PARKED_FULL_REMARK,
            ));
        }
        table.insert(key, parked);
        Ok(())
    }

    /// Answers a parked pull by re-running it without suspension.
    fn resume(&self, parked: Parked) {
        let core = self.core.clone();
        self.runtime.spawn(async move {
            let response = match core.run(&parked.request, false) {
                Ok(Pulled::Answer(response)) => response,
                Ok(Pulled::Park { .. }) => return,
                Err(e) => parked.request.response_to(e.code, Some(e.remark)),
            };
            // Never waits: a consumer that does not read is disconnected instead.
            if !parked.ctx.channel.try_send(response) {
                tracing::debug!("consumer left before its long poll was answered");
            }
        });
    }

    /// Wakes the pulls of one queue that can now make progress (or are due).
    pub(super) fn check_queue(&self, key: &str, max_offset: i64, tags_code: Option<i64>) {
        let now = self.core.clock.now_ms();
        let ready = self.table.lock().take(key, |p| {
            let new_data = max_offset > p.offset
                && tags_code.is_none_or(|code| {
                    stellmq_store::MessageFilter::matches_tags_code(&p.filter, code)
                });
            new_data || now >= p.deadline_ms || p.ctx.channel.is_closed()
        });
        for p in ready.into_iter().filter(|p| !p.ctx.channel.is_closed()) {
            self.resume(p);
        }
    }

    /// Periodic pass over every parked pull: new data, deadlines, closed connections.
    pub(crate) fn check_all(&self) {
        let keys: Vec<String> = self.table.lock().by_queue.keys().cloned().collect();
        for key in keys {
            let Some((topic, queue_id)) = key
                .rsplit_once('@')
                .and_then(|(t, q)| q.parse::<i32>().ok().map(|q| (t.to_owned(), q)))
            else {
                continue;
            };
            let max = self.core.store.max_offset_in_queue(&topic, queue_id);
            self.check_queue(&key, max, None);
        }
    }

    /// Runs the periodic check until `stop`; every 200 ms with long polling, else per short
    /// poll.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let interval = {
            let c = self.core.settings.get();
            if c.long_polling_enable {
                Duration::from_millis(200)
            } else {
                Duration::from_millis(c.short_polling_time_mills.max(10))
            }
        };
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(interval) => self.check_all(),
            }
        }
    }

    /// Number of parked pulls.
    pub fn parked_count(&self) -> usize {
        self.table.lock().count
    }
}

impl MessageArrivingListener for PullHoldService {
    fn arriving(
        &self,
        topic: &str,
        queue_id: i32,
        logical_offset: i64,
        tags_code: i64,
        _store_timestamp: i64,
    ) {
        // Called for every dispatched message: no key is built while nothing is parked.
        if self.table.lock().by_queue.is_empty() {
            return;
        }
        self.check_queue(&key(topic, queue_id), logical_offset, Some(tags_code));
    }
}
