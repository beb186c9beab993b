//! Subscriptions and the filters pulls apply: tag expressions (`*`, or `TagA || TagB`,
//! matched by Java `String.hashCode` tag codes in the ConsumeQueue; hash collisions are
//! possible and clients re-check the real tag, protocol.md 2.5, 4.10) and, with
//! `enablePropertyFilter`, SQL92 selectors evaluated on each message's properties.

pub mod sql92;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use stellmq_remoting::protocol::message::MessageRecord;

use sql92::Selector;

use stellmq_remoting::protocol::body::SubscriptionData;
use stellmq_store::MessageFilter;

pub use stellmq_remoting::protocol::body::SUB_ALL;

/// Builds SubscriptionData from a topic and an expression, computing tags and codes.
pub fn build_subscription(topic: &str, expression: &str, sub_version: i64) -> SubscriptionData {
    SubscriptionData::tags(topic, expression, sub_version)
}

/// Whether an `expressionType` means a tag expression (absent means TAG).
pub fn is_tag_type(expression_type: Option<&str>) -> bool {
    expression_type.is_none_or(|t| t.is_empty() || t.eq_ignore_ascii_case("TAG"))
}

/// Fills in tags and codes the client left out (the C++ SDK sends `codeSet` zeros or
/// nothing), from the subscription string itself; SQL92 subscriptions have none.
pub fn normalize(mut data: SubscriptionData) -> SubscriptionData {
    if !is_tag_type(data.expression_type.as_deref()) {
        data.sub_string = data.sub_string.trim().to_owned();
        data.tags_set.clear();
        data.code_set.clear();
        return data;
    }
    let rebuilt = build_subscription(&data.topic, &data.sub_string, data.sub_version);
    data.sub_string = rebuilt.sub_string;
    data.tags_set = rebuilt.tags_set;
    data.code_set = rebuilt.code_set;
    data
}

/// Why a subscription cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("The broker does not support consumer to filter message by {0}")]
    NotSupported(String),
    #[error(transparent)]
    Parse(#[from] sql92::SqlError),
}

/// Parsed SQL92 selectors by text, so each pull does not parse again.
#[derive(Default)]
pub struct SelectorCache(Mutex<HashMap<String, Arc<Selector>>>);

/// Distinct selectors kept; past this the cache starts over.
const SELECTOR_CACHE_MAX: usize = 4096;

impl SelectorCache {
    pub fn get(&self, text: &str) -> Result<Arc<Selector>, sql92::SqlError> {
        if let Some(selector) = self.0.lock().get(text) {
            return Ok(selector.clone());
        }
        let selector = Arc::new(Selector::parse(text)?);
        let mut cache = self.0.lock();
        if cache.len() >= SELECTOR_CACHE_MAX {
            cache.clear();
        }
        cache.insert(text.to_owned(), selector.clone());
        Ok(selector)
    }
}

/// What a pull matches messages with.
#[derive(Clone)]
pub enum SubscriptionFilter {
    Tags(TagFilter),
    Sql(Arc<Selector>),
}

impl SubscriptionFilter {
    /// The filter of a subscription; SQL92 only with `enablePropertyFilter`.
    pub fn new(
        sub: &SubscriptionData,
        sql_enabled: bool,
        selectors: &SelectorCache,
    ) -> Result<Self, FilterError> {
        let kind = sub.expression_type.as_deref();
        if is_tag_type(kind) {
            return Ok(Self::Tags(TagFilter::new(sub)));
        }
        let kind = kind.unwrap_or_default();
        if !sql_enabled || !kind.eq_ignore_ascii_case("SQL92") {
            return Err(FilterError::NotSupported(kind.to_owned()));
        }
        Ok(Self::Sql(selectors.get(&sub.sub_string)?))
    }
}

impl MessageFilter for SubscriptionFilter {
    fn matches_tags_code(&self, tags_code: i64) -> bool {
        match self {
            Self::Tags(tags) => tags.matches_tags_code(tags_code),
            Self::Sql(_) => true,
        }
    }

    fn matches_record(&self, record: &Bytes) -> bool {
        match self {
            Self::Tags(_) => true,
            Self::Sql(selector) => MessageRecord::decode(record, false)
                .is_ok_and(|(r, _)| selector.matches(|k| r.properties.get(k))),
        }
    }
}

/// Matches consume-queue tag codes against a subscription.
#[derive(Clone)]
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
