//! The properties string (protocol.md 4.4): `name\u0001value\u0002` repeated.

use std::collections::BTreeMap;

/// Property keys (`MessageConst`, protocol.md 4.5).
pub mod keys {
    pub const KEYS: &str = "KEYS";
    pub const TAGS: &str = "TAGS";
    pub const WAIT: &str = "WAIT";
    pub const DELAY: &str = "DELAY";
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    pub const REAL_QID: &str = "REAL_QID";
    pub const TRAN_MSG: &str = "TRAN_MSG";
    pub const PGROUP: &str = "PGROUP";
    pub const MIN_OFFSET: &str = "MIN_OFFSET";
    pub const MAX_OFFSET: &str = "MAX_OFFSET";
    pub const BUYER_ID: &str = "BUYER_ID";
    pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
    pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
    pub const MSG_REGION: &str = "MSG_REGION";
    pub const TRACE_ON: &str = "TRACE_ON";
    pub const UNIQ_KEY: &str = "UNIQ_KEY";
    pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
    pub const CONSUME_START_TIME: &str = "CONSUME_START_TIME";
    pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
    pub const CLUSTER: &str = "CLUSTER";
    pub const SHARDING_KEY: &str = "__SHARDINGKEY";
    /// Request/reply (4.6+): the request's correlation id, the requester's client id, the
    /// request's time to live, when the broker pushed the reply, and `reply` for replies.
    pub const CORRELATION_ID: &str = "CORRELATION_ID";
    pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
    pub const MESSAGE_TTL: &str = "TTL";
    pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
    pub const MSG_TYPE: &str = "MSG_TYPE";
    /// A POP message's receipt handle (`MessageConst.PROPERTY_POP_CK`).
    pub const POP_CK: &str = "POP_CK";
    /// When a POP consumer first received the message (`PROPERTY_FIRST_POP_TIME`).
    pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";
    /// RocketMQ 5.4's priority message (`PROPERTY_PRIORITY`): a number >= 0, higher first.
    pub const PRIORITY: &str = "_SYS_MSG_PRIORITY_";
    /// RocketMQ 5.5's lite topic of a message (`PROPERTY_LITE_TOPIC`).
    pub const LITE_TOPIC: &str = "__LITE_TOPIC";
    /// The light message queues (LMQ) a message is also dispatched to, comma separated, and
    /// its offset in each (the store fills the offsets in as it appends).
    pub const INNER_MULTI_DISPATCH: &str = "INNER_MULTI_DISPATCH";
    pub const INNER_MULTI_QUEUE_OFFSET: &str = "INNER_MULTI_QUEUE_OFFSET";
    /// A timer message's due time, and its delay in seconds or milliseconds.
    pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
    pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
    pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
}

const NAME_VALUE_SEPARATOR: char = '\u{1}';
const PROPERTY_SEPARATOR: char = '\u{2}';

/// A message's properties. Order is irrelevant on the wire (Java uses a HashMap).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties(BTreeMap<String, String>);

/// The entries of encoded properties as Java reads them: split on `\u0002`, then on the
/// first `\u0001`; entries with an empty name or value are dropped. Of a repeated name the
/// last entry counts.
pub(crate) fn entries(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.split(PROPERTY_SEPARATOR)
        .filter_map(|entry| entry.split_once(NAME_VALUE_SEPARATOR))
        .filter(|(name, value)| !name.is_empty() && !value.is_empty())
}

/// Appends `properties` as [`Properties::encode`] renders them, without a map of its own.
pub fn encode_into(properties: &BTreeMap<String, String>, out: &mut String) {
    for (name, value) in properties {
        out.push_str(name);
        out.push(NAME_VALUE_SEPARATOR);
        out.push_str(value);
        out.push(PROPERTY_SEPARATOR);
    }
}

/// The length of `properties` encoded.
pub fn encoded_len(properties: &BTreeMap<String, String>) -> usize {
    properties.iter().map(|(k, v)| k.len() + v.len() + 2).sum()
}

/// The keys of a `KEYS` value: separated by spaces, empty ones skipped.
pub fn split_keys(keys: &str) -> impl Iterator<Item = &str> {
    keys.split(' ').filter(|k| !k.is_empty())
}

