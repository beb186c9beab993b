//! Java `Properties` text and typed configuration structs with RocketMQ's key names.

use std::collections::BTreeMap;
use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    #[error("config key '{key}' has an invalid value '{value}' (expected {expected})")]
    InvalidValue {
        key: String,
        value: String,
        expected: &'static str,
    },
    #[error("config key '{key}': {reason}")]
    Rejected { key: String, reason: String },
    #[error("cannot read config file {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("config body: {0}")]
    Body(String),
}

/// Parses Java `Properties` text: `key=value`, `key: value` or `key value` lines, `#`/`!`
/// comments, backslash line continuations and escapes. Values are trimmed as RocketMQ does.
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut logical = String::new();
    for raw_line in text.lines() {
        let line = raw_line.trim_start();
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        // An odd number of trailing backslashes continues the line.
        let trailing = line.chars().rev().take_while(|c| *c == '\\').count();
        if trailing % 2 == 1 {
            logical.push_str(line.strip_suffix('\\').unwrap_or(line));
            continue;
        }
        logical.push_str(line);
        if let Some((key, value)) = split_key_value(&logical) {
            out.insert(unescape(&key), unescape(value.trim()));
        }
        logical.clear();
    }
    if !logical.is_empty() {
        if let Some((key, value)) = split_key_value(&logical) {
            out.insert(unescape(&key), unescape(value.trim()));
        }
    }
    out
}

fn split_key_value(line: &str) -> Option<(String, &str)> {
    let mut key = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                key.push(c);
                if let Some(next) = chars.next() {
                    key.push(next);
                }
            }
            '=' | ':' => return Some((key.trim().to_owned(), chars.as_str())),
            c if c.is_whitespace() => {
                let rest = chars.as_str().trim_start();
                let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest);
                return Some((key, rest));
            }
            c => key.push(c),
        }
    }
    (!key.is_empty()).then_some((key, ""))
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => out.push_str(&hex),
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The `key=value` changes of an UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG body: UTF-8
/// properties text holding at least one pair.
pub fn parse_config_changes(body: &[u8]) -> Result<BTreeMap<String, String>, ConfigError> {
    let text = std::str::from_utf8(body).map_err(|e| ConfigError::Body(e.to_string()))?;
    let changes = parse_properties(text);
    if changes.is_empty() {
        return Err(ConfigError::Body("it holds no key=value pair".into()));
    }
    Ok(changes)
}

/// Writes `key=value` lines (what GET_BROKER_CONFIG and `-p` print).
pub fn format_properties<'a>(entries: impl IntoIterator<Item = (&'a str, String)>) -> String {
    let mut out = String::new();
    for (key, value) in entries {
        out.push_str(key);
        out.push('=');
        out.push_str(&value);
        out.push('\n');
    }
    out
}

