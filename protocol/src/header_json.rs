//! JSON header codec (serialize type 0, protocol.md 1.3): lenient on input, strict on output.

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::command::{RemotingCommand, SerializeType};
use super::error::FrameError;
use super::ext_fields::{ExtFields, Lenient};
use super::language::LanguageCode;

/// The header as real clients send it: any scalar type for numbers, optional everything but
/// `code`, unknown keys ignored, and of a repeated key the last value (as fastjson reads it).
#[derive(Default)]
struct JsonHeaderIn {
    code: i32,
    language: Option<String>,
    version: i32,
    opaque: i32,
    flag: i32,
    remark: Option<String>,
    ext_fields: Option<ExtFields>,
}

/// The header's keys (read without allocating, as serde's derive reads them).
enum HeaderKey {
    Code,
    Language,
    Version,
    Opaque,
    Flag,
    Remark,
    ExtFields,
    Other,
}

impl<'de> Deserialize<'de> for HeaderKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = HeaderKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a header key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<HeaderKey, E> {
                Ok(match key {
                    "code" => HeaderKey::Code,
                    "language" => HeaderKey::Language,
                    "version" => HeaderKey::Version,
                    "opaque" => HeaderKey::Opaque,
                    "flag" => HeaderKey::Flag,
                    "remark" => HeaderKey::Remark,
                    "extFields" => HeaderKey::ExtFields,
                    _ => HeaderKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for JsonHeaderIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct HeaderVisitor;
        impl<'de> Visitor<'de> for HeaderVisitor {
            type Value = JsonHeaderIn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a remoting header object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonHeaderIn, A::Error> {
                let mut header = JsonHeaderIn::default();
                let mut code = None;
                while let Some(key) = map.next_key::<HeaderKey>()? {
                    match key {
                        HeaderKey::Code => code = Some(map.next_value::<LenientI32>()?.0),
                        HeaderKey::Language => header.language = map.next_value::<Lenient>()?.0,
                        HeaderKey::Version => header.version = map.next_value::<LenientI32>()?.0,
                        HeaderKey::Opaque => header.opaque = map.next_value::<LenientI32>()?.0,
                        HeaderKey::Flag => header.flag = map.next_value::<LenientI32>()?.0,
                        HeaderKey::Remark => header.remark = map.next_value::<Lenient>()?.0,
                        HeaderKey::ExtFields => header.ext_fields = map.next_value()?,
                        HeaderKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                header.code = code.ok_or_else(|| de::Error::missing_field("code"))?;
                Ok(header)
            }
        }
        d.deserialize_map(HeaderVisitor)
    }
}

/// Any JSON scalar read as a Java int (null as 0).
struct LenientI32(i32);

impl<'de> Deserialize<'de> for LenientI32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Some(text) = Lenient::deserialize(d)?.0 else {
            return Ok(Self(0));
        };
        let text = text.trim();
        // Java ints are 32-bit; opaques may have been written as unsigned by odd clients.
        text.parse::<i64>()
            .map(|v| Self(v as i32))
            .map_err(|_| de::Error::custom(format!("'{text}' is not an integer")))
    }
}

/// The header as StellMQ writes it: fastjson's alphabetical order, strings only in
/// `extFields`, `extFields` always present.
#[derive(Serialize)]
struct JsonHeaderOut<'a> {
    code: i32,
    #[serde(rename = "extFields")]
    ext_fields: &'a ExtFields,
    flag: i32,
    language: &'a str,
    opaque: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    remark: Option<&'a str>,
    #[serde(rename = "serializeTypeCurrentRPC")]
    serialize_type: &'static str,
    version: i32,
}

/// Decodes a JSON header; the body is filled in by the frame decoder.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, FrameError> {
    let parsed: JsonHeaderIn =
        serde_json::from_slice(header).map_err(|e| FrameError::Json(e.to_string()))?;
    Ok(RemotingCommand {
        code: parsed.code,
        language: parsed
            .language
            .as_deref()
            .map_or(LanguageCode::Java, LanguageCode::from_name),
        version: parsed.version,
        opaque: parsed.opaque,
        flag: parsed.flag,
        remark: parsed.remark,
        ext_fields: parsed.ext_fields.unwrap_or_default(),
        body: bytes::Bytes::new(),
        body_parts: Vec::new(),
        serialize_type: SerializeType::Json,
    })
}

/// Appends the JSON header of `cmd` to `out`.
pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) {
    let header = JsonHeaderOut {
        code: cmd.code,
        ext_fields: &cmd.ext_fields,
        flag: cmd.flag,
        language: cmd.language.name(),
        opaque: cmd.opaque,
        remark: cmd.remark.as_deref(),
        serialize_type: "JSON",
        version: cmd.version,
    };
    // Serializing plain strings and integers into a Vec cannot fail.
    if let Err(e) = serde_json::to_writer(out, &header) {
        tracing::error!(error = %e, "JSON header serialization failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_cpp_sends() {
        let json = br#"{"code":310,"language":"CPP","version":333,"opaque":5,"flag":0,"remark":"","extFields":{"a":"g","b":"T","e":2,"f":0,"k":false,"Signature":"","AccessKey":"","OnsChannel":""}}"#;
        let cmd = decode(json).expect("decodes");
        assert_eq!(cmd.code, 310);
        assert_eq!(cmd.language, LanguageCode::Cpp);
        assert_eq!(cmd.ext_fields.get("e"), Some("2"));
        assert_eq!(cmd.ext_fields.get("k"), Some("false"));
        assert_eq!(cmd.remark.as_deref(), Some(""));
    }

    #[test]
    fn accepts_minimal_and_unknown_keys() {
        let cmd = decode(br#"{"code":34,"opaque":1,"whatever":[1,2],"language":"KLINGON"}"#)
            .expect("decodes");
        assert_eq!(cmd.code, 34);
        assert_eq!(cmd.flag, 0);
        assert!(cmd.remark.is_none());
        assert!(cmd.ext_fields.is_empty());
        assert_eq!(cmd.language.name(), "KLINGON");
    }

    #[test]
    fn a_repeated_key_takes_its_last_value() {
        let cmd = decode(br#"{"code":1,"opaque":2,"code":34,"opaque":"9","remark":"a","remark":null,"extFields":{"k":"x"},"extFields":{"k":"y"}}"#)
            .expect("decodes");
        assert_eq!(cmd.code, 34);
        assert_eq!(cmd.opaque, 9);
        assert!(cmd.remark.is_none());
        assert_eq!(cmd.ext_fields.get("k"), Some("y"));
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode(b"{not json").is_err());
        assert!(decode(br#"{"opaque":1}"#).is_err(), "code is required");
        assert!(decode(br#"{"code":"ten"}"#).is_err());
    }

    #[test]
    fn writes_strict_alphabetical_json() {
        let mut cmd = RemotingCommand::request_code(11, ExtFields::new());
        cmd.opaque = 9;
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        assert_eq!(
            std::str::from_utf8(&out).expect("utf8"),
            r#"{"code":11,"extFields":{},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":401}"#
        );
    }
}
