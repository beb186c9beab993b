//! Machine rooms: AllocateMessageQueueByMachineRoom (only the queues of brokers named
//! `room@brokerName` in the consumers' rooms) and AllocateMachineRoomNearby (each room's
//! queues to the members in that room, by an inner strategy).

use std::collections::{BTreeMap, BTreeSet};

use stellmq_remoting::protocol::body::MessageQueue;

use super::{AllocateError, AllocateStrategy};

/// Where brokers and consumers are deployed, for [`AllocateStrategy::MachineRoomNearby`]
/// (RocketMQ's `MachineRoomResolver`). Every member of a group must resolve alike.
pub trait MachineRoomResolver: Send + Sync + std::fmt::Debug {
    /// The machine room of the broker serving `queue`.
    fn broker_deploy_in(&self, queue: &MessageQueue) -> Option<String>;
    /// The machine room of the consumer with client id `client_id` (`ip@instanceName`).
    fn consumer_deploy_in(&self, client_id: &str) -> Option<String>;
}

/// The queues of brokers in `rooms` dealt as RocketMQ's ByMachineRoom does: member `index`
/// takes a block of `n / members`, and the remainder goes one each to the first members,
/// taken from the end.
pub(super) fn by_room(
    index: usize,
    queues: &[MessageQueue],
    members: usize,
    rooms: &BTreeSet<String>,
) -> Vec<MessageQueue> {
    let in_rooms: Vec<&MessageQueue> = queues
        .iter()
        .filter(|q| broker_room(&q.broker_name).is_some_and(|room| rooms.contains(room)))
        .collect();
    let (block, rem) = (in_rooms.len() / members, in_rooms.len() % members);
    let mut mine: Vec<MessageQueue> = in_rooms
        .iter()
        .skip(block * index)
        .take(block)
        .map(|q| (*q).clone())
        .collect();
    if rem > index {
        if let Some(q) = in_rooms.get(index + block * members) {
            mine.push((*q).clone());
        }
    }
    mine
}

/// The `room` of a broker named `room@brokerName`: Java's `split("@")` (trailing empty parts
/// dropped) must give exactly two parts.
fn broker_room(broker_name: &str) -> Option<&str> {
    let mut parts: Vec<&str> = broker_name.split('@').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    match parts.as_slice() {
        [room, _] => Some(room),
        _ => None,
    }
}

/// RocketMQ's AllocateMachineRoomNearby: the queues of `me`'s room are split by `inner`
/// among the members in that room; the queues of each room without members are split by
/// `inner` among all members.
pub(super) fn nearby(
    inner: &AllocateStrategy,
    resolver: &dyn MachineRoomResolver,
    me: &str,
    queues: &[MessageQueue],
    members: &[String],
) -> Result<Vec<MessageQueue>, AllocateError> {
    let mut queues_by_room: BTreeMap<String, Vec<MessageQueue>> = BTreeMap::new();
    for q in queues {
        let room = resolver
            .broker_deploy_in(q)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| AllocateError::NoBrokerRoom(q.clone()))?;
        queues_by_room.entry(room).or_default().push(q.clone());
    }
    let mut members_by_room: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in members {
        members_by_room
            .entry(consumer_room(resolver, m)?)
            .or_default()
            .push(m.clone());
    }
    let my_room = consumer_room(resolver, me)?;
    let mut mine = Vec::new();
    if let (Some(room_queues), Some(room_members)) = (
        queues_by_room.remove(&my_room),
        members_by_room.get(&my_room),
    ) {
        mine.extend(inner.allocate(me, &room_queues, room_members)?);
    }
    for (room, room_queues) in &queues_by_room {
        if !members_by_room.contains_key(room) {
            mine.extend(inner.allocate(me, room_queues, members)?);
        }
    }
    Ok(mine)
}

