//! fastjson's JSON dialect (protocol.md 3.0), written and read.
//!
//! Java's fastjson writes maps with integer keys unquoted (`{0:"a"}`) and maps keyed by
//! objects with the object as key (`{{"topic":"T",...}:1}`). Neither is standard JSON, and
//! Java tools only map such keys back to `Integer`/`MessageQueue` in that form. Fields are
//! written in alphabetical order with nulls omitted.
//!
//! Writing: bodies are serialized with serde into a `serde_json::Value` (whose object map is
//! ordered, giving fastjson's alphabetical order); [`IntKeyMap`] and [`MqKeyMap`] mark their
//! keys with a private prefix, and [`Printer`] renders marked keys in the dialect (or quoted,
//! for the standard form). Reading: [`to_standard`] rewrites dialect keys into quoted strings,
//! then serde parses the result.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::MessageQueue;
use crate::error::BodyError;

const INT_KEY: &str = "\u{0}i";
const OBJECT_KEY: &str = "\u{0}o";

/// Output flavour of [`encode_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// fastjson default: compact, unquoted integer keys, object keys.
    Fastjson,
    /// fastjson `PrettyFormat` (tabs and newlines), as Java writes its config files.
    FastjsonPretty,
    /// Standard JSON: integer keys quoted; object keys as quoted JSON text.
    Standard,
}

/// Encodes a body in fastjson's compact dialect.
pub fn encode<T: Serialize>(body: &T) -> Vec<u8> {
    encode_with(body, Style::Fastjson).into_bytes()
}

/// Encodes a body in standard JSON.
pub fn encode_standard<T: Serialize>(body: &T) -> Vec<u8> {
    encode_with(body, Style::Standard).into_bytes()
}

/// Encodes a body in the requested style.
pub fn encode_with<T: Serialize>(body: &T, style: Style) -> String {
    match serde_json::to_value(body) {
        Ok(value) => {
            let mut printer = Printer {
                out: String::with_capacity(256),
                style,
            };
            printer.value(&value, 0);
            printer.out
        }
        Err(e) => {
            // Only non-string map keys can fail here, and bodies use the marked maps instead.
            tracing::error!(error = %e, "body serialization failed");
            String::from("{}")
        }
    }
}

/// Decodes a body written in either dialect (or standard JSON). Of a key repeated in one
/// object the last value counts, as fastjson reads it.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, BodyError> {
    let text = std::str::from_utf8(bytes).map_err(|_| BodyError::Utf8)?;
    let standard = to_standard(text)?;
    match serde_json::from_str(&standard) {
        Err(e) if e.to_string().starts_with("duplicate field") => {
            // Rare: read through a map, whose inserts keep the last value of each key.
            let value: Value = serde_json::from_str(&standard)?;
            Ok(serde_json::from_value(value)?)
        }
        decoded => Ok(decoded?),
    }
}

struct Printer {
    out: String,
    style: Style,
}

impl Printer {
    fn value(&mut self, value: &Value, depth: usize) {
        match value {
            Value::Array(items) => self.array(items, depth),
            Value::Object(map) => self.object(map, depth),
            Value::String(s) => self.string(s),
            scalar => {
                let _ = write!(self.out, "{scalar}");
            }
        }
    }

    fn string(&mut self, s: &str) {
        // serde_json's string escaping is standard and fastjson-compatible.
        let _ = write!(self.out, "{}", Value::String(s.to_owned()));
    }

    fn newline(&mut self, depth: usize) {
        if self.style == Style::FastjsonPretty {
            self.out.push('\n');
            for _ in 0..depth {
                self.out.push('\t');
            }
        }
    }

