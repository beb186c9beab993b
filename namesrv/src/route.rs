//! The name server's route tables (protocol.md 8.1-8.4): state only, no I/O.
//!
//! One `RwLock` guards all tables: registrations (writes) come every 30 s per broker while
//! route queries (reads) come from every client, and every write touches several tables that
//! must change together. No other lock is taken while it is held.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::{
    perm, BrokerData, BrokerMemberGroup, ClusterInfo, DataVersion, IntKeyMap, QueueData,
    TopicConfigSerializeWrapper, TopicRouteData,
};

/// topicSysFlag bits.
const FLAG_UNIT: i32 = 0x1;
const FLAG_UNIT_SUB: i32 = 0x2;

/// A broker's registration as the name server needs it.
#[derive(Debug, Clone)]
pub struct Registration {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_addr: String,
    pub broker_id: i64,
    pub ha_server_addr: String,
    pub topics: TopicConfigSerializeWrapper,
    pub filter_servers: Vec<String>,
    /// The connection it arrived on; closing it removes the broker.
    pub channel_id: Option<u64>,
    /// How long the broker may stay silent.
    pub timeout: Duration,
}

/// What a registration answers a slave: its master's addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrationOutcome {
    pub master_addr: Option<String>,
    pub ha_server_addr: Option<String>,
    /// The broker (or this broker id) was not registered before.
    pub first: bool,
}

#[derive(Debug, Clone)]
struct LiveBroker {
    cluster_name: String,
    broker_name: String,
    broker_id: i64,
    last_update: Instant,
    timeout: Duration,
    data_version: DataVersion,
    channel_id: Option<u64>,
    ha_server_addr: String,
}

#[derive(Default)]
struct Tables {
    /// topic -> broker name -> queues.
    topic_queues: BTreeMap<String, BTreeMap<String, QueueData>>,
    /// broker name -> group.
    brokers: BTreeMap<String, BrokerData>,
    /// cluster -> broker names.
    clusters: BTreeMap<String, BTreeSet<String>>,
    /// broker address -> liveness.
    live: HashMap<String, LiveBroker>,
    /// broker address -> filter servers (legacy, usually empty).
    filter_servers: HashMap<String, Vec<String>>,
}

impl Tables {
    /// The address that holds `reg`'s broker id with a higher state version than `reg`
    /// carries, if another one does.
    fn newer_holder(&self, reg: &Registration) -> Option<String> {
        let holder = self
            .brokers
            .get(&reg.broker_name)?
            .broker_addrs
            .0
            .get(&reg.broker_id)
            .filter(|addr| **addr != reg.broker_addr)?;
        let held = self.live.get(holder)?.data_version.state_version;
        (held > reg.topics.data_version.state_version).then(|| holder.clone())
    }
}

/// Why a broker left the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemovalReason {
    Unregistered,
    Expired,
    ChannelClosed,
}

impl RemovalReason {
    fn event(self) -> &'static str {
        match self {
            RemovalReason::Unregistered => "BROKER_UNREGISTERED",
            RemovalReason::Expired => "BROKER_EXPIRED",
            RemovalReason::ChannelClosed => "BROKER_CHANNEL_CLOSED",
        }
    }
}

/// The route tables.
#[derive(Default)]
pub struct RouteInfoManager {
    tables: RwLock<Tables>,
}

impl RouteInfoManager {
    pub fn new() -> Self {
        Self::default()
    }

