//! GET_BROKER_RUNTIME_INFO, GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST and
//! GET_ALL_PRODUCER_INFO.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{fastjson, KvTable, ProducerConnection};
use stellmq_remoting::protocol::headers::{
    GetConsumerConnectionListRequestHeader, GetProducerConnectionListRequestHeader,
    ViewBrokerStatsDataRequestHeader,
};
use stellmq_remoting::protocol::version::{CURRENT_VERSION, CURRENT_VERSION_DESC};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::MessageStore;

use crate::clients::{ConsumerManager, ProducerManager};
use crate::ha::{HaMaster, HaSlave};
use crate::processor::header;
use crate::runtime::{Counters, RuntimeStats};
use crate::stats::BrokerStats;

pub struct StatsAdminProcessor {
    pub store: Arc<MessageStore>,
    pub consumers: Arc<ConsumerManager>,
    pub producers: Arc<ProducerManager>,
    pub started: Instant,
    pub boot_timestamp: i64,
    pub ha_master: Option<Arc<HaMaster>>,
    pub ha_slave: Option<Arc<HaSlave>>,
    pub traffic: Arc<BrokerStats>,
    pub runtime: Arc<RuntimeStats>,
}

fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut units = UNITS.iter().peekable();
    let mut unit = "B";
    while let Some(next) = units.next() {
        unit = next;
        if value < 1024.0 || units.peek().is_none() {
            break;
        }
        value /= 1024.0;
    }
    format!("{value:.1} {unit}")
}

impl StatsAdminProcessor {
    /// Replication state, shown by `mqadmin haStatus`.
    fn replication_info(&self, put: &mut impl FnMut(&str, String)) {
        let max = self.store.commit_log_max_offset();
        put("commitLogMaxOffset", max.to_string());
        put(
            "commitLogMinOffset",
            self.store.commit_log_min_offset().to_string(),
        );
        if let Some(ha) = &self.ha_master {
            let slaves = ha.slaves();
            put("haSlaveCount", slaves.len().to_string());
            let list: Vec<String> = slaves
                .iter()
                .map(|(addr, acked)| format!("{addr}={acked}"))
                .collect();
            put("haSlaves", list.join(";"));
            let fastest = slaves.iter().map(|(_, a)| *a).max().unwrap_or(0);
            put("haSlaveFallBehindBytes", (max - fastest).max(0).to_string());
            put("haRefusedPeers", ha.refused_peers().to_string());
        }
        if let Some(ha) = &self.ha_slave {
            put("haMasterAddr", ha.master().unwrap_or_default());
            let master = ha.master_offset();
            put("haMasterOffset", master.to_string());
            put("haSlaveFallBehindBytes", (master - max).max(0).to_string());
        }
    }

    pub(crate) fn runtime_info(&self, request: &RemotingCommand) -> ProcessResult {
        let mut t = KvTable::default();
        let mut put = |k: &str, v: String| {
            t.table.insert(k.to_owned(), v);
        };
        put("brokerVersionDesc", CURRENT_VERSION_DESC.to_owned());
        put("brokerVersion", CURRENT_VERSION.to_string());
        put("brokerActive", "true".into());
        self.traffic_info(&mut put);
        self.queue_info(&mut put);
        self.store_info(&mut put);
        self.replication_info(&mut put);
        put("startAcceptSendRequestTimeStamp", "0".into());
        put("bootTimestamp", self.boot_timestamp.to_string());
        let uptime = self.started.elapsed().as_secs();
        let (d, h, m, s) = (
            uptime / 86400,
            uptime / 3600 % 24,
            uptime / 60 % 60,
            uptime % 60,
        );
        put(
            "runtime",
            format!("[ {d} days, {h} hours, {m} minutes, {s} seconds ]"),
        );
        Ok(Some(request.success_to().with_body(fastjson::encode(&t))))
    }

    /// Totals, today's and yesterday's mornings, and TPS over 10 s, 60 s and 600 s.
    fn traffic_info(&self, put: &mut impl FnMut(&str, String)) {
        let stats = self.store.stats();
        let live = Counters::read(&self.store);
        let (today, yesterday) = self.runtime.mornings();
        put("msgPutTotalYesterdayMorning", yesterday.puts.to_string());
        put("msgPutTotalTodayMorning", today.puts.to_string());
        put("msgPutTotalTodayNow", live.puts.to_string());
        put("msgGetTotalYesterdayMorning", yesterday.gets.to_string());
        put("msgGetTotalTodayMorning", today.gets.to_string());
        put("msgGetTotalTodayNow", live.transferred.to_string());
        put(
            "putMessageEntireTimeMax",
            (stats.put_entire_time_max_us.load(Ordering::Relaxed) / 1000).to_string(),
        );
        put("putMessageTimesTotal", live.puts.to_string());
        put(
            "putMessageFailedTimes",
            stats.put_failed_times.load(Ordering::Relaxed).to_string(),
        );
        put(
            "putMessageSizeTotal",
            stats.put_size_total.load(Ordering::Relaxed).to_string(),
        );
        let tps = |f: fn(&Counters) -> u64| self.runtime.tps_windows(live, f);
        put("putTps", tps(|c| c.puts));
        put("getFoundTps", tps(|c| c.found));
        put("getMissTps", tps(|c| c.miss));
        put("getTotalTps", tps(|c| c.found + c.miss));
        put("getTransferedTps", tps(|c| c.transferred));
        // RocketMQ 5's spelling (its clusterList reads this one).
        put("getTransferredTps", tps(|c| c.transferred));
        put("putLatency99", "0.00".into());
        put("putLatency999", "0.00".into());
    }

