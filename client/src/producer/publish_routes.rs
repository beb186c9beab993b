//! The producer's publish routes: each topic's writable queues and broker masters, cached
//! from the name servers and refreshed in the background. A topic without a route borrows
//! TBW102's so the broker can auto-create it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use crate::error::ClientError;
use crate::instance::ClientInstance;
use crate::route::PublishInfo;

/// The topic whose route a topic without one borrows (RocketMQ's auto-create template).
const AUTO_CREATE_TOPIC: &str = "TBW102";

pub(super) struct PublishRoutes {
    instance: Arc<ClientInstance>,
    /// How long a name server is given (`sendMsgTimeout`).
    timeout: Duration,
    /// Queues per broker of a route borrowed from TBW102.
    default_topic_queue_nums: i32,
    /// Shared, not cloned, with each send (a clone per send was a twentieth of a send's cost).
    routes: RwLock<HashMap<String, Arc<PublishInfo>>>,
}

impl PublishRoutes {
    pub fn new(
        instance: Arc<ClientInstance>,
        timeout: Duration,
        default_topic_queue_nums: i32,
    ) -> Self {
        Self {
            instance,
            timeout,
            default_topic_queue_nums,
            routes: RwLock::new(HashMap::new()),
        }
    }

    /// The topic's publish queues, from cache or the name servers.
    pub async fn get(&self, topic: &str) -> Result<Arc<PublishInfo>, ClientError> {
        if let Some(info) = self
            .routes
            .read()
            .get(topic)
            .filter(|i| !i.queues.is_empty())
        {
            return Ok(info.clone());
        }
        // Boxed: a name server request is a large future, carried inline by every send's.
        Box::pin(self.fetch(topic)).await
    }

    /// Reads the topic's route from the name servers (or the default topic's, to have the
    /// broker create it on the first send) and caches it.
    async fn fetch(&self, topic: &str) -> Result<Arc<PublishInfo>, ClientError> {
        let info = match self.instance.topic_route(topic, self.timeout).await? {
            Some(route) => PublishInfo::from_route(topic, &route, None),
            None => match self
                .instance
                .topic_route(AUTO_CREATE_TOPIC, self.timeout)
                .await?
            {
                Some(route) => {
                    PublishInfo::from_route(topic, &route, Some(self.default_topic_queue_nums))
                }
                None => return Err(ClientError::TopicNotExist(topic.to_owned())),
            },
        };
        if info.queues.is_empty() {
            return Err(ClientError::TopicNotExist(topic.to_owned()));
        }
        let info = Arc::new(info);
        self.routes.write().insert(topic.to_owned(), info.clone());
        Ok(info)
    }

    /// Drops the cached route of `topic` (a broker of it failed), so the next send reads it anew.
    pub fn forget(&self, topic: &str) {
        self.routes.write().remove(topic);
    }

    /// The master address of a broker name from the cached routes.
    pub fn master_addr(&self, broker_name: &str) -> Option<String> {
        self.routes
            .read()
            .values()
            .find_map(|info| info.masters.get(broker_name).cloned())
    }

    /// Every master of the cached routes (where heartbeats and unregistration go).
    pub fn masters(&self) -> BTreeSet<String> {
        self.routes
            .read()
            .values()
            .flat_map(|i| i.masters.values().cloned())
            .collect()
    }

    /// Re-reads the route of every cached topic; a failed or empty answer keeps the old one.
    pub async fn refresh(&self) {
        let topics: Vec<String> = self.routes.read().keys().cloned().collect();
        for topic in topics {
            if let Ok(Some(route)) = self.instance.topic_route(&topic, self.timeout).await {
                let info = PublishInfo::from_route(&topic, &route, None);
                if !info.queues.is_empty() {
                    self.routes.write().insert(topic, Arc::new(info));
                }
            }
        }
    }
}