    /// REGISTER_BROKER (protocol.md 8.2).
    pub fn register(&self, reg: Registration) -> RegistrationOutcome {
        let mut t = self.tables.write();
        if let Some(holder) = t.newer_holder(&reg) {
            // RocketMQ 5: a registration for an id that another address holds with a higher
            // state version (controller mode: its master epoch) comes from a deposed master
            // that has not heard yet; it must not take the route from the real one.
            tracing::warn!(event = "STALE_REGISTRATION_IGNORED", broker = %reg.broker_name, id = reg.broker_id, addr = %reg.broker_addr, state_version = reg.topics.data_version.state_version, holder = %holder, "registration from a lower state version ignored");
            t.live.remove(&reg.broker_addr);
            return RegistrationOutcome::default();
        }
        t.clusters
            .entry(reg.cluster_name.clone())
            .or_default()
            .insert(reg.broker_name.clone());

        let group = t
            .brokers
            .entry(reg.broker_name.clone())
            .or_insert_with(|| BrokerData {
                cluster: reg.cluster_name.clone(),
                broker_name: reg.broker_name.clone(),
                broker_addrs: IntKeyMap::default(),
                enable_acting_master: None,
            });
        group.cluster = reg.cluster_name.clone();
        // The same address under another id: a slave switched to master or back.
        group
            .broker_addrs
            .0
            .retain(|id, addr| *id == reg.broker_id || *addr != reg.broker_addr);
        let previous = group
            .broker_addrs
            .0
            .insert(reg.broker_id, reg.broker_addr.clone());
        let first = previous.is_none();

        let version_changed = t
            .live
            .get(&reg.broker_addr)
            .is_none_or(|live| live.data_version != reg.topics.data_version);
        if reg.broker_id == 0 && (first || version_changed) {
            for config in reg.topics.topic_config_table.values() {
                let queue = QueueData {
                    broker_name: reg.broker_name.clone(),
                    read_queue_nums: config.read_queue_nums,
                    write_queue_nums: config.write_queue_nums,
                    perm: config.perm,
                    topic_sys_flag: config.topic_sys_flag,
                };
                let by_broker = t.topic_queues.entry(config.topic_name.clone()).or_default();
                if by_broker.get(&reg.broker_name) != Some(&queue) {
                    tracing::info!(event = "TOPIC_ROUTE_UPDATED", topic = %config.topic_name, broker = %reg.broker_name, "topic queue data updated");
                    by_broker.insert(reg.broker_name.clone(), queue);
                }
            }
        }

        let was_live = t
            .live
            .insert(
                reg.broker_addr.clone(),
                LiveBroker {
                    cluster_name: reg.cluster_name.clone(),
                    broker_name: reg.broker_name.clone(),
                    broker_id: reg.broker_id,
                    last_update: Instant::now(),
                    timeout: reg.timeout,
                    data_version: reg.topics.data_version,
                    channel_id: reg.channel_id,
                    ha_server_addr: reg.ha_server_addr.clone(),
                },
            )
            .is_some();
        if !was_live {
            tracing::info!(event = "BROKER_REGISTERED", cluster = %reg.cluster_name, broker = %reg.broker_name, id = reg.broker_id, addr = %reg.broker_addr, "broker registered");
        }
        if reg.filter_servers.is_empty() {
            t.filter_servers.remove(&reg.broker_addr);
        } else {
            t.filter_servers
                .insert(reg.broker_addr.clone(), reg.filter_servers);
        }

        let mut outcome = RegistrationOutcome {
            first,
            ..Default::default()
        };
        if reg.broker_id != 0 {
            let master = t
                .brokers
                .get(&reg.broker_name)
                .and_then(|g| g.master_addr())
                .map(str::to_owned);
            if let Some(master) = master {
                if let Some(live) = t.live.get(&master) {
                    outcome.ha_server_addr = Some(live.ha_server_addr.clone());
                    outcome.master_addr = Some(master);
                }
            }
        }
        outcome
    }

    /// UNREGISTER_BROKER.
    pub fn unregister(&self, broker_name: &str, broker_addr: &str, broker_id: i64) {
        let mut t = self.tables.write();
        let cluster = t.live.get(broker_addr).map(|l| l.cluster_name.clone());
        remove_broker(
            &mut t,
            cluster,
            broker_name,
            broker_id,
            broker_addr,
            RemovalReason::Unregistered,
        );
    }

