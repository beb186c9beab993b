//! Queue allocation strategies: every consumer of a group computes the same split from the
//! same sorted queue and client-id lists.

use stellmq_remoting::protocol::body::MessageQueue;

/// How queues are divided among the members of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllocateStrategy {
    /// Contiguous blocks (RocketMQ's AllocateMessageQueueAveragely).
    #[default]
    Averagely,
    /// Round robin (AllocateMessageQueueAveragelyByCircle).
    AveragelyByCircle,
}

impl AllocateStrategy {
    /// The queues `me` gets; `queues` and `members` must be sorted.
    pub fn allocate(
        self,
        me: &str,
        queues: &[MessageQueue],
        members: &[String],
    ) -> Vec<MessageQueue> {
        let Some(index) = members.iter().position(|m| m == me) else {
            return Vec::new();
        };
        let (n, m) = (queues.len(), members.len());
        match self {
            AllocateStrategy::Averagely => {
                let rem = n % m;
                let avg = if n <= m {
                    1
                } else if rem > 0 && index < rem {
                    n / m + 1
                } else {
                    n / m
                };
                let start = if rem > 0 && index < rem {
                    index * avg
                } else {
                    index * avg + rem
                };
                let len = avg.min(n.saturating_sub(start));
                queues.iter().skip(start).take(len).cloned().collect()
            }
            AllocateStrategy::AveragelyByCircle => queues
                .iter()
                .enumerate()
                .filter(|(i, _)| i % m == index)
                .map(|(_, q)| q.clone())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(n: i32) -> Vec<MessageQueue> {
        (0..n)
            .map(|i| MessageQueue {
                broker_name: "b".into(),
                queue_id: i,
                topic: "T".into(),
            })
            .collect()
    }

    #[test]
    fn every_queue_goes_to_exactly_one_member() {
        for strategy in [
            AllocateStrategy::Averagely,
            AllocateStrategy::AveragelyByCircle,
        ] {
            for n in 1..12 {
                for m in 1..5 {
                    let members: Vec<String> = (0..m).map(|i| format!("c{i}")).collect();
                    let mut all: Vec<i32> = members
                        .iter()
                        .flat_map(|me| strategy.allocate(me, &queues(n), &members))
                        .map(|q| q.queue_id)
                        .collect();
                    all.sort();
                    assert_eq!(
                        all,
                        (0..n.max(0)).collect::<Vec<_>>(),
                        "{strategy:?} n={n} m={m}"
                    );
                }
            }
        }
    }

    #[test]
    fn averagely_gives_contiguous_blocks() {
        let members = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let got: Vec<i32> = AllocateStrategy::Averagely
            .allocate("a", &queues(8), &members)
            .iter()
            .map(|q| q.queue_id)
            .collect();
        assert_eq!(got, [0, 1, 2]);
        let got: Vec<i32> = AllocateStrategy::Averagely
            .allocate("c", &queues(8), &members)
            .iter()
            .map(|q| q.queue_id)
            .collect();
        assert_eq!(got, [6, 7]);
        assert!(AllocateStrategy::Averagely
            .allocate("zz", &queues(8), &members)
            .is_empty());
    }
}
