//! `extFields`: the per-request header map.
//!
//! Requests are decoded leniently (protocol.md 1.3): values may arrive as strings, numbers, booleans or
//! null; they are coerced to strings and nulls are dropped. Responses always carry strings.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// The header fields of one command, ordered by key like fastjson writes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtFields(BTreeMap<String, String>);

impl ExtFields {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A field that is present and not empty; CPP sends `""` for fields it does not use.
    pub fn get_non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), value.into());
    }

    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.0.remove(key)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl serde::Serialize for ExtFields {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// One JSON scalar coerced to text; `None` for null.
pub(crate) struct Lenient(pub(crate) Option<String>);

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
                // Integral floats (e.g. 4.0 from a JS client) read as integers.
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Ok(Lenient(Some(format!("{}", v as i64))))
                } else {
                    Ok(Lenient(Some(v.to_string())))
                }
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
                let mut fields = BTreeMap::new();
                while let Some((key, Lenient(value))) = map.next_entry::<String, Lenient>()? {
                    if let Some(value) = value {
                        fields.insert(key, value);
                    }
                }
                Ok(ExtFields(fields))
            }
            fn visit_unit<E: de::Error>(self) -> Result<ExtFields, E> {
                Ok(ExtFields::default())
            }
        }
        deserializer.deserialize_any(MapVisitor)
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
    fn serializes_strings_only() {
        let fields: ExtFields = [("b", "2"), ("a", "x")].into_iter().collect();
        assert_eq!(
            serde_json::to_string(&fields).expect("ok"),
            r#"{"a":"x","b":"2"}"#
        );
    }
}