    /// The connection `channel_id` closed: drop every broker that registered over it.
    pub fn on_channel_closed(&self, channel_id: u64) {
        let mut t = self.tables.write();
        let gone: Vec<(String, LiveBroker)> = t
            .live
            .iter()
            .filter(|(_, l)| l.channel_id == Some(channel_id))
            .map(|(a, l)| (a.clone(), l.clone()))
            .collect();
        for (addr, live) in gone {
            remove_broker(
                &mut t,
                Some(live.cluster_name),
                &live.broker_name,
                live.broker_id,
                &addr,
                RemovalReason::ChannelClosed,
            );
        }
    }

    /// Drops brokers silent for longer than their timeout; returns their addresses.
    pub fn scan_expired(&self, now: Instant) -> Vec<String> {
        let mut t = self.tables.write();
        let expired: Vec<(String, LiveBroker)> = t
            .live
            .iter()
            .filter(|(_, l)| now.saturating_duration_since(l.last_update) > l.timeout)
            .map(|(a, l)| (a.clone(), l.clone()))
            .collect();
        for (addr, live) in &expired {
            remove_broker(
                &mut t,
                Some(live.cluster_name.clone()),
                &live.broker_name,
                live.broker_id,
                addr,
                RemovalReason::Expired,
            );
        }
        expired.into_iter().map(|(a, _)| a).collect()
    }

    /// Refreshes a live broker's timestamp (BROKER_HEARTBEAT, unchanged QUERY_DATA_VERSION).
    pub fn touch(&self, broker_addr: &str) -> bool {
        match self.tables.write().live.get_mut(broker_addr) {
            Some(live) => {
                live.last_update = Instant::now();
                true
            }
            None => false,
        }
    }

    /// The data version stored for a broker, if live.
    pub fn data_version(&self, broker_addr: &str) -> Option<DataVersion> {
        self.tables
            .read()
            .live
            .get(broker_addr)
            .map(|l| l.data_version)
    }

    /// GET_ROUTEINFO_BY_TOPIC (protocol.md 8.4); `None` when there is no queue or broker data.
    pub fn topic_route(&self, topic: &str) -> Option<TopicRouteData> {
        let t = self.tables.read();
        let queues = t.topic_queues.get(topic)?;
        let queue_datas: Vec<QueueData> = queues.values().cloned().collect();
        let broker_datas: Vec<BrokerData> = queues
            .keys()
            .filter_map(|name| t.brokers.get(name).cloned())
            .collect();
        if queue_datas.is_empty() || broker_datas.is_empty() {
            return None;
        }
        let filter_server_table = broker_datas
            .iter()
            .flat_map(|b| b.broker_addrs.0.values())
            .filter_map(|addr| {
                t.filter_servers
                    .get(addr)
                    .map(|f| (addr.clone(), f.clone()))
            })
            .collect();
        Some(TopicRouteData {
            order_topic_conf: None,
            queue_datas,
            broker_datas,
            filter_server_table,
        })
    }

    /// REGISTER_TOPIC_IN_NAMESRV: adds (or replaces) the queues of `topic` on the named
    /// brokers, as RocketMQ 5's `registerTopic`. Nothing changes when a broker name is not
    /// registered; false then.
    pub fn register_topic(&self, topic: &str, queues: Vec<QueueData>) -> bool {
        let mut t = self.tables.write();
        if let Some(unknown) = queues
            .iter()
            .find(|q| !t.brokers.contains_key(&q.broker_name))
        {
            tracing::warn!(%topic, broker = %unknown.broker_name, "topic registration names an unknown broker; ignored");
            return false;
        }
        let by_broker = t.topic_queues.entry(topic.to_owned()).or_default();
        for q in queues {
            by_broker.insert(q.broker_name.clone(), q);
        }
        tracing::info!(event = "TOPIC_REGISTERED", %topic, brokers = by_broker.len(), "topic route registered");
        true
    }

