//! REGISTER_BROKER body (protocol.md 3.6): fastjson JSON or Java's compressed binary form.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use super::topic::{TopicConfig, TopicConfigSerializeWrapper};
use super::DataVersion;
use crate::error::BodyError;

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

    /// Decodes the compressed form (4.x and 5.x; 5.x's trailing mapping section is ignored),
    /// inflating at most [`MAX_INFLATED`] bytes.
    pub fn decode_compressed(bytes: &[u8]) -> Result<Self, BodyError> {
        Self::decode_compressed_charged(bytes, MAX_INFLATED, |_| true)
    }

    /// Decodes the compressed form section by section, inflating at most `max_inflated`
    /// bytes and asking `charge` for each section's bytes before inflating them (`false`:
    /// refused with [`BodyError::OverBudget`]). Nothing but the sections being read is held
    /// inflated, so a body of zeros or of one repeated section costs no memory.
    pub fn decode_compressed_charged(
        bytes: &[u8],
        max_inflated: u64,
        charge: impl FnMut(usize) -> bool,
    ) -> Result<Self, BodyError> {
        let inflater = flate2::read::ZlibDecoder::new(bytes).take(max_inflated);
        let mut sections = Sections {
            inflater,
            charge,
            max_inflated,
        };
        let version = sections.next(MAX_VERSION_SECTION)?.ok_or_else(truncated)?;
        let data_version: DataVersion = serde_json::from_slice(&version)?;
        let count = sections.int()?.ok_or_else(truncated)?;
        let mut wrapper = TopicConfigSerializeWrapper {
            data_version,
            ..Default::default()
        };
        for _ in 0..count {
            // What a topic holds once parsed: its text twice (map key and name), the config
            // and the map's share.
            let line = sections
                .next_held(MAX_TOPIC_SECTION, |len| 2 * len + TOPIC_HELD_BYTES)?
                .ok_or_else(truncated)?;
            let text = std::str::from_utf8(&line).map_err(|_| BodyError::Utf8)?;
            let config = TopicConfig::decode_compact(text).ok_or_else(|| {
                let shown: String = text.chars().take(64).collect();
                BodyError::Malformed(format!("bad topic config '{}'", shown.escape_debug()))
            })?;
            wrapper
                .topic_config_table
                .insert(config.topic_name.clone(), config);
        }
        let filter_server_list = match sections.next(MAX_FILTER_SECTION)? {
            Some(list) => serde_json::from_slice(&list)?,
            None => Vec::new(),
        };
        Ok(Self {
            topic_config_serialize_wrapper: wrapper,
            filter_server_list,
        })
    }
}

/// Largest data-version section (a small JSON object).
const MAX_VERSION_SECTION: usize = 64 * 1024;
/// Largest topic section: a name of at most 255 characters, four numbers and 5.x's
/// attributes.
const MAX_TOPIC_SECTION: usize = 16 * 1024;
/// Heap a parsed topic holds beyond its text: the config and its share of the map.
const TOPIC_HELD_BYTES: usize = std::mem::size_of::<TopicConfig>() + 64;
/// Largest filter-server list (JSON addresses; filter servers are long gone).
const MAX_FILTER_SECTION: usize = 64 * 1024;

fn truncated() -> BodyError {
    BodyError::Malformed("registration body truncated".into())
}

