//! One typed struct per request (and response) header, converted from and to `extFields` in
//! exactly one place: the [`command_header!`] macro below.
//!
//! Decoding is lenient as real clients need (numbers may arrive as JSON numbers, booleans as
//! `"true"`, `"1"` or `true`), and a missing required field is a [`HeaderError::Missing`]
//! naming the wire key.

mod acl;
mod admin;
mod auth;
mod consumer;
mod controller;
mod namesrv;
mod pop;
mod producer;
mod query;

pub use acl::*;
pub use admin::*;
pub use auth::*;
pub use consumer::*;
pub use controller::*;
pub use namesrv::*;
pub use pop::*;
pub use producer::*;
pub use query::*;

use super::error::HeaderError;
use super::ext_fields::ExtFields;

/// A typed command header.
pub trait CommandHeader: Sized {
    /// Reads the header from a command's `extFields`.
    fn from_ext_fields(fields: &ExtFields) -> Result<Self, HeaderError>;
    /// Writes the header as `extFields` (strings only, absent optionals omitted).
    fn to_ext_fields(&self) -> ExtFields;
}

/// A value that can travel as one `extFields` entry.
pub trait HeaderValue: Sized {
    fn parse_field(raw: &str) -> Option<Self>;
    fn render(&self) -> String;
    /// Appends the rendered value to `out` (without a `String` of its own).
    fn render_into(&self, out: &mut String) {
        out.push_str(&self.render());
    }
}