    /// GET_BROKER_MEMBER_GROUP: the addresses of `broker_name` (none when unknown).
    pub fn broker_member_group(&self, cluster: &str, broker_name: &str) -> BrokerMemberGroup {
        let broker_addrs = self
            .tables
            .read()
            .brokers
            .get(broker_name)
            .map(|b| b.broker_addrs.clone())
            .unwrap_or_default();
        BrokerMemberGroup {
            cluster: cluster.to_owned(),
            broker_name: broker_name.to_owned(),
            broker_addrs,
        }
    }

    /// GET_BROKER_CLUSTER_INFO.
    pub fn cluster_info(&self) -> ClusterInfo {
        let t = self.tables.read();
        ClusterInfo {
            broker_addr_table: t.brokers.clone(),
            cluster_addr_table: t.clusters.clone(),
        }
    }

    /// Every topic with queue data.
    pub fn all_topics(&self) -> Vec<String> {
        self.tables.read().topic_queues.keys().cloned().collect()
    }

    /// Up to `max` topics with queue data, in name order, after `after` (from the first
    /// when empty); true when more follow.
    pub fn topic_page(&self, after: &str, max: usize) -> (Vec<String>, bool) {
        use std::ops::Bound;
        let t = self.tables.read();
        let start = if after.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Excluded(after.to_owned())
        };
        let mut names = t
            .topic_queues
            .range::<String, _>((start, Bound::Unbounded))
            .map(|(topic, _)| topic.clone());
        let page: Vec<String> = names.by_ref().take(max).collect();
        let more = names.next().is_some();
        (page, more)
    }

    /// Topics with queues on brokers of `cluster`.
    pub fn topics_by_cluster(&self, cluster: &str) -> Vec<String> {
        let t = self.tables.read();
        let Some(names) = t.clusters.get(cluster) else {
            return Vec::new();
        };
        t.topic_queues
            .iter()
            .filter(|(_, by_broker)| by_broker.keys().any(|b| names.contains(b)))
            .map(|(topic, _)| topic.clone())
            .collect()
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and broker names, plus one broker address.
    pub fn system_topics(&self) -> (Vec<String>, Option<String>) {
        let t = self.tables.read();
        let mut topics = Vec::new();
        let mut addr = None;
        for (cluster, names) in &t.clusters {
            topics.push(cluster.clone());
            for name in names {
                topics.push(name.clone());
                if addr.is_none() {
                    addr = t
                        .brokers
                        .get(name)
                        .and_then(|b| b.broker_addrs.0.values().next().cloned());
                }
            }
        }
        (topics, addr)
    }

    /// Topics whose queue data carry `required` sysFlag bits and none of `excluded`.
    pub fn topics_with_flags(&self, required: i32, excluded: i32) -> Vec<String> {
        self.tables
            .read()
            .topic_queues
            .iter()
            .filter(|(_, by_broker)| {
                by_broker.values().any(|q| {
                    q.topic_sys_flag & required == required && q.topic_sys_flag & excluded == 0
                })
            })
            .map(|(topic, _)| topic.clone())
            .collect()
    }

    pub fn unit_topics(&self) -> Vec<String> {
        self.topics_with_flags(FLAG_UNIT, 0)
    }

    pub fn has_unit_sub_topics(&self) -> Vec<String> {
        self.topics_with_flags(FLAG_UNIT_SUB, 0)
    }

    pub fn has_unit_sub_ununit_topics(&self) -> Vec<String> {
        self.topics_with_flags(FLAG_UNIT_SUB, FLAG_UNIT)
    }

    /// DELETE_TOPIC_IN_NAMESRV; with a cluster, only that cluster's brokers lose the topic.
    pub fn delete_topic(&self, topic: &str, cluster: Option<&str>) -> bool {
        let mut t = self.tables.write();
        let removed = match cluster {
            None => t.topic_queues.remove(topic).is_some(),
            Some(cluster) => {
                let names = t.clusters.get(cluster).cloned().unwrap_or_default();
                let Some(by_broker) = t.topic_queues.get_mut(topic) else {
                    return false;
                };
                let before = by_broker.len();
                by_broker.retain(|name, _| !names.contains(name));
                let changed = by_broker.len() != before;
                if by_broker.is_empty() {
                    t.topic_queues.remove(topic);
                }
                changed
            }
        };
        if removed {
            tracing::info!(event = "TOPIC_DELETED", %topic, cluster = cluster.unwrap_or("*"), "topic removed from routes");
        }
        removed
    }

    /// WIPE_WRITE_PERM_OF_BROKER: returns how many topics lost write permission.
    pub fn wipe_write_perm(&self, broker_name: &str) -> i32 {
        self.update_perm(broker_name, |p| p & !perm::WRITE, "BROKER_WRITE_PERM_WIPED")
    }

    /// ADD_WRITE_PERM_OF_BROKER: sets read and write permission; returns the topic count.
    pub fn add_write_perm(&self, broker_name: &str) -> i32 {
        self.update_perm(
            broker_name,
            |_| perm::READ | perm::WRITE,
            "BROKER_WRITE_PERM_ADDED",
        )
    }

    fn update_perm(&self, broker_name: &str, change: impl Fn(i32) -> i32, event: &str) -> i32 {
        let mut t = self.tables.write();
        let mut count = 0;
        for by_broker in t.topic_queues.values_mut() {
            if let Some(q) = by_broker.get_mut(broker_name) {
                q.perm = change(q.perm);
                count += 1;
            }
        }
        tracing::info!(event, broker = %broker_name, topics = count, "queue permissions changed");
        count
    }

    /// Number of live brokers (for tests and status).
    pub fn live_broker_count(&self) -> usize {
        self.tables.read().live.len()
    }
}