fn put_section(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// The compressed body's sections (`int length + bytes`), inflated one at a time.
struct Sections<R, C> {
    inflater: std::io::Take<R>,
    charge: C,
    max_inflated: u64,
}

impl<R: Read, C: FnMut(usize) -> bool> Sections<R, C> {
    /// The next int; `None` at the end of the body.
    fn int(&mut self) -> Result<Option<i32>, BodyError> {
        let mut word = [0u8; 4];
        let mut got = 0;
        while let Some(rest) = word.get_mut(got..).filter(|rest| !rest.is_empty()) {
            match self.inflater.read(rest).map_err(not_zlib)? {
                0 if got == 0 => return Ok(None),
                0 => return Err(self.ended_early()),
                n => got += n,
            }
        }
        Ok(Some(i32::from_be_bytes(word)))
    }

    /// The next section of at most `max` bytes; `None` at the end of the body.
    fn next(&mut self, max: usize) -> Result<Option<Vec<u8>>, BodyError> {
        self.next_held(max, |len| len)
    }

    /// [`Self::next`], charging `held(len)` bytes for a section of `len` bytes.
    fn next_held(
        &mut self,
        max: usize,
        held: impl Fn(usize) -> usize,
    ) -> Result<Option<Vec<u8>>, BodyError> {
        let Some(len) = self.int()? else {
            return Ok(None);
        };
        let len = usize::try_from(len)
            .map_err(|_| BodyError::Malformed("negative section length".into()))?;
        if len > max {
            return Err(BodyError::Malformed(format!(
                "registration section of {len} bytes (at most {max})"
            )));
        }
        if !(self.charge)(held(len)) {
            return Err(BodyError::OverBudget(
                "registration bodies being inflated use the memory set aside for them".into(),
            ));
        }
        let mut section = vec![0u8; len];
        self.inflater
            .read_exact(&mut section)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => self.ended_early(),
                _ => not_zlib(e),
            })?;
        Ok(Some(section))
    }

    /// A body that stops inside a section: truncated, or past the inflate limit.
    fn ended_early(&self) -> BodyError {
        if self.inflater.limit() == 0 {
            BodyError::Malformed(format!(
                "registration body inflates past {} bytes",
                self.max_inflated
            ))
        } else {
            truncated()
        }
    }
}

fn not_zlib(e: std::io::Error) -> BodyError {
    BodyError::Malformed(format!("registration body is not zlib: {e}"))
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

    fn zlib(raw: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(raw).expect("vec");
        e.finish().expect("vec")
    }

    #[test]
    fn a_bomb_of_zeros_is_refused_without_inflating_it() {
        let bomb = zlib(&vec![0u8; 8 << 20]);
        let mut charged = 0;
        let refused = RegisterBrokerBody::decode_compressed_charged(&bomb, MAX_INFLATED, |n| {
            charged += n;
            true
        });
        assert!(refused.is_err());
        assert_eq!(charged, 0, "an empty data version is all it read");
    }

    #[test]
    fn sections_are_bounded_and_charged_before_they_are_inflated() {
        let mut huge = (1i32 << 30).to_be_bytes().to_vec();
        huge.extend_from_slice(&[b' '; 4096]);
        let refused = RegisterBrokerBody::decode_compressed(&zlib(&huge)).expect_err("refused");
        assert!(refused.to_string().contains("at most"), "{refused}");

        let body = RegisterBrokerBody::default().encode_compressed();
        let mut asked = Vec::new();
        let over = RegisterBrokerBody::decode_compressed_charged(&body, MAX_INFLATED, |n| {
            asked.push(n);
            false
        });
        assert!(matches!(over, Err(BodyError::OverBudget(_))), "{over:?}");
        assert_eq!(asked.len(), 1, "refused before the first section was read");
    }

    #[test]
    fn the_inflate_limit_holds() {
        let mut body = RegisterBrokerBody::default();
        for i in 0..100 {
            let name = format!("Topic{i}");
            body.topic_config_serialize_wrapper
                .topic_config_table
                .insert(name.clone(), TopicConfig::with_queues(&name, 8, 8, 6));
        }
        let bytes = body.encode_compressed();
        let whole = RegisterBrokerBody::decode_compressed_charged(&bytes, 1 << 20, |_| true);
        assert_eq!(whole.expect("fits"), body);
        let cut = RegisterBrokerBody::decode_compressed_charged(&bytes, 200, |_| true)
            .expect_err("past the limit");
        assert!(cut.to_string().contains("inflates past 200"), "{cut}");
    }
}
