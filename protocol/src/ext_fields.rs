//! `extFields`: the per-request header map.
//!
//! Requests are decoded leniently (protocol.md 1.3): values may arrive as strings, numbers, booleans or
//! null; they are coerced to strings and nulls are dropped. Responses always carry strings.

use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::Deserialize;

/// The header fields of one command, ordered by key like fastjson writes them.
///
/// Every key and value lives in one string, and a sorted table points into it: decoding a
/// request's header makes two allocations however many fields it has (a map of owned
/// strings made two per field plus its nodes, the largest cost of a send in profiles).
#[derive(Clone, Default)]
pub struct ExtFields {
    /// Keys and values back to back; replaced values leave their old bytes behind.
    text: String,
    /// Sorted by key, keys unique.
    entries: Vec<Entry>,
}

/// One field: its key at `text[key_start..value_start]`, its value up to `value_end`.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key_start: u32,
    value_start: u32,
    value_end: u32,
}

impl ExtFields {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `fields` fields of `text` bytes of keys and values in all, so that filling
    /// it does not reallocate.
    pub fn with_capacity(fields: usize, text: usize) -> Self {
        Self {
            text: String::with_capacity(text),
            entries: Vec::with_capacity(fields),
        }
    }

    // Entries index `text` at the boundaries of the strings pushed into it, so these lookups
    // always succeed; they are checked all the same, an empty string standing for a miss.
    fn key_of(&self, e: &Entry) -> &str {
        self.text
            .get(e.key_start as usize..e.value_start as usize)
            .unwrap_or_default()
    }

    fn value_of(&self, e: &Entry) -> &str {
        self.text
            .get(e.value_start as usize..e.value_end as usize)
            .unwrap_or_default()
    }

    /// The key's bytes: compared as bytes, which orders UTF-8 text as `str` does, without
    /// the char-boundary checks of slicing a `str`.
    fn key_bytes(&self, e: &Entry) -> &[u8] {
        entry_key(self.text.as_bytes(), e)
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        let key = key.as_bytes();
        self.entries
            .binary_search_by(|e| key_order(self.key_bytes(e), key))
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        let i = self.find(key).ok()?;
        Some(self.value_of(self.entries.get(i)?))
    }

    /// A field that is present and not empty; CPP sends `""` for fields it does not use.
    pub fn get_non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        self.insert_with(&key, |text| text.push_str(&value));
    }

    /// Inserts `key` with the value `write` appends to the text (replacing an earlier value).
    pub(crate) fn insert_with(&mut self, key: &str, write: impl FnOnce(&mut String)) {
        // Headers render their fields in key order: then each goes last, without a search.
        let goes_last = self
            .entries
            .last()
            .is_none_or(|last| key_order(self.key_bytes(last), key.as_bytes()).is_lt());
        let slot = if goes_last {
            Err(self.entries.len())
        } else {
            self.find(key)
        };
        let key_start = self.text.len();
        self.text.push_str(key);
        let value_start = self.text.len();
        write(&mut self.text);
        self.push_entry(slot, key_start, value_start);
    }

    /// Records the key and value just appended at `key_start..value_start..` as the field
    /// at `slot` (from [`Self::find`]).
    fn push_entry(&mut self, slot: Result<usize, usize>, key_start: usize, value_start: usize) {
        let entry = Entry {
            key_start: key_start as u32,
            value_start: value_start as u32,
            value_end: self.text.len() as u32,
        };
        match slot.map(|i| self.entries.get_mut(i)) {
            Ok(Some(slot)) => *slot = entry,
            Ok(None) => self.entries.push(entry),
            Err(i) => self.entries.insert(i, entry),
        }
    }

    /// Appends a field in arrival order, unsorted until [`Self::sort_arrived`]: decoders push
    /// every field of a header, then sort once (no allocation per field).
    pub(crate) fn push_arrived(&mut self, key: &str, value: &str) {
        let key_start = self.text.len();
        self.text.push_str(key);
        let value_start = self.text.len();
        self.text.push_str(value);
        self.push_entry(Err(self.entries.len()), key_start, value_start);
    }

    /// Sorts fields pushed in arrival order by key; of equal keys the last one stays, and a
    /// last one that was null (`value_end == u32::MAX`) drops the key.
    pub(crate) fn sort_arrived(&mut self, nulls: bool) {
        let text = self.text.as_bytes();
        let key = |e: &Entry| entry_key(text, e);
        // Our own clients send fields in key order, without repeats: nothing to do then.
        let in_order = self
            .entries
            .iter()
            .zip(self.entries.iter().skip(1))
            .all(|(a, b)| key_order(key(a), key(b)).is_lt());
        if in_order {
            if nulls {
                self.entries.retain(|e| e.value_end != u32::MAX);
            }
            return;
        }
        // Stable: equal keys keep their arrival order, so the last of each run wins.
        self.entries.sort_by(|a, b| key_order(key(a), key(b)));
        self.entries.dedup_by(|later, kept| {
            let same = key(later) == key(kept);
            if same {
                *kept = *later;
            }
            same
        });
        if nulls {
            self.entries.retain(|e| e.value_end != u32::MAX);
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.find(key).ok()?;
        let entry = self.entries.remove(i);
        Some(self.value_of(&entry).to_owned())
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The fields in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|e| (self.key_of(e), self.value_of(e)))
    }
}