/// Removes one broker address; drops its group, cluster membership and queue data when it
/// was the group's last address (protocol.md 8.3).
fn remove_broker(
    t: &mut Tables,
    cluster: Option<String>,
    broker_name: &str,
    broker_id: i64,
    broker_addr: &str,
    reason: RemovalReason,
) {
    let was_live = t.live.remove(broker_addr).is_some();
    t.filter_servers.remove(broker_addr);
    let mut group_gone = false;
    if let Some(group) = t.brokers.get_mut(broker_name) {
        let before = group.broker_addrs.0.len();
        group
            .broker_addrs
            .0
            .retain(|id, addr| !(*id == broker_id && addr == broker_addr));
        let removed_addr = group.broker_addrs.0.len() != before;
        if !removed_addr && !was_live {
            return;
        }
        group_gone = group.broker_addrs.0.is_empty();
    } else if !was_live {
        return;
    }
    tracing::info!(event = reason.event(), broker = %broker_name, id = broker_id, addr = %broker_addr, "broker removed");
    if !group_gone {
        return;
    }
    t.brokers.remove(broker_name);
    let clusters: Vec<String> = match cluster {
        Some(c) => vec![c],
        None => t.clusters.keys().cloned().collect(),
    };
    for c in clusters {
        if let Some(names) = t.clusters.get_mut(&c) {
            names.remove(broker_name);
            if names.is_empty() {
                t.clusters.remove(&c);
            }
        }
    }
    t.topic_queues.retain(|_, by_broker| {
        by_broker.remove(broker_name);
        !by_broker.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_remoting::protocol::body::TopicConfig;

    fn reg(name: &str, id: i64, addr: &str, topics: &[&str], version: i64) -> Registration {
        let mut wrapper = TopicConfigSerializeWrapper {
            data_version: DataVersion {
                counter: version,
                state_version: 0,
                timestamp: 1,
            },
            ..Default::default()
        };
        for t in topics {
            wrapper
                .topic_config_table
                .insert((*t).to_owned(), TopicConfig::with_queues(*t, 4, 4, 6));
        }
        Registration {
            cluster_name: "C".into(),
            broker_name: name.into(),
            broker_addr: addr.into(),
            broker_id: id,
            ha_server_addr: format!("{addr}-ha"),
            topics: wrapper,
            filter_servers: vec![],
            channel_id: Some(id as u64 + 100),
            timeout: Duration::from_secs(120),
        }
    }

    #[test]
    fn topics_page_in_name_order_after_the_last_one_seen() {
        let m = RouteInfoManager::new();
        m.register(reg("a", 0, "m:1", &["T3", "T1", "T5", "T2", "T4"], 1));
        assert_eq!(m.topic_page("", 2), (vec!["T1".into(), "T2".into()], true));
        assert_eq!(
            m.topic_page("T2", 2),
            (vec!["T3".into(), "T4".into()], true)
        );
        assert_eq!(m.topic_page("T4", 2), (vec!["T5".into()], false));
        assert_eq!(m.topic_page("T5", 2), (vec![], false));
        assert_eq!(m.topic_page("", 10).0.len(), 5);
    }

    #[test]
    fn slave_learns_master_and_master_only_defines_queues() {
        let m = RouteInfoManager::new();
        assert!(m.register(reg("a", 0, "m:1", &["T"], 1)).first);
        let out = m.register(reg("a", 1, "s:1", &["SlaveOnly"], 1));
        assert_eq!(out.master_addr.as_deref(), Some("m:1"));
        assert_eq!(out.ha_server_addr.as_deref(), Some("m:1-ha"));
        assert!(
            m.topic_route("SlaveOnly").is_none(),
            "slaves do not define queues"
        );
        let route = m.topic_route("T").expect("route");
        assert_eq!(route.broker_datas[0].broker_addrs.0.len(), 2);
    }

    #[test]
    fn queue_data_only_rebuilt_when_version_changes() {
        let m = RouteInfoManager::new();
        m.register(reg("a", 0, "m:1", &["T"], 1));
        assert_eq!(m.wipe_write_perm("a"), 1);
        m.register(reg("a", 0, "m:1", &["T"], 1));
        assert_eq!(
            m.topic_route("T").expect("route").queue_datas[0].perm,
            4,
            "wipe survives same version"
        );
        m.register(reg("a", 0, "m:1", &["T"], 2));
        assert_eq!(m.topic_route("T").expect("route").queue_datas[0].perm, 6);
    }

    #[test]
    fn a_deposed_master_cannot_take_the_route_back() {
        let with_state = |addr: &str, id: i64, state: i64| {
            let mut r = reg("a", id, addr, &["T"], 1);
            r.topics.data_version.state_version = state;
            r
        };
        let m = RouteInfoManager::new();
        m.register(with_state("old:1", 0, 1));
        // The controller elected new:1 in epoch 2; the old master still thinks it is one.
        m.register(with_state("new:1", 0, 2));
        m.register(with_state("old:1", 0, 1));
        let route = m.topic_route("T").expect("route");
        assert_eq!(route.broker_datas[0].master_addr(), Some("new:1"));
        // Once it hears, it registers as a slave: the master stays.
        m.register(with_state("old:1", 1, 2));
        let route = m.topic_route("T").expect("route");
        assert_eq!(route.broker_datas[0].master_addr(), Some("new:1"));
        assert_eq!(
            route.broker_datas[0]
                .broker_addrs
                .0
                .get(&1)
                .map(String::as_str),
            Some("old:1")
        );
        // A later epoch does take over.
        m.register(with_state("old:1", 0, 3));
        let route = m.topic_route("T").expect("route");
        assert_eq!(route.broker_datas[0].master_addr(), Some("old:1"));
    }

    #[test]
    fn removing_last_address_drops_group_and_queues() {
        let m = RouteInfoManager::new();
        m.register(reg("a", 0, "m:1", &["T"], 1));
        m.register(reg("a", 1, "s:1", &[], 1));
        m.unregister("a", "m:1", 0);
        let route = m.topic_route("T").expect("slave still serves reads");
        assert_eq!(route.broker_datas[0].master_addr(), None);
        m.on_channel_closed(101);
        assert!(m.topic_route("T").is_none());
        assert!(m.cluster_info().cluster_addr_table.is_empty());
        assert_eq!(m.live_broker_count(), 0);
    }
}
