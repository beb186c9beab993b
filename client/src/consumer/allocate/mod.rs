//! Queue allocation strategies (RocketMQ's `AllocateMessageQueueStrategy`): every member of
//! a group computes the same split from the same sorted queue and client-id lists, and each
//! strategy splits exactly as its RocketMQ class does, so Rust and Java members of one group
//! agree on who owns which queue.
//!
//! | strategy | RocketMQ class | where |
//! | --- | --- | --- |
//! | [`AllocateStrategy::Averagely`] | `AllocateMessageQueueAveragely` | `averagely` |
//! | [`AllocateStrategy::AveragelyByCircle`] | `AllocateMessageQueueAveragelyByCircle` | `averagely` |
//! | [`AllocateStrategy::ConsistentHash`] | `AllocateMessageQueueConsistentHash` | `consistent_hash` |
//! | [`AllocateStrategy::ByConfig`] | `AllocateMessageQueueByConfig` | here |
//! | [`AllocateStrategy::ByMachineRoom`] | `AllocateMessageQueueByMachineRoom` | `machine_room` |
//! | [`AllocateStrategy::MachineRoomNearby`] | `AllocateMachineRoomNearby` | `machine_room` |

mod averagely;
mod consistent_hash;
mod machine_room;

use std::collections::BTreeSet;
use std::sync::Arc;

use stellmq_remoting::protocol::body::MessageQueue;
use thiserror::Error;

pub use consistent_hash::DEFAULT_VIRTUAL_NODES;
pub use machine_room::MachineRoomResolver;

/// How queues are divided among the members of a group.
#[derive(Debug, Clone, Default)]
pub enum AllocateStrategy {
    /// Contiguous blocks, the first members one queue more when it does not divide evenly.
    #[default]
    Averagely,
    /// Round robin: member `i` takes queues `i`, `i + n`, `i + 2n`, ...
    AveragelyByCircle,
    /// Each member on a hash ring with `virtual_nodes` points (RocketMQ's default is
    /// [`DEFAULT_VIRTUAL_NODES`]; see [`AllocateStrategy::consistent_hash`]); a queue goes to
    /// the first point at or after its hash (RocketMQ's MD5 of `MessageQueue.toString()`).
    /// A member joining or leaving moves only the queues next to its points.
    ConsistentHash { virtual_nodes: usize },
    /// Exactly these queues (of the topic being rebalanced), whatever the other members take:
    /// a queue listed for two members is consumed twice, one listed for none not at all.
    /// Topics are the application's names (the consumer's namespace is added).
    ByConfig(Vec<MessageQueue>),
    /// Only queues of brokers named `room@brokerName` whose `room` is one of these,
    /// split like [`AllocateStrategy::Averagely`] but with the remainder dealt from the end
    /// (RocketMQ's `consumeridcs`).
    ByMachineRoom { consumer_rooms: BTreeSet<String> },
    /// Queues go to the members in their broker's machine room, split by `inner`; the queues
    /// of a room without members are split by `inner` among all members.
    MachineRoomNearby {
        inner: Box<AllocateStrategy>,
        resolver: Arc<dyn MachineRoomResolver>,
    },
}

/// A strategy that cannot split the queues it was given.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum AllocateError {
    #[error("the machine room resolver knows no room for the broker of {0:?}")]
    NoBrokerRoom(MessageQueue),
    #[error("the machine room resolver knows no room for consumer {0}")]
    NoConsumerRoom(String),
}

impl AllocateStrategy {
    /// [`AllocateStrategy::ConsistentHash`] with RocketMQ's default of 10 virtual nodes.
    pub fn consistent_hash() -> Self {
        AllocateStrategy::ConsistentHash {
            virtual_nodes: DEFAULT_VIRTUAL_NODES,
        }
    }

    /// [`AllocateStrategy::MachineRoomNearby`] over `inner`.
    pub fn machine_room_nearby(
        inner: AllocateStrategy,
        resolver: impl MachineRoomResolver + 'static,
    ) -> Self {
        AllocateStrategy::MachineRoomNearby {
            inner: Box::new(inner),
            resolver: Arc::new(resolver),
        }
    }

    /// RocketMQ's name of the strategy (`AVG`, `CONSISTENT_HASH`, `MACHINE_ROOM_NEARBY-AVG`,
    /// ...), as consumers report it.
    pub fn name(&self) -> String {
        match self {
            AllocateStrategy::Averagely => "AVG".into(),
            AllocateStrategy::AveragelyByCircle => "AVG_BY_CIRCLE".into(),
            AllocateStrategy::ConsistentHash { .. } => "CONSISTENT_HASH".into(),
            AllocateStrategy::ByConfig(_) => "CONFIG".into(),
            AllocateStrategy::ByMachineRoom { .. } => "MACHINE_ROOM".into(),
            AllocateStrategy::MachineRoomNearby { inner, .. } => {
                format!("MACHINE_ROOM_NEARBY-{}", inner.name())
            }
        }
    }

