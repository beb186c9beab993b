//! What a scrape reads from the broker besides its counters: topic and group numbers,
//! connections, the store's size and backlog, replication lag, and the traffic counters.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use stellmq_metrics::is_system_group;
use stellmq_metrics::prometheus_client::collector::Collector;
use stellmq_metrics::prometheus_client::encoding::DescriptorEncoder;
use stellmq_metrics::prometheus_client::metrics::MetricType;
use stellmq_store::MessageStore;

use super::encode::{counters, flag, gauges, Labels};
use super::lag;
use super::traffic::{MessageType, TrafficMetrics};
use crate::clients::{ConsumerManager, ProducerManager};
use crate::group::SubscriptionGroupManager;
use crate::ha::{HaMaster, HaSlave};
use crate::offset::ConsumerOffsetManager;
use crate::settings::LiveConfig;
use crate::topic::TopicConfigManager;

/// The broker parts a scrape reads.
pub struct BrokerCollector {
    pub traffic: Arc<TrafficMetrics>,
    pub config: Arc<LiveConfig>,
    pub store: Arc<MessageStore>,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub consumers: Arc<ConsumerManager>,
    pub producers: Arc<ProducerManager>,
    pub ha_master: Option<Arc<HaMaster>>,
    pub ha_slave: Option<Arc<HaSlave>>,
}

impl std::fmt::Debug for BrokerCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BrokerCollector")
    }
}

impl Collector for BrokerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.traffic_in(&mut encoder)?;
        self.traffic_out(&mut encoder)?;
        self.tables(&mut encoder)?;
        self.connections(&mut encoder)?;
        self.storage(&mut encoder)?;
        lag::encode(self, &mut encoder)
    }
}

/// RocketMQ's `version` label: the version's name in lower case where StellMQ knows it.
fn version_label(version: i32) -> String {
    use stellmq_remoting::protocol::version::{V4_9_4, V5_0_0};
    match version {
        V4_9_4 => "v4_9_4".to_owned(),
        V5_0_0 => "v5_0_0".to_owned(),
        other => other.to_string(),
    }
}

impl BrokerCollector {
    pub(super) fn is_system_topic(&self, topic: &str) -> bool {
        self.topics.is_system_topic(topic)
    }

    fn traffic_in(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let ins = self.traffic.ins();
        let mut messages = Vec::new();
        let mut bytes = Vec::new();
        let mut sizes = Vec::new();
        for (topic, cells) in &ins {
            for t in MessageType::ALL {
                let cell = cells.cell(t);
                let n = cell.messages.load(Ordering::Relaxed);
                if n == 0 {
                    continue;
                }
                let labels: Labels = vec![
                    ("topic", topic.clone()),
                    ("message_type", t.label().to_owned()),
                    ("is_system", flag(self.is_system_topic(topic))),
                ];
                bytes.push((labels.clone(), cell.bytes.load(Ordering::Relaxed)));
                sizes.push((labels.clone(), cell.size.snapshot()));
                messages.push((labels, n));
            }
        }
        counters(
            encoder,
            "rocketmq_messages_in",
            "Total number of incoming messages",
            messages,
        )?;
        counters(
            encoder,
            "rocketmq_throughput_in",
            "Total traffic of incoming messages",
            bytes,
        )?;
        let mut metric = encoder.encode_descriptor(
            "rocketmq_message_size",
            "Incoming messages size",
            None,
            MetricType::Histogram,
        )?;
        for (labels, snapshot) in sizes {
            snapshot.encode_with(&mut metric, &labels)?;
        }
        Ok(())
    }

    fn traffic_out(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut messages = Vec::new();
        let mut bytes = Vec::new();
        for (topic, group, cell) in self.traffic.outs() {
            let system = self.is_system_topic(&topic) || is_system_group(&group);
            let labels: Labels = vec![
                ("topic", topic),
                ("consumer_group", group),
                ("is_system", flag(system)),
            ];
            bytes.push((labels.clone(), cell.bytes.load(Ordering::Relaxed)));
            messages.push((labels, cell.messages.load(Ordering::Relaxed)));
        }
        counters(
            encoder,
            "rocketmq_messages_out",
            "Total number of outgoing messages",
            messages,
        )?;
        counters(
            encoder,
            "rocketmq_throughput_out",
            "Total traffic of outgoing messages",
            bytes,
        )
    }