    fn array(&mut self, items: &[Value], depth: usize) {
        self.out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.newline(depth + 1);
            self.value(item, depth + 1);
        }
        if !items.is_empty() {
            self.newline(depth);
        }
        self.out.push(']');
    }

    fn object(&mut self, map: &serde_json::Map<String, Value>, depth: usize) {
        self.out.push('{');
        for (i, (key, value)) in map.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.newline(depth + 1);
            self.key(key);
            self.out.push(':');
            self.value(value, depth + 1);
        }
        if !map.is_empty() {
            self.newline(depth);
        }
        self.out.push('}');
    }

    fn key(&mut self, key: &str) {
        let dialect = self.style != Style::Standard;
        // A marked key is written bare only when it is what the marker promises; any other
        // key (say, a client's map key that merely starts like a marker) is quoted, so no
        // key can inject text into the document.
        if let Some(int) = key
            .strip_prefix(INT_KEY)
            .filter(|k| k.parse::<i64>().is_ok())
        {
            if dialect {
                self.out.push_str(int);
            } else {
                self.string(int);
            }
        } else if let Some(object) = key.strip_prefix(OBJECT_KEY).filter(|k| is_json_object(k)) {
            if dialect {
                self.out.push_str(object);
            } else {
                self.string(object);
            }
        } else {
            self.string(key);
        }
    }
}

/// Whether `text` is one complete JSON object.
fn is_json_object(text: &str) -> bool {
    text.starts_with('{') && serde_json::from_str::<serde_json::Map<String, Value>>(text).is_ok()
}

/// Rewrites fastjson's dialect into standard JSON: unquoted keys are quoted and object keys
/// become JSON strings holding the object's (standard) text.
pub fn to_standard(text: &str) -> Result<String, BodyError> {
    let mut t = Transcoder {
        src: text.as_bytes(),
        pos: 0,
        out: String::with_capacity(text.len() + 16),
        in_key: false,
    };
    t.value(0)?;
    t.skip_ws();
    if t.pos != t.src.len() {
        return Err(t.error("trailing characters"));
    }
    Ok(t.out)
}

const MAX_DEPTH: usize = 128;

/// Transcodes one value.
///
/// Output stays within about twice the input: an object key is re-escaped as a JSON string
/// once, and object keys may not themselves hold object keys (each level of such nesting
/// would double the escaping, so a few hundred bytes could demand gigabytes). Raw control
/// characters in strings, which JSON forbids anyway, are refused here, before escaping would
/// turn them into six bytes each.
struct Transcoder<'a> {
    src: &'a [u8],
    pos: usize,
    out: String,
    /// Whether this transcoder reads an object key.
    in_key: bool,
}

impl<'a> Transcoder<'a> {
    fn error(&self, what: &str) -> BodyError {
        BodyError::Malformed(format!("{what} at byte {}", self.pos))
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn value(&mut self, depth: usize) -> Result<(), BodyError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.skip_ws();
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => {
                let s = self.raw_string()?;
                self.out.push_str(s);
                Ok(())
            }
            Some(_) => {
                let token = self.bare_token();
                if token.is_empty() {
                    return Err(self.error("unexpected character"));
                }
                self.out.push_str(token);
                Ok(())
            }
            None => Err(self.error("unexpected end")),
        }
    }

    /// A string literal including its quotes, copied verbatim.
    fn raw_string(&mut self) -> Result<&'a str, BodyError> {
        let start = self.pos;
        self.pos += 1;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                b'\\' => self.pos += 1,
                0..=0x1F => return Err(self.error("control character in a string")),
                b'"' => return self.text(start..self.pos).ok_or(BodyError::Utf8),
                _ => {}
            }
        }
        Err(self.error("unterminated string"))
    }

    /// A number, literal or unquoted identifier.
    fn bare_token(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.' | b'_') {
                self.pos += 1;
            } else {
                break;
            }
        }
        // Only ASCII bytes were consumed.
        self.text(start..self.pos).unwrap_or_default()
    }

    /// The source's bytes in `range` as text.
    fn text(&self, range: std::ops::Range<usize>) -> Option<&'a str> {
        let src: &'a [u8] = self.src;
        std::str::from_utf8(src.get(range)?).ok()
    }

    fn array(&mut self, depth: usize) -> Result<(), BodyError> {
        self.pos += 1;
        self.out.push('[');
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.out.push(']');
            return Ok(());
        }
        loop {
            self.value(depth + 1)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.out.push(',');
                }
                Some(b']') => {
                    self.pos += 1;
                    self.out.push(']');
                    return Ok(());
                }
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<(), BodyError> {
        self.pos += 1;
        self.out.push('{');
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.out.push('}');
            return Ok(());
        }
        loop {
            self.key(depth)?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':'"));
            }
            self.pos += 1;
            self.out.push(':');
            self.value(depth + 1)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.out.push(',');
                    self.skip_ws();
                }
                Some(b'}') => {
                    self.pos += 1;
                    self.out.push('}');
                    return Ok(());
                }
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }

    fn key(&mut self, depth: usize) -> Result<(), BodyError> {
        match self.peek() {
            Some(b'"') => {
                let s = self.raw_string()?;
                self.out.push_str(s);
                Ok(())
            }
            Some(b'{') | Some(b'[') => {
                // An object key: transcode it on its own, then emit it as a JSON string.
                if self.in_key {
                    return Err(self.error("object key inside an object key"));
                }
                let mut inner = Transcoder {
                    src: self.src,
                    pos: self.pos,
                    out: String::new(),
                    in_key: true,
                };
                inner.value(depth + 1)?;
                self.pos = inner.pos;
                let _ = write!(self.out, "{}", Value::String(inner.out));
                Ok(())
            }
            Some(_) => {
                let token = self.bare_token().to_owned();
                if token.is_empty() {
                    return Err(self.error("expected an object key"));
                }
                let _ = write!(self.out, "{}", Value::String(token));
                Ok(())
            }
            None => Err(self.error("unexpected end")),
        }
    }
}

