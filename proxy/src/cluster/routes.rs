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

/// A route cached after it was found stale is kept at least this long: a broker that fails
/// every request must not turn each one into a name server query.
const MIN_REFETCH_INTERVAL: Duration = Duration::from_millis(250);

/// How long a route is trusted that names no master for some broker of the topic (a fail-over
/// under way: the new master registers within seconds).
const INCOMPLETE_ROUTE_TTL: Duration = Duration::from_secs(1);

/// Entries until they expire, by key.
pub(crate) struct TtlCache<V> {
    ttl: Duration,
    /// Value, when it was stored, when it expires.
    entries: Mutex<HashMap<String, (V, Instant, Instant)>>,
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
        let (value, _, expires) = entries.get(key)?;
        (Instant::now() < *expires).then(|| value.clone())
    }

    /// Stores `value` for the cache's time to live.
    pub fn put(&self, key: &str, value: V) {
        self.put_for(key, value, self.ttl);
    }

    /// Stores `value` for `ttl` (at most the cache's time to live).
    pub fn put_for(&self, key: &str, value: V, ttl: Duration) {
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_CACHED && !entries.contains_key(key) {
            entries.clear();
        }
        let now = Instant::now();
        entries.insert(key.to_owned(), (value, now, now + ttl.min(self.ttl)));
    }

    /// Drops `key`'s entry unless it was stored less than [`MIN_REFETCH_INTERVAL`] ago.
    pub fn forget(&self, key: &str) {
        let mut entries = self.entries.lock();
        if entries
            .get(key)
            .is_some_and(|(_, stored, _)| stored.elapsed() >= MIN_REFETCH_INTERVAL)
        {
            entries.remove(key);
        }
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
                    if names_every_master(&route) {
                        self.routes.put(topic, route.clone());
                    } else {
                        self.routes
                            .put_for(topic, route.clone(), INCOMPLETE_ROUTE_TTL);
                    }
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

    /// Drops the cached route of `topic` (a request found it stale: its broker did not
    /// answer, or answered that it is not the master).
    pub fn forget_route(&self, topic: &str) {
        self.routes.forget(topic);
    }

    /// Forgets `topic`'s route when `error` says its broker is gone or no longer the master
    /// (a fail-over): the next request reads the route anew instead of trusting it for the
    /// rest of its time to live.
    /// Returns `error`.
    pub(crate) fn noting_stale_route(&self, topic: &str, error: ClusterError) -> ClusterError {
        if means_stale_route(&error) {
            self.forget_route(topic);
        }
        error
    }
}

/// Whether every broker that holds queues of the route has a master in it.
fn names_every_master(route: &TopicRouteData) -> bool {
    route.queue_datas.iter().all(|q| {
        route
            .broker_datas
            .iter()
            .any(|b| b.broker_name == q.broker_name && b.master_addr().is_some())
    })
}

/// Errors after which a cached route is not to be trusted: the broker did not answer, said
/// it is not the master (a slave refuses writes with SERVICE_NOT_AVAILABLE and POP with
/// NO_PERMISSION), or the route named no master to ask.
fn means_stale_route(error: &ClusterError) -> bool {
    use stellmq_remoting::net::RemotingError;
    match error {
        ClusterError::Remoting(RemotingError::Remote { code, .. }) => [
            ResponseCode::SERVICE_NOT_AVAILABLE,
            ResponseCode::NO_PERMISSION,
            ResponseCode::SYSTEM_ERROR,
        ]
        .iter()
        .any(|c| c.as_i32() == *code),
        ClusterError::Remoting(_)
        | ClusterError::NoWritableQueue(_)
        | ClusterError::NoReadableQueue(_)
        | ClusterError::UnknownBroker(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stellmq_remoting::protocol::body::fastjson::IntKeyMap;
    use stellmq_remoting::protocol::body::{BrokerData, QueueData};

    #[test]
    fn a_route_found_stale_is_read_again_but_not_more_than_every_quarter_second() {
        let cache = TtlCache::new(Duration::from_secs(20));
        cache.put("t", 1);
        cache.forget("t");
        assert_eq!(cache.get("t"), Some(1), "just stored: kept");
        std::thread::sleep(MIN_REFETCH_INTERVAL);
        cache.forget("t");
        assert_eq!(cache.get("t"), None);
    }

    #[test]
    fn an_entry_lives_no_longer_than_asked_nor_than_the_cache_allows() {
        let cache = TtlCache::new(Duration::from_millis(50));
        cache.put_for("short", 1, Duration::from_millis(10));
        cache.put_for("long", 2, Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(cache.get("short"), None);
        assert_eq!(cache.get("long"), Some(2));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(cache.get("long"), None);
    }

    #[test]
    fn a_route_of_a_broker_set_without_a_master_is_incomplete() {
        let mut route = TopicRouteData {
            queue_datas: vec![QueueData {
                broker_name: "b".into(),
                read_queue_nums: 4,
                write_queue_nums: 4,
                perm: 6,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "c".into(),
                broker_name: "b".into(),
                broker_addrs: IntKeyMap([(1, "slave:1".to_owned())].into()),
                enable_acting_master: None,
            }],
            ..Default::default()
        };
        assert!(!names_every_master(&route));
        route.broker_datas[0]
            .broker_addrs
            .0
            .insert(0, "master:1".to_owned());
        assert!(names_every_master(&route));
    }

    #[test]
    fn refusals_of_a_slave_and_silence_mean_a_stale_route() {
        use stellmq_remoting::net::RemotingError;
        let remote = |code: ResponseCode| {
            ClusterError::Remoting(RemotingError::Remote {
                addr: "a".into(),
                code: code.as_i32(),
                remark: String::new(),
            })
        };
        assert!(means_stale_route(&remote(
            ResponseCode::SERVICE_NOT_AVAILABLE
        )));
        assert!(means_stale_route(&ClusterError::NoWritableQueue(
            "t".into()
        )));
        assert!(!means_stale_route(&remote(ResponseCode::MESSAGE_ILLEGAL)));
        assert!(!means_stale_route(&ClusterError::TopicNotFound("t".into())));
    }
}