/// The key of `e` in `text` (empty if `e` does not index it).
fn entry_key<'a>(text: &'a [u8], e: &Entry) -> &'a [u8] {
    text.get(e.key_start as usize..e.value_start as usize)
        .unwrap_or_default()
}

/// Byte order of two keys, deciding on the first byte inline: SEND_MESSAGE_V2's keys are
/// single letters, and a `memcmp` call per probe was a tenth of a send's broker CPU.
#[inline]
fn key_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    match (a.first(), b.first()) {
        (Some(x), Some(y)) if x != y => x.cmp(y),
        _ => a.cmp(b),
    }
}

impl PartialEq for ExtFields {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for ExtFields {}

impl fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut fields = Self::new();
        for (k, v) in iter {
            fields.insert(k, v);
        }
        fields
    }
}

impl serde::Serialize for ExtFields {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One JSON scalar coerced to text; `None` for null.
pub(crate) struct Lenient(pub(crate) Option<String>);

impl Lenient {
    /// Integral floats (e.g. 4.0 from a JS client) read as integers.
    fn from_f64(v: f64) -> Self {
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            Lenient(Some(format!("{}", v as i64)))
        } else {
            Lenient(Some(v.to_string()))
        }
    }
}

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LenientVisitor;
        impl<'de> Visitor<'de> for LenientVisitor {
            type Value = Lenient;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON scalar")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Lenient, E> {
                Ok(Lenient(Some(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Lenient, E> {
                Ok(Lenient(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Lenient, E> {
                Ok(Lenient::from_f64(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Lenient, E> {
                Ok(Lenient(Some(v.to_string())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Lenient, A::Error> {
                let value: serde_json::Value =
                    Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Lenient(Some(value.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Lenient, A::Error> {
                let value: serde_json::Value =
                    Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Lenient(Some(value.to_string())))
            }
        }
        deserializer.deserialize_any(LenientVisitor)
    }
}

impl<'de> Deserialize<'de> for ExtFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = ExtFields;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an extFields object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExtFields, A::Error> {
                // Fields in arrival order (a null value as an empty range to drop), then
                // sorted once.
                let mut fields = ExtFields::new();
                let mut nulls = false;
                loop {
                    let key_start = fields.text.len();
                    if map.next_key_seed(AppendText(&mut fields.text))?.is_none() {
                        break;
                    }
                    let value_start = fields.text.len();
                    let present = map.next_value_seed(AppendScalar(&mut fields.text))?;
                    nulls |= !present;
                    fields.entries.push(Entry {
                        key_start: key_start as u32,
                        value_start: value_start as u32,
                        value_end: if present {
                            fields.text.len() as u32
                        } else {
                            u32::MAX
                        },
                    });
                }
                fields.sort_arrived(nulls);
                Ok(fields)
            }
            fn visit_unit<E: de::Error>(self) -> Result<ExtFields, E> {
                Ok(ExtFields::default())
            }
        }
        deserializer.deserialize_any(MapVisitor)
    }
}

/// Appends a key to the fields' text.
struct AppendText<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for AppendText<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for AppendText<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_str(v);
        Ok(())
    }
}

/// Appends a JSON scalar, coerced to text as [`Lenient`] does, to the fields' text;
/// `false` for null (the field is dropped).
struct AppendScalar<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for AppendScalar<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AppendScalar<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON scalar")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        self.0.push_str(v);
        Ok(true)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        let _ = write!(self.0, "{v}");
        Ok(true)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        let _ = write!(self.0, "{v}");
        Ok(true)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        let Lenient(text) = Lenient::from_f64(v);
        self.0.push_str(text.as_deref().unwrap_or_default());
        Ok(true)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.0.push_str(if v { "true" } else { "false" });
        Ok(true)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        let value: serde_json::Value =
            Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        self.0.push_str(&value.to_string());
        Ok(true)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        let value: serde_json::Value =
            Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))?;
        self.0.push_str(&value.to_string());
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coerces_scalars_and_drops_null() {
        let json = r#"{"queueId":3,"sysFlag":0,"unitMode":false,"topic":"T","remark":null,"ratio":1.5,"n":4.0}"#;
        let fields: ExtFields = serde_json::from_str(json).expect("valid");
        assert_eq!(fields.get("queueId"), Some("3"));
        assert_eq!(fields.get("unitMode"), Some("false"));
        assert_eq!(fields.get("topic"), Some("T"));
        assert_eq!(fields.get("ratio"), Some("1.5"));
        assert_eq!(fields.get("n"), Some("4"));
        assert!(!fields.contains_key("remark"));
    }

    #[test]
    fn keeps_one_sorted_value_per_key() {
        let json = r#"{"z":"1","a":2,"m":"x","a":"3","gone":"y","gone":null}"#;
        let mut fields: ExtFields = serde_json::from_str(json).expect("valid");
        assert_eq!(
            fields.iter().collect::<Vec<_>>(),
            vec![("a", "3"), ("m", "x"), ("z", "1")],
            "the last value of a key wins; null drops it"
        );
        fields.insert("m", "replaced");
        fields.insert("b", "new");
        assert_eq!(fields.remove("z").as_deref(), Some("1"));
        assert_eq!(fields.remove("z"), None);
        let expected: ExtFields = [("a", "3"), ("b", "new"), ("m", "replaced")]
            .into_iter()
            .collect();
        assert_eq!(fields, expected, "equal whatever text was replaced");
        assert_eq!(fields.len(), 3);
        assert!(fields.contains_key("b") && !fields.contains_key("c"));
        assert_eq!(
            serde_json::to_string(&fields).expect("ok"),
            r#"{"a":"3","b":"new","m":"replaced"}"#
        );
    }

    #[test]
    fn ordered_and_unordered_fields_read_the_same() {
        let ordered = r#"{"a":"1","b":"2","c":null,"d":"4"}"#;
        let fields: ExtFields = serde_json::from_str(ordered).expect("valid");
        assert_eq!(
            fields.iter().collect::<Vec<_>>(),
            vec![("a", "1"), ("b", "2"), ("d", "4")],
            "in key order: a null still drops its key"
        );
        let mut built = ExtFields::new();
        for (k, v) in [("b", "2"), ("d", "x"), ("a", "1"), ("d", "4")] {
            built.insert(k, v);
        }
        assert_eq!(
            built, fields,
            "inserts out of order and repeated land sorted"
        );
        built.insert("e", "5");
        assert_eq!(built.iter().last(), Some(("e", "5")));
    }

    #[test]
    fn key_order_is_byte_order() {
        let keys = [
            "",
            "a",
            "b",
            "ab",
            "aa",
            "a\u{0}",
            "consumerGroup",
            "commitOffset",
            "ü",
            "z",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(
                    key_order(a.as_bytes(), b.as_bytes()),
                    a.cmp(b),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn keeps_escaped_and_unicode_text() {
        let json = r#"{"k\"ey":"v\u00e9\n","ü":"ß"}"#;
        let fields: ExtFields = serde_json::from_str(json).expect("valid");
        assert_eq!(fields.get("k\"ey"), Some("vé\n"));
        assert_eq!(fields.get("ü"), Some("ß"));
    }

    #[test]
    fn serializes_strings_only() {
        let fields: ExtFields = [("b", "2"), ("a", "x")].into_iter().collect();
        assert_eq!(
            serde_json::to_string(&fields).expect("ok"),
            r#"{"a":"x","b":"2"}"#
        );
    }
}
