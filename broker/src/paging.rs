//! RocketMQ 5's metadata pages (`enableSplitMetadata`): GET_ALL_TOPIC_CONFIG and
//! GET_ALL_SUBSCRIPTIONGROUP_CONFIG answered a page at a time, so a slave or a tool copies a
//! table of 100,000 entries in bounded answers, and a slave whose table has the master's
//! version learns it from a page of one.

use std::collections::BTreeMap;

use stellmq_remoting::protocol::body::{fastjson, DataVersion};

/// A page: at most `max` entries (at least one) from `seq` in name order, or from the first
/// when `asked_version` (the asker's idea of the table, DataVersion JSON) is not `current`,
/// since the positions then changed (RocketMQ's `subTopicConfigTable`).
pub fn page<V: Clone>(
    table: &BTreeMap<String, V>,
    asked_version: Option<&str>,
    current: &DataVersion,
    seq: Option<i32>,
    max: usize,
) -> BTreeMap<String, V> {
    let same_version = asked_version
        .and_then(|v| fastjson::decode::<DataVersion>(v.as_bytes()).ok())
        .is_some_and(|v| v == *current);
    let begin = if same_version {
        usize::try_from(seq.unwrap_or(0)).unwrap_or(0)
    } else {
        0
    };
    table
        .iter()
        .skip(begin)
        .take(max.max(1))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The page size for a request that asked for `asked` at most, within `split_size`.
pub fn page_size(asked: Option<i32>, split_size: i32) -> usize {
    let asked = asked.unwrap_or(i32::MAX);
    usize::try_from(asked.min(split_size).max(1)).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(n: usize) -> BTreeMap<String, usize> {
        (0..n).map(|i| (format!("t{i:03}"), i)).collect()
    }

    #[test]
    fn pages_follow_name_order_and_restart_when_the_version_moved() {
        let t = table(10);
        let v = DataVersion::new(5);
        let json = fastjson::encode(&v);
        let json = std::str::from_utf8(&json).expect("utf8");
        let second = page(&t, Some(json), &v, Some(4), 4);
        assert_eq!(second.values().copied().collect::<Vec<_>>(), [4, 5, 6, 7]);
        let stale = DataVersion::new(4);
        let stale = fastjson::encode(&stale);
        let restarted = page(&t, std::str::from_utf8(&stale).ok(), &v, Some(4), 4);
        assert_eq!(
            restarted.values().copied().collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert!(
            page(&t, Some(json), &v, Some(10), 4).is_empty(),
            "past the end"
        );
        assert_eq!(
            page(&t, Some("not json"), &v, Some(-3), 0).len(),
            1,
            "bounded, from 0"
        );
    }

    #[test]
    fn page_sizes_stay_within_the_split_size_and_above_zero() {
        assert_eq!(page_size(None, 2000), 2000);
        assert_eq!(page_size(Some(1), 2000), 1);
        assert_eq!(page_size(Some(50_000), 2000), 2000);
        assert_eq!(page_size(Some(-5), 2000), 1);
    }
}
