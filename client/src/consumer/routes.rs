//! The consumer's topic routes: cached from the name servers for every subscribed topic, and
//! where each queue's broker name is reached: the master for offsets, the broker a pull
//! response suggested (or a slave once the master left) for pulls.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::TopicRouteData;

use crate::error::ClientError;
use crate::instance::ClientInstance;

/// brokerId of a master.
pub(crate) const MASTER_ID: i64 = 0;

pub(crate) struct ConsumerRoutes {
    instance: Arc<ClientInstance>,
    timeout: Duration,
    by_topic: RwLock<HashMap<String, TopicRouteData>>,
}

impl ConsumerRoutes {
    pub fn new(instance: Arc<ClientInstance>, timeout: Duration) -> Self {
        Self {
            instance,
            timeout,
            by_topic: RwLock::new(HashMap::new()),
        }
    }

    /// Reads the route of `topic` from the name servers and caches it.
    pub async fn fetch(&self, topic: &str) -> Result<TopicRouteData, ClientError> {
        let route = self
            .instance
            .topic_route(topic, self.timeout)
            .await?
            .ok_or_else(|| ClientError::TopicNotExist(topic.to_owned()))?;
        self.by_topic
            .write()
            .insert(topic.to_owned(), route.clone());
        Ok(route)
    }

    /// Re-reads the routes of `topics`; a topic whose lookup fails keeps its cached route.
    pub async fn refresh(&self, topics: Vec<String>) {
        for topic in topics {
            let _ = self.fetch(&topic).await;
        }
    }

    /// The master of a broker name, else any of its brokers (where offsets go).
    pub fn broker_addr(&self, broker_name: &str) -> Option<String> {
        let routes = self.by_topic.read();
        routes
            .values()
            .flat_map(|r| r.broker_datas.iter())
            .find(|b| b.broker_name == broker_name)
            .and_then(|b| {
                b.master_addr()
                    .map(str::to_owned)
                    .or_else(|| b.broker_addrs.0.values().next().cloned())
            })
    }

    /// Where a queue is pulled from (Java's `findBrokerAddressInSubscribe`): the broker id
    /// the last response suggested, else the master, else any broker of the name (a slave
    /// once the master left the route). Returns the address and whether it is the master.
    pub fn pull_addr(&self, broker_name: &str, suggested: i64) -> Option<(String, bool)> {
        let routes = self.by_topic.read();
        let brokers = routes
            .values()
            .flat_map(|r| r.broker_datas.iter())
            .find(|b| b.broker_name == broker_name)?;
        let addrs = &brokers.broker_addrs.0;
        [suggested, MASTER_ID]
            .iter()
            .find_map(|id| addrs.get(id).map(|a| (a.clone(), *id == MASTER_ID)))
            .or_else(|| {
                addrs
                    .iter()
                    .next()
                    .map(|(id, a)| (a.clone(), *id == MASTER_ID))
            })
    }

    /// Every broker of every cached route (where heartbeats and unregistration go).
    pub fn all_broker_addrs(&self) -> BTreeSet<String> {
        self.by_topic
            .read()
            .values()
            .flat_map(|r| r.broker_datas.iter())
            .flat_map(|b| b.broker_addrs.0.values().cloned())
            .collect()
    }
}
