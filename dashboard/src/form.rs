//! Query strings and `application/x-www-form-urlencoded` bodies as a map of fields, with
//! typed getters that turn a missing or malformed field into [`ConsoleError::BadInput`].

use std::collections::BTreeMap;

use percent_encoding::percent_decode_str;
use stellmq_remoting::protocol::message::UtcTime;

use crate::error::ConsoleError;

/// Fields beyond this many are ignored.
const MAX_FIELDS: usize = 64;

/// The fields of a query string or form body (the last of repeated names wins).
#[derive(Debug, Default, Clone)]
pub struct Fields(BTreeMap<String, String>);

impl Fields {
    pub fn parse(text: &str) -> Self {
        let map = text
            .split('&')
            .filter(|pair| !pair.is_empty())
            .take(MAX_FIELDS)
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                (decode(name), decode(value))
            })
            .collect();
        Self(map)
    }

    /// The field's value, trimmed; `None` when missing or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// The field's value, untrimmed (message bodies); empty when missing.
    pub fn raw(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }

    pub fn required(&self, name: &str) -> Result<&str, ConsoleError> {
        self.get(name)
            .ok_or_else(|| ConsoleError::BadInput(format!("the field {name} is required")))
    }

    /// An integer field, `default` when missing.
    pub fn int(&self, name: &str, default: i64) -> Result<i64, ConsoleError> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| ConsoleError::BadInput(format!("{name} is not a number: {v}"))),
        }
    }

    /// A time field (see [`parse_time`]), `None` when missing.
    pub fn time(&self, name: &str) -> Result<Option<i64>, ConsoleError> {
        self.get(name).map(parse_time).transpose()
    }
}

/// `+` is a space, then percent-decoding; invalid UTF-8 is replaced, never an error.
fn decode(text: &str) -> String {
    let spaced = text.replace('+', " ");
    percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
}

/// A time as people type it, in UTC: epoch milliseconds, `now`, or
/// `yyyy-MM-dd HH:mm[:ss]` (also with `T`, as browsers' datetime-local inputs send it).
pub fn parse_time(text: &str) -> Result<i64, ConsoleError> {
    let bad = || {
        ConsoleError::BadInput(format!(
            "cannot read the time {text}: use yyyy-MM-dd HH:mm[:ss] (UTC) or epoch milliseconds"
        ))
    };
    let text = text.trim();
    if text == "now" {
        return Ok(stellmq_remoting::protocol::message::now_ms());
    }
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    let (date, time) = text.split_once(['T', ' ']).unwrap_or((text, "00:00"));
    let numbers =
        |s: &str, sep: char| -> Option<Vec<i64>> { s.split(sep).map(|n| n.parse().ok()).collect() };
    let d = numbers(date, '-').ok_or_else(bad)?;
    let t = numbers(time, ':').ok_or_else(bad)?;
    let (&[year, month, day], [hour, minute, rest @ ..]) = (d.as_slice(), t.as_slice()) else {
        return Err(bad());
    };
    let second = rest.first().copied().unwrap_or(0);
    let in_range = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(hour)
        && (0..60).contains(minute)
        && (0..60).contains(&second)
        && (1970..=9999).contains(&year);
    if !in_range {
        return Err(bad());
    }
    Ok(UtcTime {
        year,
        month,
        day,
        hour: *hour,
        minute: *minute,
        second,
        millis: 0,
    }
    .to_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_decode_plus_and_percent_and_survive_garbage() {
        let f = Fields::parse("name=a+b%26c&empty=&x=%ZZ%FF&&=v");
        assert_eq!(f.get("name"), Some("a b&c"));
        assert_eq!(f.get("empty"), None);
        assert_eq!(f.get("x"), Some("%ZZ\u{FFFD}"));
        assert!(f.required("missing").is_err());
        assert!(f.int("name", 0).is_err());
        assert_eq!(f.int("missing", 7).ok(), Some(7));
    }

    #[test]
    fn times_in_utc_from_forms() {
        assert_eq!(parse_time("1970-01-01T00:00").ok(), Some(0));
        assert_eq!(parse_time("1970-01-02 00:00:01").ok(), Some(86_401_000));
        assert_eq!(parse_time("12345").ok(), Some(12345));
        assert!(parse_time("2024-13-01 00:00").is_err());
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("2024-01-01 10").is_err());
    }
}