fn consumer_room(
    resolver: &dyn MachineRoomResolver,
    member: &str,
) -> Result<String, AllocateError> {
    resolver
        .consumer_deploy_in(member)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| AllocateError::NoConsumerRoom(member.to_owned()))
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::{members, queues, split};
    use super::*;

    /// RocketMQ's test resolver: the room is what precedes the first `-` of the broker name
    /// or client id.
    #[derive(Debug)]
    pub struct DashRooms;

    impl MachineRoomResolver for DashRooms {
        fn broker_deploy_in(&self, queue: &MessageQueue) -> Option<String> {
            queue.broker_name.split('-').next().map(str::to_owned)
        }
        fn consumer_deploy_in(&self, client_id: &str) -> Option<String> {
            client_id.split('-').next().map(str::to_owned)
        }
    }

    fn rooms(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn by_machine_room_splits_as_rocketmq() {
        // RocketMQ's AllocateMessageQueueByMachineRoomTest.
        let mut all = queues("topic", "room1@broker-a", 5);
        all.extend(queues("topic", "room2@broker-b", 10).into_iter().skip(5));
        let strategy = AllocateStrategy::ByMachineRoom {
            consumer_rooms: rooms(&["room1"]),
        };
        let ids = members(&["CID_PREFIX0", "CID_PREFIX1"]);
        assert_eq!(split(&strategy, &all, &ids), [vec![0, 1, 4], vec![2, 3]]);
    }

    #[test]
    fn by_machine_room_ignores_brokers_without_a_room() {
        let mut all = queues("T", "broker-a", 4);
        all.extend(queues("T", "r@b@c", 4));
        all.extend(queues("T", "r@", 4));
        let strategy = AllocateStrategy::ByMachineRoom {
            consumer_rooms: rooms(&["r", "broker-a"]),
        };
        assert_eq!(
            split(&strategy, &all, &members(&["a"])),
            [Vec::<i32>::new()]
        );
        assert_eq!(broker_room("r@b@"), Some("r"));
        assert_eq!(broker_room("@b"), Some(""));
    }

    fn idc_queues(rooms: &[&str], per_room: i32) -> Vec<MessageQueue> {
        let mut all: Vec<MessageQueue> = rooms
            .iter()
            .flat_map(|r| queues("topic_test", &format!("{r}-brokerName"), per_room))
            .collect();
        all.sort();
        all
    }

    fn idc_members(rooms: &[&str], per_room: usize) -> Vec<String> {
        let mut all: Vec<String> = rooms
            .iter()
            .flat_map(|r| (0..per_room).map(move |i| format!("{r}-CID-{i}")))
            .collect();
        all.sort();
        all
    }

    fn nearby_avg() -> AllocateStrategy {
        AllocateStrategy::machine_room_nearby(AllocateStrategy::Averagely, DashRooms)
    }

    /// Each member's queues (broker name, queue id).
    fn nearby_split(all: &[MessageQueue], ids: &[String]) -> BTreeMap<String, Vec<(String, i32)>> {
        ids.iter()
            .map(|me| {
                let got = nearby_avg().allocate(me, all, ids).expect("rooms resolve");
                let got = got
                    .into_iter()
                    .map(|q| (q.broker_name, q.queue_id))
                    .collect();
                (me.clone(), got)
            })
            .collect()
    }

    #[test]
    fn nearby_keeps_queues_in_their_room() {
        // RocketMQ's testWhenIDCSizeEquals: every queue to a member of its own room.
        let all = idc_queues(&["IDC1", "IDC2", "IDC3"], 20);
        let ids = idc_members(&["IDC1", "IDC2", "IDC3"], 3);
        let split = nearby_split(&all, &ids);
        let mut taken = 0;
        for (me, got) in &split {
            for (broker, _) in got {
                assert_eq!(
                    broker.split('-').next(),
                    me.split('-').next(),
                    "{me} got {broker}"
                );
            }
            taken += got.len();
        }
        assert_eq!(taken, all.len());
        assert_eq!(
            split["IDC2-CID-0"],
            (0..7)
                .map(|i| ("IDC2-brokerName".to_owned(), i))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn nearby_shares_a_room_without_members_among_everyone() {
        // RocketMQ's testWhenConsumerIDCIsLess: IDC3 has brokers but no consumers.
        let all = idc_queues(&["IDC1", "IDC2", "IDC3"], 4);
        let ids = idc_members(&["IDC1", "IDC2"], 2);
        let split = nearby_split(&all, &ids);
        let mut every: Vec<(String, i32)> = split.values().flatten().cloned().collect();
        every.sort();
        let mut expected: Vec<(String, i32)> = all
            .iter()
            .map(|q| (q.broker_name.clone(), q.queue_id))
            .collect();
        expected.sort();
        assert_eq!(every, expected, "each queue exactly once");
        let idc3 = |me: &str| {
            split[me]
                .iter()
                .filter(|(b, _)| b.starts_with("IDC3"))
                .count()
        };
        assert_eq!(
            ids.iter().map(|m| idc3(m)).collect::<Vec<_>>(),
            [1, 1, 1, 1],
            "IDC3's queues split averagely among all four"
        );
        assert_eq!(
            split["IDC1-CID-0"][..2],
            [
                ("IDC1-brokerName".to_owned(), 0),
                ("IDC1-brokerName".to_owned(), 1)
            ]
        );
    }

    #[test]
    fn nearby_refuses_an_unknown_room() {
        #[derive(Debug)]
        struct NoRooms;
        impl MachineRoomResolver for NoRooms {
            fn broker_deploy_in(&self, _: &MessageQueue) -> Option<String> {
                None
            }
            fn consumer_deploy_in(&self, _: &str) -> Option<String> {
                Some(String::new())
            }
        }
        let all = queues("T", "b", 2);
        let strategy = AllocateStrategy::machine_room_nearby(AllocateStrategy::Averagely, NoRooms);
        assert_eq!(
            strategy.allocate("a", &all, &members(&["a"])),
            Err(AllocateError::NoBrokerRoom(all[0].clone()))
        );
        let strategy =
            AllocateStrategy::machine_room_nearby(AllocateStrategy::Averagely, DashRooms);
        let mut ids = members(&["a-1"]);
        ids.push(String::new());
        assert_eq!(
            strategy.allocate("a-1", &all, &ids),
            Err(AllocateError::NoConsumerRoom(String::new()))
        );
    }
}