impl HeaderValue for String {
    fn parse_field(raw: &str) -> Option<Self> {
        Some(raw.to_owned())
    }
    fn render(&self) -> String {
        self.clone()
    }
    fn render_into(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl HeaderValue for i32 {
    fn parse_field(raw: &str) -> Option<Self> {
        raw.trim().parse().ok()
    }
    fn render(&self) -> String {
        itoa::Buffer::new().format(*self).to_owned()
    }
    fn render_into(&self, out: &mut String) {
        // itoa: `write!` goes through the formatting machinery, a visible cost per header.
        out.push_str(itoa::Buffer::new().format(*self));
    }
}

impl HeaderValue for i64 {
    fn parse_field(raw: &str) -> Option<Self> {
        raw.trim().parse().ok()
    }
    fn render(&self) -> String {
        itoa::Buffer::new().format(*self).to_owned()
    }
    fn render_into(&self, out: &mut String) {
        // itoa: `write!` goes through the formatting machinery, a visible cost per header.
        out.push_str(itoa::Buffer::new().format(*self));
    }
}

impl HeaderValue for bool {
    /// Java's `Boolean.parseBoolean` plus `"1"`, which the C++ SDK sends for true.
    fn parse_field(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        Some(raw.eq_ignore_ascii_case("true") || raw == "1")
    }
    fn render(&self) -> String {
        self.to_string()
    }
    fn render_into(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

/// Reads a required field from its raw value (`None` when the request lacks it).
pub fn read_required<T: HeaderValue>(
    raw: Option<&str>,
    key: &'static str,
) -> Result<T, HeaderError> {
    let raw = raw.ok_or(HeaderError::Missing(key))?;
    T::parse_field(raw).ok_or_else(|| HeaderError::Invalid {
        field: key,
        value: raw.to_owned(),
    })
}

/// Reads an optional field; an empty value counts as absent (the C++ SDK sends `""`).
pub fn read_optional<T: HeaderValue>(
    raw: Option<&str>,
    key: &'static str,
) -> Result<Option<T>, HeaderError> {
    match raw.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(raw) => T::parse_field(raw)
            .map(Some)
            .ok_or_else(|| HeaderError::Invalid {
                field: key,
                value: raw.to_owned(),
            }),
    }
}

macro_rules! header_field_type {
    (required, $ty:ty) => { $ty };
    (optional, $ty:ty) => { Option<$ty> };
}

macro_rules! header_read {
    (required, $raw:expr, $key:literal) => {
        $crate::headers::read_required($raw, $key)?
    };
    (optional, $raw:expr, $key:literal) => {
        $crate::headers::read_optional($raw, $key)?
    };
}

macro_rules! header_write {
    (required, $out:expr, $key:literal, $value:expr) => {
        $out.insert_with($key, |text| {
            $crate::headers::HeaderValue::render_into($value, text)
        });
    };
    (optional, $out:expr, $key:literal, $value:expr) => {
        if let Some(v) = $value {
            $out.insert_with($key, |text| {
                $crate::headers::HeaderValue::render_into(v, text)
            });
        }
    };
}

/// Declares a header struct and its one conversion from and to `extFields`.
macro_rules! command_header {
    ($(#[$meta:meta])* pub struct $name:ident {
        $($(#[$fmeta:meta])* $kind:ident $field:ident: $ty:ty = $key:literal),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $crate::headers::header_field_type!($kind, $ty)),*
        }

        impl $crate::headers::CommandHeader for $name {
            // One pass over the fields, each matched against the header's keys: a lookup
            // per key (a binary search each) was a twentieth of a send's broker CPU.
            #[allow(unused_variables, unused_mut)]
            fn from_ext_fields(
                fields: &$crate::ExtFields,
            ) -> Result<Self, $crate::HeaderError> {
                $(let mut $field: Option<&str> = None;)*
                for (key, value) in fields.iter() {
                    match key {
                        $($key => $field = Some(value),)*
                        _ => {}
                    }
                }
                Ok(Self { $($field: $crate::headers::header_read!($kind, $field, $key)),* })
            }

            #[allow(unused_mut)]
            fn to_ext_fields(&self) -> $crate::ExtFields {
                const FIELDS: usize = [$($key),*].len();
                let mut out = $crate::ExtFields::with_capacity(FIELDS, FIELDS * 24);
                $($crate::headers::header_write!($kind, out, $key, &self.$field);)*
                out
            }
        }
    };
}

pub(crate) use {command_header, header_field_type, header_read, header_write};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_invalid_fields_are_named() {
        let fields: ExtFields = [("consumerGroup", "g"), ("topic", "T")]
            .into_iter()
            .collect();
        let err = QueryConsumerOffsetRequestHeader::from_ext_fields(&fields).unwrap_err();
        assert_eq!(err, HeaderError::Missing("queueId"));
        assert_eq!(
            err.to_string(),
            "the request header misses required field 'queueId'"
        );
        let fields: ExtFields = [("consumerGroup", "g"), ("topic", "T"), ("queueId", "x")]
            .into_iter()
            .collect();
        let err = QueryConsumerOffsetRequestHeader::from_ext_fields(&fields).unwrap_err();
        assert!(matches!(
            err,
            HeaderError::Invalid {
                field: "queueId",
                ..
            }
        ));
    }

    #[test]
    fn booleans_are_lenient() {
        assert_eq!(bool::parse_field("TRUE"), Some(true));
        assert_eq!(bool::parse_field("1"), Some(true));
        assert_eq!(bool::parse_field("0"), Some(false));
        assert_eq!(bool::parse_field("yes"), Some(false));
    }

    #[test]
    fn round_trip_omits_absent_optionals() {
        let header = UnregisterClientRequestHeader {
            client_id: "1.2.3.4@9".into(),
            producer_group: Some("pg".into()),
            consumer_group: None,
        };
        let fields = header.to_ext_fields();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields.get("clientID"), Some("1.2.3.4@9"));
        assert_eq!(
            UnregisterClientRequestHeader::from_ext_fields(&fields),
            Ok(header)
        );
    }

    #[test]
    fn empty_optional_is_absent() {
        let fields: ExtFields = [
            ("clientID", "c"),
            ("producerGroup", ""),
            ("consumerGroup", "g"),
        ]
        .into_iter()
        .collect();
        let h = UnregisterClientRequestHeader::from_ext_fields(&fields).expect("ok");
        assert_eq!(h.producer_group, None);
        assert_eq!(h.consumer_group.as_deref(), Some("g"));
    }
}