    fn tables(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let one = |v: usize| [(Labels::new(), v as i64)];
        gauges(
            encoder,
            "rocketmq_topic_number",
            "Active topic number",
            one(self.topics.len()),
        )?;
        gauges(
            encoder,
            "rocketmq_consumer_group_number",
            "Active subscription group number",
            one(self.groups.len()),
        )?;
        let permission = self.config.read().broker_permission;
        gauges(
            encoder,
            "rocketmq_broker_permission",
            "Broker permission",
            [(Labels::new(), i64::from(permission))],
        )
    }

    fn connections(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut producers: HashMap<(String, i32), i64> = HashMap::new();
        for (language, version) in self.producers.client_attributes() {
            *producers.entry((language, version)).or_default() += 1;
        }
        let rows = producers.into_iter().map(|((language, version), n)| {
            let labels: Labels = vec![
                ("language", language.to_ascii_lowercase()),
                ("version", version_label(version)),
                ("protocol_type", "remoting".to_owned()),
            ];
            (labels, n)
        });
        gauges(
            encoder,
            "rocketmq_producer_connections",
            "Producer connections",
            rows,
        )?;
        let mut consumers: HashMap<(String, String, i32, &'static str), i64> = HashMap::new();
        for c in self.consumers.client_attributes() {
            let key = (c.group, c.language, c.version, c.consume_mode);
            *consumers.entry(key).or_default() += 1;
        }
        let rows = consumers
            .into_iter()
            .map(|((group, language, version, mode), n)| {
                let system = is_system_group(&group);
                let labels: Labels = vec![
                    ("consumer_group", group),
                    ("language", language.to_ascii_lowercase()),
                    ("version", version_label(version)),
                    ("consume_mode", mode.to_owned()),
                    ("protocol_type", "remoting".to_owned()),
                    ("is_system", flag(system)),
                ];
                (labels, n)
            });
        gauges(
            encoder,
            "rocketmq_consumer_connections",
            "Consumer connections",
            rows,
        )
    }

    fn storage(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let labels = || -> Labels {
            vec![
                ("storage_type", "local".to_owned()),
                ("storage_medium", "disk".to_owned()),
            ]
        };
        let used = used_disk_bytes(self.store.root_dir());
        gauges(
            encoder,
            "rocketmq_storage_size",
            "Broker storage size",
            [(labels(), used)],
        )?;
        let flush = self.store.commit_log_unflushed_bytes() as i64;
        gauges(
            encoder,
            "rocketmq_storage_flush_behind_bytes",
            "Broker flush behind bytes",
            [(labels(), flush)],
        )?;
        gauges(
            encoder,
            "rocketmq_storage_dispatch_behind_bytes",
            "Broker dispatch behind bytes",
            [(labels(), self.store.dispatch_behind_bytes())],
        )?;
        self.replication(encoder)
    }

    /// StellMQ's `rocketmq_ha_fall_behind_bytes`: on a master, how far each slave's
    /// acknowledged offset trails the CommitLog; on a slave, how far it trails its master.
    fn replication(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let max = self.store.commit_log_max_offset();
        let mut rows = Vec::new();
        if let Some(ha) = &self.ha_master {
            for (addr, acked) in ha.slaves() {
                let labels: Labels =
                    vec![("role", "master".to_owned()), ("peer", addr.to_string())];
                rows.push((labels, (max - acked).max(0)));
            }
        }
        if let Some(ha) = &self.ha_slave {
            let labels: Labels = vec![
                ("role", "slave".to_owned()),
                ("peer", ha.master().unwrap_or_default()),
            ];
            rows.push((labels, (ha.master_offset() - max).max(0)));
        }
        gauges(
            encoder,
            "rocketmq_ha_fall_behind_bytes",
            "Replication: bytes a slave is behind its master (StellMQ)",
            rows,
        )
    }
}

/// Bytes used on the store's file system (RocketMQ: total minus free space of the store
/// directory's disk).
fn used_disk_bytes(path: &std::path::Path) -> i64 {
    match rustix::fs::statvfs(path) {
        Ok(s) => (s.f_blocks.saturating_sub(s.f_bfree) * s.f_frsize) as i64,
        Err(_) => 0,
    }
}
