//! Topic routes from the name servers, turned into the queues producers write to.

use std::collections::HashMap;

use stellmq_remoting::protocol::body::{perm, BrokerData, MessageQueue, TopicRouteData};

/// The writable queues of a topic and the master of each broker name.
#[derive(Debug, Clone, Default)]
pub struct PublishInfo {
    pub queues: Vec<MessageQueue>,
    pub masters: HashMap<String, String>,
}

impl PublishInfo {
    /// Publish queues = writable queue data whose broker has a master (protocol.md 3.1); with
    /// `clamp`, at most that many queues per broker (routes borrowed from TBW102).
    pub fn from_route(topic: &str, route: &TopicRouteData, clamp: Option<i32>) -> Self {
        let masters: HashMap<String, String> = route
            .broker_datas
            .iter()
            .filter_map(|b| {
                b.master_addr()
                    .map(|a| (b.broker_name.clone(), a.to_owned()))
            })
            .collect();
        let mut queues = Vec::new();
        let mut datas = route.queue_datas.clone();
        datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        for qd in datas
            .iter()
            .filter(|q| perm::is_writeable(q.perm) && masters.contains_key(&q.broker_name))
        {
            let n = clamp.map_or(qd.write_queue_nums, |c| c.min(qd.write_queue_nums));
            for queue_id in 0..n {
                queues.push(MessageQueue {
                    broker_name: qd.broker_name.clone(),
                    queue_id,
                    topic: topic.to_owned(),
                });
            }
        }
        Self { queues, masters }
    }
}

/// Each broker of the route with a master: the broker, its master's address and how many
/// queues it serves the topic's readers (0 without queue data), in the route's order.
pub fn readable_masters(route: &TopicRouteData) -> impl Iterator<Item = (&BrokerData, &str, i32)> {
    route.broker_datas.iter().filter_map(|broker| {
        let addr = broker.master_addr()?;
        let queues = route
            .queue_datas
            .iter()
            .find(|q| q.broker_name == broker.broker_name)
            .map_or(0, |q| q.read_queue_nums);
        Some((broker, addr, queues))
    })
}

/// Readable queues of a topic (for consumers).
pub fn subscribe_queues(topic: &str, route: &TopicRouteData) -> Vec<MessageQueue> {
    let mut out = Vec::new();
    for qd in route
        .queue_datas
        .iter()
        .filter(|q| perm::is_readable(q.perm))
    {
        for queue_id in 0..qd.read_queue_nums {
            out.push(MessageQueue {
                broker_name: qd.broker_name.clone(),
                queue_id,
                topic: topic.to_owned(),
            });
        }
    }
    out.sort();
    out
}
