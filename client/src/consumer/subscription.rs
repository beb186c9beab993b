//! A consumer's subscriptions: each topic's expression as the broker reads it
//! (`SubscriptionData`: tags with their hash codes, or an SQL92 selector), plus the group's
//! retry topic in clustering mode.

use std::collections::BTreeMap;

use parking_lot::RwLock;
use stellmq_remoting::protocol::body::SubscriptionData;
use stellmq_remoting::protocol::message::now_ms;

use super::config::ExpressionType;

#[derive(Default)]
pub(crate) struct Subscriptions {
    by_topic: RwLock<BTreeMap<String, SubscriptionData>>,
}

impl Subscriptions {
    /// Subscribes `topic` (already in its namespace) with `expression`.
    pub fn insert(&self, topic: &str, expression: &str, kind: ExpressionType) {
        self.by_topic
            .write()
            .insert(topic.to_owned(), build(topic, expression, kind));
    }

    /// Subscribes a group's retry topic to everything, unless it already is.
    pub fn insert_retry(&self, retry_topic: &str) {
        self.by_topic
            .write()
            .entry(retry_topic.to_owned())
            .or_insert_with(|| build(retry_topic, "*", ExpressionType::Tag));
    }

    pub fn get(&self, topic: &str) -> Option<SubscriptionData> {
        self.by_topic.read().get(topic).cloned()
    }

    pub fn topics(&self) -> Vec<String> {
        self.by_topic.read().keys().cloned().collect()
    }

    pub fn all(&self) -> Vec<SubscriptionData> {
        self.by_topic.read().values().cloned().collect()
    }

    /// The subscriptions with SQL92 selectors.
    pub fn sql92(&self) -> Vec<SubscriptionData> {
        self.by_topic
            .read()
            .values()
            .filter(|s| s.expression_type.as_deref() == Some(ExpressionType::Sql92.as_str()))
            .cloned()
            .collect()
    }
}

/// `expression` of `topic` as the broker reads it: an SQL92 selector as written, or tags
/// (`TagA || TagB`, blank = `*`) with the hash code of each.
pub(crate) fn build(topic: &str, expression: &str, kind: ExpressionType) -> SubscriptionData {
    let expression = expression.trim();
    if kind == ExpressionType::Sql92 {
        return SubscriptionData {
            topic: topic.to_owned(),
            sub_string: expression.to_owned(),
            sub_version: now_ms(),
            expression_type: Some(kind.as_str().into()),
            ..Default::default()
        };
    }
    SubscriptionData::tags(topic, expression, now_ms())
}