/// A map with integer keys (`Map<Integer|Long, V>` in Java), written with unquoted keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IntKeyMap<V>(pub BTreeMap<i64, V>);

impl<V: Serialize> Serialize for IntKeyMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (format!("{INT_KEY}{k}"), v)))
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for IntKeyMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = BTreeMap::<String, V>::deserialize(deserializer)?;
        raw.into_iter()
            .map(|(k, v)| {
                k.trim().parse::<i64>().map(|k| (k, v)).map_err(|_| {
                    serde::de::Error::custom(format!("map key '{k}' is not an integer"))
                })
            })
            .collect::<Result<_, _>>()
            .map(IntKeyMap)
    }
}

impl<V> FromIterator<(i64, V)> for IntKeyMap<V> {
    fn from_iter<I: IntoIterator<Item = (i64, V)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// A map keyed by `MessageQueue`, written with object keys as Java's admin tools expect.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MqKeyMap<V>(pub BTreeMap<MessageQueue, V>);

impl<V: Serialize> Serialize for MqKeyMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut entries = Vec::with_capacity(self.0.len());
        for (mq, v) in &self.0 {
            let key = serde_json::to_string(mq).map_err(serde::ser::Error::custom)?;
            entries.push((format!("{OBJECT_KEY}{key}"), v));
        }
        serializer.collect_map(entries)
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for MqKeyMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = BTreeMap::<String, V>::deserialize(deserializer)?;
        raw.into_iter()
            .map(|(k, v)| {
                serde_json::from_str::<MessageQueue>(&k)
                    .map(|mq| (mq, v))
                    .map_err(|e| {
                        serde::de::Error::custom(format!("map key is not a MessageQueue: {e}"))
                    })
            })
            .collect::<Result<_, _>>()
            .map(MqKeyMap)
    }
}

impl<V> FromIterator<(MessageQueue, V)> for MqKeyMap<V> {
    fn from_iter<I: IntoIterator<Item = (MessageQueue, V)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Sample {
        #[serde(rename = "offsetTable")]
        offset_table: IntKeyMap<i64>,
        name: String,
    }

