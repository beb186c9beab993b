//! REGISTER_BROKER body (protocol.md 3.6): fastjson JSON or Java's compressed binary form.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use super::topic::{TopicConfig, TopicConfigSerializeWrapper};
use super::DataVersion;
use crate::protocol::error::BodyError;
use crate::protocol::reader::ByteReader;

/// Largest uncompressed registration body accepted (a guard against zlib bombs).
const MAX_INFLATED: u64 = 64 * 1024 * 1024;

/// `RegisterBrokerBody`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterBrokerBody {
    #[serde(default)]
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
    #[serde(default)]
    pub filter_server_list: Vec<String>,
}

impl RegisterBrokerBody {
    /// Java's compressed form: zlib over length-prefixed sections.
    pub fn encode_compressed(&self) -> Vec<u8> {
        let mut raw = Vec::new();
        let version = serde_json::to_vec(&self.topic_config_serialize_wrapper.data_version)
            .unwrap_or_else(|_| b"{}".to_vec());
        put_section(&mut raw, &version);
        let table = &self.topic_config_serialize_wrapper.topic_config_table;
        raw.extend_from_slice(&(table.len() as i32).to_be_bytes());
        for config in table.values() {
            put_section(&mut raw, config.encode_compact().as_bytes());
        }
        let filters =
            serde_json::to_vec(&self.filter_server_list).unwrap_or_else(|_| b"[]".to_vec());
        put_section(&mut raw, &filters);
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing into a Vec cannot fail.
        let _ = encoder.write_all(&raw);
        encoder.finish().unwrap_or_default()
    }

    /// Decodes the compressed form (4.x and 5.x; 5.x's trailing mapping section is ignored).
    pub fn decode_compressed(bytes: &[u8]) -> Result<Self, BodyError> {
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(bytes)
            .take(MAX_INFLATED)
            .read_to_end(&mut raw)
            .map_err(|e| BodyError::Malformed(format!("registration body is not zlib: {e}")))?;
        let mut cursor = Cursor(ByteReader::new(&raw));
        let data_version: DataVersion = serde_json::from_slice(cursor.section()?)?;
        let count = cursor.int()?;
        let mut wrapper = TopicConfigSerializeWrapper {
            data_version,
            ..Default::default()
        };
        for _ in 0..count {
            let text = std::str::from_utf8(cursor.section()?).map_err(|_| BodyError::Utf8)?;
            let config = TopicConfig::decode_compact(text)
                .ok_or_else(|| BodyError::Malformed(format!("bad topic config '{text}'")))?;
            wrapper
                .topic_config_table
                .insert(config.topic_name.clone(), config);
        }
        let filter_server_list = if cursor.remaining() >= 4 {
            serde_json::from_slice(cursor.section()?)?
        } else {
            Vec::new()
        };
        Ok(Self {
            topic_config_serialize_wrapper: wrapper,
            filter_server_list,
        })
    }
}

fn put_section(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// The compressed body's sections: `int length + bytes`.
struct Cursor<'a>(ByteReader<'a>);

impl<'a> Cursor<'a> {
    fn remaining(&self) -> usize {
        self.0.remaining()
    }

    fn int(&mut self) -> Result<i32, BodyError> {
        self.0
            .i32()
            .map_err(|_| BodyError::Malformed("registration body truncated".into()))
    }

    fn section(&mut self) -> Result<&'a [u8], BodyError> {
        let len = usize::try_from(self.int()?)
            .map_err(|_| BodyError::Malformed("negative section length".into()))?;
        self.0
            .take(len)
            .map_err(|_| BodyError::Malformed("registration section truncated".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_round_trip() {
        let mut body = RegisterBrokerBody::default();
        body.topic_config_serialize_wrapper.data_version = DataVersion::new(42);
        for name in ["TBW102", "TopicA"] {
            body.topic_config_serialize_wrapper
                .topic_config_table
                .insert(name.into(), TopicConfig::with_queues(name, 8, 8, 7));
        }
        let bytes = body.encode_compressed();
        assert_eq!(bytes[0], 0x78, "zlib header");
        assert_eq!(
            RegisterBrokerBody::decode_compressed(&bytes).expect("decodes"),
            body
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(RegisterBrokerBody::decode_compressed(b"not zlib").is_err());
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&[0, 0, 0, 9, b'{']).expect("vec");
        let truncated = e.finish().expect("vec");
        assert!(RegisterBrokerBody::decode_compressed(&truncated).is_err());
    }
}