/// Writes `key=value` lines, each after its documentation as `#` comments (what `-p`
/// prints: still a valid properties file).
pub fn format_documented<'a>(
    entries: impl IntoIterator<Item = (&'a str, String)>,
    docs: &[(&str, &[&str])],
) -> String {
    let mut out = String::new();
    for (key, value) in entries {
        if !out.is_empty() {
            out.push('\n');
        }
        let lines = docs
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(&[][..], |(_, d)| *d);
        for line in lines {
            out.push('#');
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(key);
        out.push('=');
        out.push_str(&value);
        out.push('\n');
    }
    out
}

/// Reads a properties file.
pub fn read_properties_file(
    path: &std::path::Path,
) -> Result<BTreeMap<String, String>, ConfigError> {
    std::fs::read_to_string(path)
        .map(|text| parse_properties(&text))
        .map_err(|e| ConfigError::Read {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
}

/// A value a configuration key can hold.
pub trait ConfigValue: Sized {
    const EXPECTED: &'static str;
    fn parse_value(text: &str) -> Option<Self>;
    fn render(&self) -> String;
}

impl ConfigValue for String {
    const EXPECTED: &'static str = "text";
    fn parse_value(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
    fn render(&self) -> String {
        self.clone()
    }
}

impl ConfigValue for PathBuf {
    const EXPECTED: &'static str = "a path";
    fn parse_value(text: &str) -> Option<Self> {
        Some(PathBuf::from(text))
    }
    fn render(&self) -> String {
        self.display().to_string()
    }
}

impl ConfigValue for bool {
    const EXPECTED: &'static str = "true or false";
    /// Java's `Boolean.parseBoolean`: case-insensitive "true", anything else false.
    fn parse_value(text: &str) -> Option<Self> {
        Some(text.trim().eq_ignore_ascii_case("true"))
    }
    fn render(&self) -> String {
        self.to_string()
    }
}

macro_rules! numeric_config_value {
    ($($ty:ty),*) => {$(
        impl ConfigValue for $ty {
            const EXPECTED: &'static str = "a number";
            fn parse_value(text: &str) -> Option<Self> {
                text.trim().parse().ok()
            }
            fn render(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

numeric_config_value!(i32, i64, u16, u32, u64, usize, f64);

impl<T: ConfigValue> ConfigValue for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn parse_value(text: &str) -> Option<Self> {
        if text.trim().is_empty() {
            Some(None)
        } else {
            T::parse_value(text).map(Some)
        }
    }
    fn render(&self) -> String {
        self.as_ref().map(ConfigValue::render).unwrap_or_default()
    }
}

/// Parses one value for `key`, with a clear error.
pub fn parse_config_value<T: ConfigValue>(key: &str, value: &str) -> Result<T, ConfigError> {
    T::parse_value(value).ok_or_else(|| ConfigError::InvalidValue {
        key: key.to_owned(),
        value: value.to_owned(),
        expected: T::EXPECTED,
    })
}

/// Declares a configuration struct whose fields are set by RocketMQ key name.
///
/// Every field must carry a doc comment: it is the key's documentation, which `-p` prints.
/// Generates `Default`, `set(key, value) -> Result<bool>` (false for an unknown key),
/// `apply(&map)` (unknown keys ignored, as Java does), `entries()` for printing and `DOCS`.
#[macro_export]
macro_rules! properties_config {
    ($(#[$meta:meta])* pub struct $name:ident {
        $($(#[doc = $doc:literal])+ $field:ident: $ty:ty = $key:literal => $default:expr),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $($(#[doc = $doc])+ pub $field: $ty),*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $($field: $default),* }
            }
        }

        impl $name {
            /// Every key this struct knows, in declaration order.
            pub const KEYS: &'static [&'static str] = &[$($key),*];

            /// Each key's documentation (its doc comment lines, each starting with a space).
            pub const DOCS: &'static [(&'static str, &'static [&'static str])] =
                &[$(($key, &[$($doc),+])),*];

            /// Sets one key; `Ok(false)` when the key is not one of ours.
            pub fn set(&mut self, key: &str, value: &str) -> Result<bool, $crate::ConfigError> {
                match key {
                    $($key => {
                        self.$field = $crate::parse_config_value(key, value)?;
                        Ok(true)
                    })*
                    _ => Ok(false),
                }
            }

            /// Applies every known key of `props`; unknown keys are ignored.
            pub fn apply(
                &mut self,
                props: &std::collections::BTreeMap<String, String>,
            ) -> Result<(), $crate::ConfigError> {
                for (key, value) in props {
                    self.set(key, value)?;
                }
                Ok(())
            }

            /// `(key, value)` of every field, for `-p` and GET_*_CONFIG.
            pub fn entries(&self) -> Vec<(&'static str, String)> {
                vec![$(($key, $crate::ConfigValue::render(&self.$field))),*]
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_java_properties() {
        let text = "# comment\n! other\nbrokerClusterName = DefaultCluster\nbrokerName:broker-a\n  listenPort 10911\nmessageDelayLevel=1s 5s \\\n   10s\nempty=\npath=C\\:\\\\store\nuni=\\u0041\n";
        let p = parse_properties(text);
        assert_eq!(p["brokerClusterName"], "DefaultCluster");
        assert_eq!(p["brokerName"], "broker-a");
        assert_eq!(p["listenPort"], "10911");
        assert_eq!(p["messageDelayLevel"], "1s 5s 10s");
        assert_eq!(p["empty"], "");
        assert_eq!(p["path"], "C:\\store");
        assert_eq!(p["uni"], "A");
        assert_eq!(p.len(), 7);
    }

    properties_config! {
        pub struct Sample {
            /// Port.
            port: u16 = "listenPort" => 9876,
            /// Name,
            /// on two lines.
            name: String = "brokerName" => "b".to_owned(),
            /// Order.
            order: bool = "orderMessageEnable" => false,
        }
    }

    #[test]
    fn typed_config() {
        let mut s = Sample::default();
        let props = parse_properties("listenPort=1234\norderMessageEnable=TRUE\nunknownKey=1\n");
        s.apply(&props).expect("valid");
        assert_eq!(s.port, 1234);
        assert!(s.order);
        assert_eq!(s.set("nope", "x"), Ok(false));
        assert_eq!(
            Sample::KEYS,
            &["listenPort", "brokerName", "orderMessageEnable"]
        );
        let err = s.set("listenPort", "abc").unwrap_err();
        assert_eq!(
            err.to_string(),
            "config key 'listenPort' has an invalid value 'abc' (expected a number)"
        );
        assert_eq!(
            format_properties(s.entries()),
            "listenPort=1234\nbrokerName=b\norderMessageEnable=true\n"
        );
        assert_eq!(
            Sample::DOCS[1],
            ("brokerName", &[" Name,", " on two lines."][..])
        );
        assert_eq!(
            format_documented(s.entries(), Sample::DOCS),
            "# Port.\nlistenPort=1234\n\n# Name,\n# on two lines.\nbrokerName=b\n\n# Order.\norderMessageEnable=true\n"
        );
    }
}
