//! AllocateMessageQueueAveragely (contiguous blocks) and AllocateMessageQueueAveragelyByCircle
//! (round robin).

use stellmq_remoting::protocol::body::MessageQueue;

/// The block of member `index` of `members`: the first `n % members` members take one queue
/// more than the others.
pub(super) fn blocks(index: usize, queues: &[MessageQueue], members: usize) -> Vec<MessageQueue> {
    let n = queues.len();
    let rem = n % members;
    let avg = if n <= members {
        1
    } else if rem > 0 && index < rem {
        n / members + 1
    } else {
        n / members
    };
    let start = if rem > 0 && index < rem {
        index * avg
    } else {
        index * avg + rem
    };
    let len = avg.min(n.saturating_sub(start));
    queues.iter().skip(start).take(len).cloned().collect()
}

/// Every `members`-th queue, starting at `index`.
pub(super) fn circle(index: usize, queues: &[MessageQueue], members: usize) -> Vec<MessageQueue> {
    queues
        .iter()
        .enumerate()
        .filter(|(i, _)| i % members == index)
        .map(|(_, q)| q.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{members, queues, split};
    use super::super::AllocateStrategy;

    #[test]
    fn averagely_gives_contiguous_blocks() {
        let ids = members(&["a", "b", "c"]);
        assert_eq!(
            split(&AllocateStrategy::Averagely, &queues("T", "b", 8), &ids),
            [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7]]
        );
        // More members than queues: the last ones get nothing.
        assert_eq!(
            split(&AllocateStrategy::Averagely, &queues("T", "b", 2), &ids),
            [vec![0], vec![1], vec![]]
        );
    }

    #[test]
    fn by_circle_deals_round_robin() {
        let ids = members(&["a", "b", "c"]);
        assert_eq!(
            split(
                &AllocateStrategy::AveragelyByCircle,
                &queues("T", "b", 8),
                &ids
            ),
            [vec![0, 3, 6], vec![1, 4, 7], vec![2, 5]]
        );
    }
}
