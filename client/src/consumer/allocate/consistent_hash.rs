//! AllocateMessageQueueConsistentHash over RocketMQ's `ConsistentHashRouter`: member `cid`
//! has the ring points `hash("cid-0")`, `hash("cid-1")`, ... (a later member taking a point
//! two share), a queue goes to the first point at or after `hash(queue)` (wrapping around),
//! and `hash` is the first four bytes of the MD5 of the UTF-8 key, big-endian.

use std::collections::BTreeMap;

use md5::{Digest as _, Md5};
use stellmq_remoting::protocol::body::MessageQueue;

/// RocketMQ's default number of ring points per member.
pub const DEFAULT_VIRTUAL_NODES: usize = 10;

pub(super) fn allocate(
    me: &str,
    queues: &[MessageQueue],
    members: &[String],
    virtual_nodes: usize,
) -> Vec<MessageQueue> {
    let ring = ring(members, virtual_nodes);
    queues
        .iter()
        .filter(|q| route(&ring, &java_to_string(q)) == Some(me))
        .cloned()
        .collect()
}

/// Ring point -> member.
fn ring(members: &[String], virtual_nodes: usize) -> BTreeMap<u32, &str> {
    let mut ring = BTreeMap::new();
    for member in members {
        for i in 0..virtual_nodes {
            ring.insert(hash(&format!("{member}-{i}")), member.as_str());
        }
    }
    ring
}

/// The member owning `key`: at the first point at or after its hash, else at the first point.
fn route<'a>(ring: &BTreeMap<u32, &'a str>, key: &str) -> Option<&'a str> {
    ring.range(hash(key)..)
        .next()
        .or_else(|| ring.iter().next())
        .map(|(_, member)| *member)
}

fn hash(key: &str) -> u32 {
    let digest: [u8; 16] = Md5::digest(key.as_bytes()).into();
    let [a, b, c, d, ..] = digest;
    u32::from_be_bytes([a, b, c, d])
}

/// Java's `MessageQueue.toString()`, the key a queue is hashed by.
fn java_to_string(q: &MessageQueue) -> String {
    format!(
        "MessageQueue [topic={}, brokerName={}, queueId={}]",
        q.topic, q.broker_name, q.queue_id
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::{members, queues, split};
    use super::super::AllocateStrategy;
    use super::*;

    // The assignments below were printed by RocketMQ's own ConsistentHashRouter and
    // MessageQueue (compiled from apache/rocketmq sources) for the same queues and members.

    #[test]
    fn hashes_like_rocketmqs_md5_router() {
        assert_eq!(hash("CID-0-0"), 1_900_518_137);
    }

    #[test]
    fn splits_as_rocketmq_with_ten_virtual_nodes() {
        let ids = members(&["CID-0", "CID-1", "CID-2"]);
        assert_eq!(
            split(
                &AllocateStrategy::consistent_hash(),
                &queues("topic_test", "brokerName", 12),
                &ids
            ),
            [vec![1, 6, 7], vec![2, 9, 10, 11], vec![0, 3, 4, 5, 8]]
        );
        let ids = members(&["192.168.0.1@1234", "192.168.0.2@1234", "192.168.0.3@1234"]);
        assert_eq!(
            split(
                &AllocateStrategy::consistent_hash(),
                &queues("TopicTest", "broker-a", 16),
                &ids
            ),
            [
                vec![6, 9, 12, 15],
                vec![2, 13, 14],
                vec![0, 1, 3, 4, 5, 7, 8, 10, 11]
            ]
        );
    }

    #[test]
    fn splits_as_rocketmq_with_three_virtual_nodes() {
        let ids = members(&["CID-0", "CID-1", "CID-2", "CID-3", "CID-4"]);
        assert_eq!(
            split(
                &AllocateStrategy::ConsistentHash { virtual_nodes: 3 },
                &queues("topic_test", "brokerName", 20),
                &ids
            ),
            [
                vec![3, 5, 8, 18, 19],
                vec![2, 12],
                vec![4, 14, 16],
                vec![0, 6, 7, 9, 10, 11, 13, 15, 17],
                vec![1]
            ]
        );
    }

    #[test]
    fn a_leaving_member_moves_only_its_own_queues() {
        let all = queues("topic_test", "brokerName", 40);
        let before = members(&["CID-0", "CID-1", "CID-2", "CID-3"]);
        let after = members(&["CID-1", "CID-2", "CID-3"]);
        let strategy = AllocateStrategy::consistent_hash();
        let was = split(&strategy, &all, &before);
        let now = split(&strategy, &all, &after);
        for (i, kept) in now.iter().enumerate() {
            for q in &was[i + 1] {
                assert!(kept.contains(q), "queue {q} moved away from {}", after[i]);
            }
        }
    }

    #[test]
    fn no_virtual_nodes_allocate_nothing() {
        let ids = members(&["a"]);
        let strategy = AllocateStrategy::ConsistentHash { virtual_nodes: 0 };
        assert_eq!(
            split(&strategy, &queues("T", "b", 4), &ids),
            [Vec::<i32>::new()]
        );
    }
}
