//! Tag subscriptions: `*`, or `TagA || TagB`, matched by Java `String.hashCode` tag codes
//! (spec 2.5, 4.10). Hash collisions are possible; clients re-check the real tag.

use std::collections::BTreeSet;

use stellmq_remoting::protocol::body::SubscriptionData;
use stellmq_remoting::protocol::message::java_string_hash;
use stellmq_store::MessageFilter;

pub const SUB_ALL: &str = "*";

/// Builds SubscriptionData from a topic and an expression, computing tags and codes.
pub fn build_subscription(topic: &str, expression: &str, sub_version: i64) -> SubscriptionData {
    let expression = expression.trim();
    let mut data = SubscriptionData {
        class_filter_mode: false,
        topic: topic.to_owned(),
        sub_string: if expression.is_empty() {
            SUB_ALL.to_owned()
        } else {
            expression.to_owned()
        },
        tags_set: BTreeSet::new(),
        code_set: BTreeSet::new(),
        sub_version,
        expression_type: Some("TAG".to_owned()),
    };
    if data.sub_string != SUB_ALL {
        for tag in data
            .sub_string
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            data.tags_set.insert(tag.to_owned());
            data.code_set.insert(java_string_hash(tag));
        }
    }
    data
}

/// Fills in tags and codes the client left out (the C++ SDK sends `codeSet` zeros or
/// nothing), from the subscription string itself.
pub fn normalize(mut data: SubscriptionData) -> SubscriptionData {
    let rebuilt = build_subscription(&data.topic, &data.sub_string, data.sub_version);
    data.sub_string = rebuilt.sub_string;
    data.tags_set = rebuilt.tags_set;
    data.code_set = rebuilt.code_set;
    data
}

/// Matches consume-queue tag codes against a subscription.
pub struct TagFilter {
    all: bool,
    codes: BTreeSet<i32>,
}

impl TagFilter {
    pub fn new(sub: &SubscriptionData) -> Self {
        Self {
            all: sub.sub_string.trim() == SUB_ALL || sub.sub_string.trim().is_empty(),
            codes: sub.code_set.clone(),
        }
    }
}

impl MessageFilter for TagFilter {
    fn matches_tags_code(&self, tags_code: i64) -> bool {
        self.all || self.codes.contains(&(tags_code as i32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tag_expressions() {
        let s = build_subscription("T", " TagA || TagB ", 1);
        assert_eq!(s.tags_set.iter().collect::<Vec<_>>(), ["TagA", "TagB"]);
        assert!(s.code_set.contains(&2598919));
        let f = TagFilter::new(&s);
        assert!(f.matches_tags_code(2598919));
        assert!(!f.matches_tags_code(0));
        assert!(TagFilter::new(&build_subscription("T", "*", 1)).matches_tags_code(42));
        assert!(TagFilter::new(&build_subscription("T", "", 1)).matches_tags_code(42));
    }

    #[test]
    fn normalizes_cpp_zero_codes() {
        let mut s = build_subscription("T", "TagA || TagB", 1);
        s.code_set = [0].into_iter().collect();
        let n = normalize(s);
        assert!(n.code_set.contains(&2598919) && !n.code_set.contains(&0));
    }
}
