//! Connected producers and consumers, as their heartbeats describe them.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use stellmq_remoting::net::Channel;
use stellmq_remoting::protocol::body::{
    Connection, ConsumeFromWhere, ConsumeType, ConsumerConnection, MessageModel, ProducerInfo,
    ProducerTableInfo, SubscriptionData,
};
use stellmq_remoting::protocol::headers::{CommandHeader, NotifyConsumerIdsChangedRequestHeader};
use stellmq_remoting::protocol::message::now_ms;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

/// One client connection of a group.
#[derive(Clone)]
pub struct ClientChannel {
    pub channel: Channel,
    pub client_id: String,
    pub language: String,
    pub version: i32,
    pub last_update: Instant,
}

impl ClientChannel {
    pub fn connection(&self) -> Connection {
        Connection {
            client_id: self.client_id.clone(),
            client_addr: self.channel.peer().to_string(),
            language: self.language.clone(),
            version: self.version,
        }
    }
}

/// A consumer group's live members and subscriptions.
#[derive(Clone)]
pub struct ConsumerGroupInfo {
    pub channels: HashMap<u64, ClientChannel>,
    pub subscriptions: BTreeMap<String, SubscriptionData>,
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
}

impl ConsumerGroupInfo {
    fn client_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .channels
            .values()
            .map(|c| c.client_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

/// What a consumer heartbeat registers.
pub struct ConsumerRegistration {
    pub client: ClientChannel,
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    pub subscriptions: Vec<SubscriptionData>,
}

#[derive(Default)]
pub struct ConsumerManager {
    groups: RwLock<HashMap<String, ConsumerGroupInfo>>,
}

/// One consumer connection as metrics label it.
pub struct ConsumerAttributes {
    pub group: String,
    pub language: String,
    pub version: i32,
    /// RocketMQ's `consume_mode` label: `pull`, `push` or `pop`.
    pub consume_mode: &'static str,
}

impl ConsumerManager {
    /// Every consumer connection's attributes, for metrics.
    pub fn client_attributes(&self) -> Vec<ConsumerAttributes> {
        let groups = self.groups.read();
        let mut all = Vec::new();
        for (group, info) in groups.iter() {
            let consume_mode = match info.consume_type {
                ConsumeType::ConsumeActively => "pull",
                ConsumeType::ConsumePassively => "push",
                ConsumeType::ConsumePop => "pop",
            };
            all.extend(info.channels.values().map(|c| ConsumerAttributes {
                group: group.clone(),
                language: c.language.clone(),
                version: c.version,
                consume_mode,
            }));
        }
        all
    }

    /// Registers or refreshes a consumer; returns whether the group's client ids changed.
    pub fn register(&self, group: &str, reg: ConsumerRegistration) -> bool {
        let mut groups = self.groups.write();
        let info = groups
            .entry(group.to_owned())
            .or_insert_with(|| ConsumerGroupInfo {
                channels: HashMap::new(),
                subscriptions: BTreeMap::new(),
                consume_type: reg.consume_type,
                message_model: reg.message_model,
                consume_from_where: reg.consume_from_where,
            });
        let before = info.client_ids();
        info.consume_type = reg.consume_type;
        info.message_model = reg.message_model;
        info.consume_from_where = reg.consume_from_where;
        info.channels.insert(reg.client.channel.id(), reg.client);
        for sub in reg.subscriptions {
            let replace = info.subscriptions.get(&sub.topic).is_none_or(|old| {
                old.sub_version < sub.sub_version || old.sub_string != sub.sub_string
            });
            if replace {
                info.subscriptions.insert(sub.topic.clone(), sub);
            }
        }
        before != info.client_ids()
    }

    /// Removes one channel from a group; returns whether the ids changed.
    pub fn unregister(&self, group: &str, channel_id: u64) -> bool {
        let mut groups = self.groups.write();
        let Some(info) = groups.get_mut(group) else {
            return false;
        };
        let before = info.client_ids();
        info.channels.remove(&channel_id);
        let changed = before != info.client_ids();
        if info.channels.is_empty() {
            groups.remove(group);
        }
        changed
    }

    /// Drops a closed channel from every group; returns the groups whose ids changed.
    pub fn on_channel_closed(&self, channel_id: u64) -> Vec<String> {
        let groups: Vec<String> = self
            .groups
            .read()
            .iter()
            .filter(|(_, info)| info.channels.contains_key(&channel_id))
            .map(|(g, _)| g.clone())
            .collect();
        groups
            .into_iter()
            .filter(|g| self.unregister(g, channel_id))
            .collect()
    }

    /// Drops clients silent longer than `timeout`; returns the groups whose ids changed.
    pub fn scan_expired(&self, timeout: Duration) -> Vec<String> {
        let now = Instant::now();
        let expired: Vec<(String, u64, String)> = self
            .groups
            .read()
            .iter()
            .flat_map(|(g, info)| {
                info.channels
                    .values()
                    .filter(|c| now.duration_since(c.last_update) > timeout)
                    .map(|c| (g.clone(), c.channel.id(), c.client_id.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut changed = Vec::new();
        for (group, channel_id, client_id) in expired {
            tracing::warn!(event = "CLIENT_EXPIRED", %group, client = %client_id, "consumer silent too long, removed");
            if self.unregister(&group, channel_id) {
                changed.push(group);
            }
        }
        changed
    }

    pub fn group(&self, group: &str) -> Option<ConsumerGroupInfo> {
        self.groups.read().get(group).cloned()
    }

    pub fn subscription(&self, group: &str, topic: &str) -> Option<SubscriptionData> {
        self.groups
            .read()
            .get(group)
            .and_then(|i| i.subscriptions.get(topic).cloned())
    }

    pub fn client_ids(&self, group: &str) -> Vec<String> {
        self.groups
            .read()
            .get(group)
            .map(ConsumerGroupInfo::client_ids)
            .unwrap_or_default()
    }

    pub fn channels(&self, group: &str) -> Vec<ClientChannel> {
        self.groups
            .read()
            .get(group)
            .map(|i| i.channels.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Groups with an online subscription to `topic`.
    pub fn groups_subscribing(&self, topic: &str) -> Vec<String> {
        self.groups
            .read()
            .iter()
            .filter(|(_, i)| i.subscriptions.contains_key(topic))
            .map(|(g, _)| g.clone())
            .collect()
    }

    pub fn connection(&self, group: &str) -> Option<ConsumerConnection> {
        let info = self.group(group)?;
        Some(ConsumerConnection {
            connection_set: info
                .channels
                .values()
                .map(ClientChannel::connection)
                .collect(),
            subscription_table: info.subscriptions.clone(),
            consume_type: info.consume_type,
            message_model: info.message_model,
            consume_from_where: info.consume_from_where,
        })
    }

    /// Tells every member of `group` to rebalance (oneway NOTIFY_CONSUMER_IDS_CHANGED).
    pub fn notify_ids_changed(&self, group: &str) {
        let header = NotifyConsumerIdsChangedRequestHeader {
            consumer_group: group.to_owned(),
        };
        for client in self.channels(group) {
            let mut request = RemotingCommand::request(
                RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
                header.to_ext_fields(),
            );
            request.mark_oneway();
            if !client.channel.try_send(request) {
                tracing::debug!(%group, client = %client.client_id, "could not notify consumer of id change");
            }
        }
        tracing::info!(event = "CONSUMER_IDS_CHANGED", %group, members = self.client_ids(group).len(), "consumer group membership changed");
    }
}

/// Producer groups and their channels (for connection lists and transaction checks).
#[derive(Default)]
pub struct ProducerManager {
    groups: RwLock<HashMap<String, HashMap<u64, ClientChannel>>>,
    next: std::sync::atomic::AtomicUsize,
}

impl ProducerManager {
    pub fn register(&self, group: &str, client: ClientChannel) {
        self.groups
            .write()
            .entry(group.to_owned())
            .or_default()
            .insert(client.channel.id(), client);
    }

    pub fn unregister(&self, group: &str, channel_id: u64) {
        let mut groups = self.groups.write();
        if let Some(channels) = groups.get_mut(group) {
            channels.remove(&channel_id);
            if channels.is_empty() {
                groups.remove(group);
            }
        }
    }

    pub fn on_channel_closed(&self, channel_id: u64) {
        let mut groups = self.groups.write();
        for channels in groups.values_mut() {
            channels.remove(&channel_id);
        }
        groups.retain(|_, c| !c.is_empty());
    }

    pub fn scan_expired(&self, timeout: Duration) {
        let now = Instant::now();
        let mut groups = self.groups.write();
        for channels in groups.values_mut() {
            channels.retain(|_, c| now.duration_since(c.last_update) <= timeout);
        }
        groups.retain(|_, c| !c.is_empty());
    }

    /// The connection of the producer client `client_id` (for pushing replies).
    pub fn channel_of_client(&self, client_id: &str) -> Option<Channel> {
        self.groups
            .read()
            .values()
            .flat_map(|channels| channels.values())
            .find(|c| c.client_id == client_id && !c.channel.is_closed())
            .map(|c| c.channel.clone())
    }

    /// A live channel of the group, a different one on each call when it has several (for
    /// transaction checks).
    pub fn any_channel(&self, group: &str) -> Option<ClientChannel> {
        let groups = self.groups.read();
        let channels = groups.get(group)?;
        let n = channels.len();
        if n == 0 {
            return None;
        }
        let pick = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % n;
        channels.values().nth(pick).cloned()
    }

    /// Every producer connection by group (GET_ALL_PRODUCER_INFO).
    pub fn producer_table(&self) -> ProducerTableInfo {
        let now = now_ms();
        let data = self
            .groups
            .read()
            .iter()
            .map(|(group, channels)| {
                let mut infos: Vec<ProducerInfo> = channels
                    .values()
                    .map(|c| ProducerInfo {
                        client_id: c.client_id.clone(),
                        remote_ip: c.channel.peer().to_string(),
                        language: c.language.clone(),
                        version: c.version,
                        last_update_timestamp: now - c.last_update.elapsed().as_millis() as i64,
                    })
                    .collect();
                infos.sort_by(|a, b| a.client_id.cmp(&b.client_id));
                (group.clone(), infos)
            })
            .collect();
        ProducerTableInfo { data }
    }

    /// (language, version) of every producer connection, for metrics.
    pub fn client_attributes(&self) -> Vec<(String, i32)> {
        self.groups
            .read()
            .values()
            .flat_map(|channels| channels.values())
            .map(|c| (c.language.clone(), c.version))
            .collect()
    }

    pub fn connections(&self, group: &str) -> Option<Vec<Connection>> {
        self.groups
            .read()
            .get(group)
            .map(|c| c.values().map(ClientChannel::connection).collect())
    }
}
