//! Topic routes from the name servers, cached for a short time (RocketMQ's proxy refreshes
//! them every 20 s), and the broker-side facts the proxy needs about a topic or a group.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::{fastjson, TopicRouteData};
use stellmq_remoting::protocol::headers::{CommandHeader, GetRouteInfoRequestHeader};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::error::ClusterError;
use super::Cluster;

/// Most topics whose routes are cached; beyond it the cache is cleared (clients asking for
/// many made-up topics must not grow it without bound).
const MAX_CACHED: usize = 10_000;

/// Entries younger than their time to live, by key.
pub(crate) struct TtlCache<V> {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V: Clone> TtlCache<V> {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn get(&self, key: &str) -> Option<V> {
        let entries = self.entries.lock();
        let (at, value) = entries.get(key)?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    pub fn put(&self, key: &str, value: V) {
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_CACHED && !entries.contains_key(key) {
            entries.clear();
        }
        entries.insert(key.to_owned(), (Instant::now(), value));
    }

    pub fn forget(&self, key: &str) {
        self.entries.lock().remove(key);
    }
}

impl Cluster {
    /// The route of `topic`: cached, else asked of each name server in turn.
    pub async fn route(&self, topic: &str) -> Result<Arc<TopicRouteData>, ClusterError> {
        if let Some(route) = self.routes.get(topic) {
            return Ok(route);
        }
        let header = GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: None,
        };
        let mut last_error = None;
        for namesrv in &self.namesrv {
            let request = RemotingCommand::request(
                RequestCode::GET_ROUTEINFO_BY_TOPIC,
                header.to_ext_fields(),
            );
            match self.remoting.invoke(namesrv, request, self.timeout).await {
                Ok(response) if response.code == ResponseCode::SUCCESS.as_i32() => {
                    let route: TopicRouteData = fastjson::decode(&response.body)
                        .map_err(|e| ClusterError::BadAnswer(format!("route of {topic}: {e}")))?;
                    if route.queue_datas.is_empty() || route.broker_datas.is_empty() {
                        return Err(ClusterError::TopicNotFound(topic.to_owned()));
                    }
                    let route = Arc::new(route);
                    self.routes.put(topic, route.clone());
                    return Ok(route);
                }
                Ok(response) if response.code == ResponseCode::TOPIC_NOT_EXIST.as_i32() => {
                    return Err(ClusterError::TopicNotFound(topic.to_owned()));
                }
                Ok(response) => {
                    last_error = Some(ClusterError::Remoting(
                        stellmq_remoting::net::RemotingError::Remote {
                            addr: namesrv.clone(),
                            code: response.code,
                            remark: response.remark_str().to_owned(),
                        },
                    ))
                }
                Err(e) => last_error = Some(e.into()),
            }
        }
        Err(last_error.unwrap_or_else(|| ClusterError::TopicNotFound(topic.to_owned())))
    }

    /// Drops the cached route of `topic` (after a send found it stale).
    pub fn forget_route(&self, topic: &str) {
        self.routes.forget(topic);
    }
}