/// The level of a `DELAY` value; 0 when absent or not a number.
pub fn delay_level_of(delay: Option<&str>) -> i32 {
    delay.and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

impl Properties {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes like Java: split on `\u0002`, then on the first `\u0001`; entries with an empty
    /// name or value are dropped.
    pub fn decode(text: &str) -> Self {
        let map = entries(text)
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
        Self(map)
    }

    /// Encodes with Java's trailing `\u0002` after every entry.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(encoded_len(&self.0));
        encode_into(&self.0, &mut out);
        out
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.insert(name.into(), value.into());
    }

    pub fn remove(&mut self, name: &str) -> Option<String> {
        self.0.remove(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The space-separated business keys of `KEYS`, empty tokens skipped.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        split_keys(self.get(keys::KEYS).unwrap_or(""))
    }

    pub fn tags(&self) -> Option<&str> {
        self.get(keys::TAGS)
    }

    /// `WAIT`: true unless explicitly "false".
    pub fn wait_store_ok(&self) -> bool {
        wait_store_ok(self)
    }

    /// `DELAY` as a level (0 when absent or invalid).
    pub fn delay_level(&self) -> i32 {
        delay_level_of(self.get(keys::DELAY))
    }
}

/// Reading properties by name, whether owned ([`Properties`]) or read in place from a
/// request ([`PropertyView`]).
pub trait PropertyLookup {
    fn get(&self, name: &str) -> Option<&str>;

    fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

impl PropertyLookup for Properties {
    fn get(&self, name: &str) -> Option<&str> {
        Properties::get(self, name)
    }
}

/// The most entries a [`PropertyView`] holds; text with more is read into [`Properties`].
pub const VIEW_CAPACITY: usize = 16;

/// Properties read in place from their encoded text, as Java reads them (see [`entries`]),
/// without a map or owned strings: what a send needs to look at before it stores the
/// properties again. Holds at most [`VIEW_CAPACITY`] distinct names.
#[derive(Debug, Clone, Copy)]
pub struct PropertyView<'a> {
    entries: [(&'a str, &'a str); VIEW_CAPACITY],
    len: usize,
}

impl<'a> PropertyView<'a> {
    /// None when `text` has more than [`VIEW_CAPACITY`] distinct names.
    pub fn parse(text: &'a str) -> Option<Self> {
        let mut view = Self {
            entries: [("", ""); VIEW_CAPACITY],
            len: 0,
        };
        for (name, value) in entries(text) {
            // Of a repeated name the last entry counts.
            let filled = view.entries.get_mut(..view.len).unwrap_or_default();
            if let Some(slot) = filled.iter_mut().find(|e| e.0 == name) {
                slot.1 = value;
            } else {
                *view.entries.get_mut(view.len)? = (name, value);
                view.len += 1;
            }
        }
        Some(view)
    }

    /// The entries parsed (`len` never exceeds the array).
    fn filled(&self) -> &[(&'a str, &'a str)] {
        self.entries.get(..self.len).unwrap_or_default()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        self.filled().iter().copied()
    }

    pub fn to_properties(&self) -> Properties {
        self.iter().collect()
    }

    /// Encodes (Java's form, see [`Properties::encode`]) without the names in `drop`,
    /// followed by `extra`, whose names replace the view's own.
    pub fn encode_with(&self, drop: &[&str], extra: &[(&str, &str)]) -> String {
        let kept = || {
            self.iter().filter(|(name, _)| {
                !drop.contains(name) && !extra.iter().any(|(replaced, _)| replaced == name)
            })
        };
        let len: usize = kept()
            .chain(extra.iter().copied())
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum();
        let mut out = String::with_capacity(len);
        for (name, value) in kept().chain(extra.iter().copied()) {
            out.push_str(name);
            out.push(NAME_VALUE_SEPARATOR);
            out.push_str(value);
            out.push(PROPERTY_SEPARATOR);
        }
        out
    }
}

impl PropertyLookup for PropertyView<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.filled()
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// `WAIT`: true unless explicitly "false".
pub fn wait_store_ok(props: &impl PropertyLookup) -> bool {
    props
        .get(keys::WAIT)
        .is_none_or(|v| !v.eq_ignore_ascii_case("false"))
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Properties {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_encoding() {
        let p: Properties = [("KEYS", "k1 k2"), ("TAGS", "TagA")].into_iter().collect();
        assert_eq!(p.encode(), "KEYS\u{1}k1 k2\u{2}TAGS\u{1}TagA\u{2}");
        assert_eq!(Properties::decode(&p.encode()), p);
        assert_eq!(p.keys().collect::<Vec<_>>(), vec!["k1", "k2"]);
    }

    #[test]
    fn decodes_like_java() {
        let p =
            Properties::decode("A\u{1}1\u{2}\u{2}B\u{1}\u{2}\u{1}x\u{2}C\u{1}a\u{1}b\u{2}D\u{1}4");
        assert_eq!(p.get("A"), Some("1"));
        assert!(!p.contains("B"), "empty value dropped");
        assert_eq!(p.get("C"), Some("a\u{1}b"), "split on the first separator");
        assert_eq!(p.get("D"), Some("4"), "missing trailing separator accepted");
        assert_eq!(p.iter().count(), 3);
    }

    #[test]
    fn wait_and_delay() {
        let p = Properties::decode("WAIT\u{1}false\u{2}DELAY\u{1}3\u{2}");
        assert!(!p.wait_store_ok());
        assert_eq!(p.delay_level(), 3);
        assert!(Properties::new().wait_store_ok());
    }

    #[test]
    fn a_view_reads_what_decode_reads() {
        let text = "A\u{1}1\u{2}\u{2}B\u{1}\u{2}\u{1}x\u{2}C\u{1}a\u{1}b\u{2}A\u{1}2\u{2}D\u{1}4";
        let view = PropertyView::parse(text).expect("few entries");
        assert_eq!(view.to_properties(), Properties::decode(text));
        assert_eq!(
            PropertyLookup::get(&view, "A"),
            Some("2"),
            "the last entry counts"
        );
        assert!(!view.contains("B"), "empty value dropped");
        assert_eq!(view.iter().count(), 3);
    }

    #[test]
    fn a_view_encodes_without_dropped_names_and_with_extras() {
        let view = PropertyView::parse("WAIT\u{1}true\u{2}CLUSTER\u{1}x\u{2}K\u{1}v\u{2}")
            .expect("few entries");
        let encoded = view.encode_with(&["WAIT", "CLUSTER"], &[("CLUSTER", "c1")]);
        assert_eq!(encoded, "K\u{1}v\u{2}CLUSTER\u{1}c1\u{2}");
        assert!(!wait_store_ok(
            &PropertyView::parse("WAIT\u{1}FALSE").expect("one")
        ));
    }

    #[test]
    fn a_view_holds_a_bounded_number_of_names() {
        let text: String = (0..=VIEW_CAPACITY)
            .map(|i| format!("k{i}\u{1}v\u{2}"))
            .collect();
        assert!(PropertyView::parse(&text).is_none());
        let repeated = "k\u{1}v\u{2}".repeat(VIEW_CAPACITY * 4);
        assert_eq!(
            PropertyView::parse(&repeated).map(|v| v.iter().count()),
            Some(1)
        );
    }
}