    /// The send, pull and query lanes' queues (RocketMQ's thread pool queues).
    fn queue_info(&self, put: &mut impl FnMut(&str, String)) {
        let Some(lanes) = self.runtime.lanes.get() else {
            return;
        };
        for (name, lane) in [
            ("send", &lanes.send),
            ("pull", &lanes.pull),
            ("query", &lanes.query),
        ] {
            put(
                &format!("{name}ThreadPoolQueueSize"),
                lane.queued().to_string(),
            );
            put(
                &format!("{name}ThreadPoolQueueCapacity"),
                lane.queue_capacity().to_string(),
            );
            put(
                &format!("{name}ThreadPoolQueueHeadWaitTimeMills"),
                "0".into(),
            );
        }
    }

    fn store_info(&self, put: &mut impl FnMut(&str, String)) {
        let store = &self.store;
        let usage = store.disk_usage().unwrap_or(0.0);
        put(
            "pageCacheLockTimeMills",
            store.page_cache_lock_time_ms().to_string(),
        );
        put("remainTransientStoreBufferNumbs", "0".into());
        put("remainHowManyDataToCommit", "0".into());
        put(
            "remainHowManyDataToFlush",
            human_bytes(store.commit_log_unflushed_bytes() as f64),
        );
        put(
            "dispatchBehindBytes",
            store.dispatch_behind_bytes().to_string(),
        );
        put(
            "earliestMessageTimeStamp",
            store
                .earliest_message_time_overall()
                .unwrap_or(0)
                .to_string(),
        );
        put("commitLogDirCapacity", rustix_capacity(store.root_dir()));
        put("commitLogDiskRatio", format!("{usage:.4}"));
        put("consumeQueueDiskRatio", format!("{usage:.4}"));
    }

    /// VIEW_BROKER_STATS_DATA: minute/hour/day windows of one counter.
    pub(crate) fn stats_data(&self, request: &RemotingCommand) -> ProcessResult {
        let h: ViewBrokerStatsDataRequestHeader = header(request)?;
        if !BrokerStats::is_known_name(&h.stats_name) {
            return Err(ProcessorError::system(format!(
                "unknown statsName {}",
                h.stats_name
            )));
        }
        let data = self
            .traffic
            .data(&h.stats_name, &h.stats_key)
            .ok_or_else(|| {
                ProcessorError::system(format!(
                    "The stats <{}> <{}> not exist",
                    h.stats_name, h.stats_key
                ))
            })?;
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&data)),
        ))
    }
}

fn rustix_capacity(path: &std::path::Path) -> String {
    match rustix::fs::statvfs(path) {
        Ok(s) => format!(
            "Total : {}, Free : {}.",
            human_bytes((s.f_blocks * s.f_frsize) as f64),
            human_bytes((s.f_bavail * s.f_frsize) as f64)
        ),
        Err(_) => "Total : 0 B, Free : 0 B.".into(),
    }
}

impl StatsAdminProcessor {
    pub(crate) fn consumer_connections(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetConsumerConnectionListRequestHeader = header(request)?;
        let connection = self
            .consumers
            .connection(&h.consumer_group)
            .ok_or_else(|| {
                ProcessorError::new(
                    ResponseCode::CONSUMER_NOT_ONLINE,
                    format!("the consumer group[{}] not online", h.consumer_group),
                )
            })?;
        Ok(Some(
            request
                .success_to()
                .with_body(fastjson::encode(&connection)),
        ))
    }

    pub(crate) fn producer_connections(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetProducerConnectionListRequestHeader = header(request)?;
        let connection_set = self
            .producers
            .connections(&h.producer_group)
            .ok_or_else(|| {
                ProcessorError::system(format!(
                    "the producer group[{}] not exist",
                    h.producer_group
                ))
            })?;
        Ok(Some(request.success_to().with_body(fastjson::encode(
            &ProducerConnection { connection_set },
        ))))
    }

    /// GET_ALL_PRODUCER_INFO: every producer connection by group.
    pub(crate) fn all_producers(&self, request: &RemotingCommand) -> ProcessResult {
        let table = self.producers.producer_table();
        Ok(Some(
            request.success_to().with_body(fastjson::encode(&table)),
        ))
    }
}

#[cfg(test)]
mod tests;