    #[test]
    fn writes_unquoted_integer_keys_alphabetically() {
        let s = Sample {
            offset_table: [(1, 10), (2, 15)].into_iter().collect(),
            name: "x".into(),
        };
        assert_eq!(
            String::from_utf8(encode(&s)).expect("utf8"),
            r#"{"name":"x","offsetTable":{1:10,2:15}}"#
        );
        assert_eq!(
            String::from_utf8(encode_standard(&s)).expect("utf8"),
            r#"{"name":"x","offsetTable":{"1":10,"2":15}}"#
        );
        let back: Sample = decode(&encode(&s)).expect("decodes");
        assert_eq!(back, s);
    }

    #[test]
    fn object_keys_round_trip() {
        let mq = MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: 0,
        };
        let map: MqKeyMap<i64> = [(mq.clone(), 123)].into_iter().collect();
        let text = String::from_utf8(encode(&map)).expect("utf8");
        assert_eq!(text, r#"{{"brokerName":"b","queueId":0,"topic":"T"}:123}"#);
        let back: MqKeyMap<i64> = decode(text.as_bytes()).expect("decodes");
        assert_eq!(back.0.get(&mq), Some(&123));
    }

    #[test]
    fn pretty_uses_tabs() {
        let s = Sample {
            offset_table: [(3, 7)].into_iter().collect(),
            name: "n".into(),
        };
        assert_eq!(
            encode_with(&s, Style::FastjsonPretty),
            "{\n\t\"name\":\"n\",\n\t\"offsetTable\":{\n\t\t3:7\n\t}\n}"
        );
    }

    /// Each level of object keys nested in object keys doubled the escaping: 40 levels
    /// (about 300 bytes) asked for terabytes before this was refused.
    #[test]
    fn nested_object_keys_are_refused() {
        let mut text = String::from(r#"{"a":1}"#);
        for _ in 0..40 {
            text = format!("{{{text}:1}}");
        }
        let err = to_standard(&text).expect_err("refused");
        assert!(err.to_string().contains("object key inside"), "{err}");
        // One level, as fastjson writes MessageQueue keys, is fine; so are object values.
        assert_eq!(
            to_standard(r#"{{"a":{"b":[1]}}:{"c":{"d":2}}}"#).expect("ok"),
            r#"{"{\"a\":{\"b\":[1]}}":{"c":{"d":2}}}"#
        );
    }

    #[test]
    fn raw_control_characters_in_strings_are_refused() {
        assert!(to_standard("{\"a\u{1}\":1}").is_err());
        assert!(to_standard("{{\"a\":\"\u{1f}\"}:1}").is_err());
        assert!(
            to_standard(r#"{"a\u0001":"\t"}"#).is_ok(),
            "escaped ones are fine"
        );
    }

    /// A client's map key that starts like an internal marker used to be written bare,
    /// so it could inject fields into the document.
    #[test]
    fn keys_that_look_like_markers_cannot_inject() {
        let mut map = BTreeMap::new();
        map.insert(format!("{INT_KEY}1,\"injected\":2"), 1);
        map.insert(format!("{OBJECT_KEY}{{}}:3,\"x\""), 2);
        map.insert(format!("{INT_KEY}x"), 3);
        for text in [encode(&map), encode_standard(&map)] {
            let back: BTreeMap<String, i32> = decode(&text).expect("decodes");
            assert_eq!(back, map, "{}", String::from_utf8_lossy(&text));
        }
    }

    #[test]
    fn transcoder_rejects_garbage() {
        for bad in ["{", "{1:}", "[1,", "{\"a\" 1}", "\"abc", "{}}", "{:1}"] {
            assert!(to_standard(bad).is_err(), "{bad}");
        }
        assert_eq!(
            to_standard(" { 0 : \"a\" , \"k\":[1, 2] } ").expect("ok"),
            r#"{"0":"a","k":[1,2]}"#
        );
    }

    #[test]
    fn a_repeated_key_takes_its_last_value() {
        use crate::body::DataVersion;
        let body = br#"{"counter":1,"timestamp":5,"counter":7}"#;
        let version: DataVersion = decode(body).expect("decodes");
        assert_eq!((version.counter, version.timestamp), (7, 5));
    }
}