    /// The queues member `me` gets; `queues` and `members` must be sorted (as every member
    /// sorts them). A member not in `members` gets nothing, except with
    /// [`AllocateStrategy::ByConfig`].
    pub fn allocate(
        &self,
        me: &str,
        queues: &[MessageQueue],
        members: &[String],
    ) -> Result<Vec<MessageQueue>, AllocateError> {
        if let AllocateStrategy::ByConfig(mine) = self {
            return Ok(queues
                .iter()
                .filter(|q| mine.contains(q))
                .cloned()
                .collect());
        }
        let Some(index) = members.iter().position(|m| m == me) else {
            return Ok(Vec::new());
        };
        Ok(match self {
            AllocateStrategy::Averagely => averagely::blocks(index, queues, members.len()),
            AllocateStrategy::AveragelyByCircle => averagely::circle(index, queues, members.len()),
            AllocateStrategy::ConsistentHash { virtual_nodes } => {
                consistent_hash::allocate(me, queues, members, *virtual_nodes)
            }
            AllocateStrategy::ByMachineRoom { consumer_rooms } => {
                machine_room::by_room(index, queues, members.len(), consumer_rooms)
            }
            AllocateStrategy::MachineRoomNearby { inner, resolver } => {
                return machine_room::nearby(inner, resolver.as_ref(), me, queues, members)
            }
            AllocateStrategy::ByConfig(_) => Vec::new(),
        })
    }

    /// The strategy with the topics of [`AllocateStrategy::ByConfig`] queues in `namespace`.
    pub(crate) fn in_namespace(self, namespace: Option<&str>) -> Self {
        match self {
            AllocateStrategy::ByConfig(queues) => AllocateStrategy::ByConfig(
                queues
                    .into_iter()
                    .map(|q| MessageQueue {
                        topic: crate::namespace::wrap(namespace, &q.topic),
                        ..q
                    })
                    .collect(),
            ),
            AllocateStrategy::MachineRoomNearby { inner, resolver } => {
                AllocateStrategy::MachineRoomNearby {
                    inner: Box::new(inner.in_namespace(namespace)),
                    resolver,
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn queues(topic: &str, broker: &str, n: i32) -> Vec<MessageQueue> {
        (0..n)
            .map(|i| MessageQueue {
                broker_name: broker.into(),
                queue_id: i,
                topic: topic.into(),
            })
            .collect()
    }

    pub fn members(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Queue ids each member gets, in member order.
    pub fn split(
        strategy: &AllocateStrategy,
        queues: &[MessageQueue],
        members: &[String],
    ) -> Vec<Vec<i32>> {
        members
            .iter()
            .map(|me| {
                strategy
                    .allocate(me, queues, members)
                    .expect("allocates")
                    .iter()
                    .map(|q| q.queue_id)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn every_queue_goes_to_exactly_one_member() {
        for strategy in [
            AllocateStrategy::Averagely,
            AllocateStrategy::AveragelyByCircle,
            AllocateStrategy::consistent_hash(),
            AllocateStrategy::ConsistentHash { virtual_nodes: 1 },
        ] {
            for n in 1..12 {
                for m in 1..5 {
                    let ids: Vec<String> = (0..m).map(|i| format!("c{i}")).collect();
                    let mut all: Vec<i32> = split(&strategy, &queues("T", "b", n), &ids)
                        .into_iter()
                        .flatten()
                        .collect();
                    all.sort();
                    assert_eq!(all, (0..n).collect::<Vec<_>>(), "{strategy:?} n={n} m={m}");
                }
            }
        }
    }

    #[test]
    fn a_stranger_gets_nothing() {
        let ids = members(&["a", "b"]);
        for strategy in [
            AllocateStrategy::Averagely,
            AllocateStrategy::AveragelyByCircle,
            AllocateStrategy::consistent_hash(),
            AllocateStrategy::ByMachineRoom {
                consumer_rooms: BTreeSet::from(["r".to_owned()]),
            },
        ] {
            let got = strategy.allocate("zz", &queues("T", "r@b", 8), &ids);
            assert_eq!(got, Ok(Vec::new()), "{strategy:?}");
        }
    }

    #[test]
    fn by_config_takes_the_configured_queues_of_the_topic() {
        // RocketMQ's AllocateMessageQueueByConfigTest: every member gets the whole list.
        let all = queues("topic", "brokerName", 4);
        let strategy = AllocateStrategy::ByConfig(all.clone());
        let ids = members(&["CID_PREFIX0", "CID_PREFIX1"]);
        assert_eq!(
            split(&strategy, &all, &ids),
            [vec![0, 1, 2, 3], vec![0, 1, 2, 3]]
        );
        let some = AllocateStrategy::ByConfig(vec![all[1].clone(), all[3].clone()]);
        assert_eq!(
            some.allocate("not-a-member", &all, &ids),
            Ok(vec![all[1].clone(), all[3].clone()])
        );
        let other_topic = queues("Other", "brokerName", 4);
        assert_eq!(some.allocate("CID_PREFIX0", &other_topic, &ids), Ok(vec![]));
    }

    #[test]
    fn by_config_queues_move_into_the_namespace() {
        let strategy =
            AllocateStrategy::ByConfig(queues("Orders", "b", 1)).in_namespace(Some("ns"));
        let AllocateStrategy::ByConfig(q) = strategy else {
            panic!("still by config");
        };
        assert_eq!(q[0].topic, "ns%Orders");
    }

    #[test]
    fn names_are_rocketmqs() {
        assert_eq!(AllocateStrategy::Averagely.name(), "AVG");
        assert_eq!(AllocateStrategy::AveragelyByCircle.name(), "AVG_BY_CIRCLE");
        assert_eq!(
            AllocateStrategy::consistent_hash().name(),
            "CONSISTENT_HASH"
        );
        assert_eq!(AllocateStrategy::ByConfig(vec![]).name(), "CONFIG");
        let nearby = AllocateStrategy::machine_room_nearby(
            AllocateStrategy::Averagely,
            machine_room::tests::DashRooms,
        );
        assert_eq!(nearby.name(), "MACHINE_ROOM_NEARBY-AVG");
    }
}
