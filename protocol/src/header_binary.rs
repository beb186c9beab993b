//! ROCKETMQ binary header codec (serialize type 1, protocol.md 1.5).
//!
//! Layout: code (i16), language (u8), version (i16), opaque (i32), flag (i32),
//! remark length (i32) + remark, extFields length (i32) + repeated
//! key length (i16) + key + value length (i32) + value. All big-endian.

use super::command::{RemotingCommand, SerializeType};
use super::error::FrameError;
use super::ext_fields::ExtFields;
use super::language::LanguageCode;
use super::reader::ByteReader;

const FIXED_LEN: usize = 21;

/// The header's fields, each short read named for the error.
struct Reader<'a>(ByteReader<'a>);

impl<'a> Reader<'a> {
    fn i16(&mut self, what: &'static str) -> Result<i16, FrameError> {
        self.0.i16().map_err(|_| FrameError::Binary(what))
    }

    fn i32(&mut self, what: &'static str) -> Result<i32, FrameError> {
        self.0.i32().map_err(|_| FrameError::Binary(what))
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, FrameError> {
        self.0.u8().map_err(|_| FrameError::Binary(what))
    }

    fn len(&mut self, len: i64, what: &'static str) -> Result<&'a [u8], FrameError> {
        let n = usize::try_from(len).map_err(|_| FrameError::Binary(what))?;
        self.0.take(n).map_err(|_| FrameError::Binary(what))
    }

    fn string(&mut self, len: i64, what: &'static str) -> Result<String, FrameError> {
        self.text(len, what).map(str::to_owned)
    }

    /// UTF-8 text borrowed from the header.
    fn text(&mut self, len: i64, what: &'static str) -> Result<&'a str, FrameError> {
        let raw = self.len(len, what)?;
        std::str::from_utf8(raw).map_err(|_| FrameError::Utf8)
    }
}

/// Decodes a binary header; the body is filled in by the frame decoder.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, FrameError> {
    if header.len() < FIXED_LEN {
        return Err(FrameError::Binary("header shorter than its fixed part"));
    }
    let mut r = Reader(ByteReader::new(header));
    let code = i32::from(r.i16("code")?);
    let language = LanguageCode::from_byte(r.u8("language")?);
    let version = i32::from(r.i16("version")?);
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark_len = r.i32("remark length")?;
    let remark = match remark_len {
        0 => None,
        n => Some(r.string(i64::from(n), "remark overflows the header")?),
    };
    let ext_len = r.i32("extFields length")?;
    let ext_area = r.len(i64::from(ext_len), "extFields overflow the header")?;
    let ext_fields = decode_ext_fields(ext_area)?;
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body: bytes::Bytes::new(),
        body_parts: Vec::new(),
        serialize_type: SerializeType::RocketMq,
    })
}

fn decode_ext_fields(area: &[u8]) -> Result<ExtFields, FrameError> {
    let mut r = Reader(ByteReader::new(area));
    // Every field takes at least 8 bytes (two lengths and a byte each of key and value).
    let mut fields = ExtFields::with_capacity((area.len() / 8).min(32), area.len());
    while r.0.remaining() > 0 {
        let key_len = r.i16("extFields key length")?;
        let key = r.text(i64::from(key_len), "extFields key overflows")?;
        let value_len = r.i32("extFields value length")?;
        let value = r.text(i64::from(value_len), "extFields value overflows")?;
        // Java decodes zero-length keys and values to null.
        if !key.is_empty() && !value.is_empty() {
            fields.push_arrived(key, value);
        }
    }
    // Of a repeated key the last value stays, as in Java's HashMap.
    fields.sort_arrived(false);
    Ok(fields)
}

/// Appends the binary header of `cmd` to `out`.
pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) {
    // Codes above i16 are 5.x POP codes that never travel in this header (protocol.md 1.5).
    out.extend_from_slice(&(cmd.code as i16).to_be_bytes());
    out.push(cmd.language.byte());
    out.extend_from_slice(&(cmd.version as i16).to_be_bytes());
    out.extend_from_slice(&cmd.opaque.to_be_bytes());
    out.extend_from_slice(&cmd.flag.to_be_bytes());
    let remark = cmd.remark.as_deref().unwrap_or("").as_bytes();
    out.extend_from_slice(&(remark.len() as i32).to_be_bytes());
    out.extend_from_slice(remark);
    let len_pos = out.len();
    out.extend_from_slice(&[0; 4]);
    for (key, value) in cmd.ext_fields.iter() {
        out.extend_from_slice(&(key.len() as i16).to_be_bytes());
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&(value.len() as i32).to_be_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    let ext_len = (out.len() - len_pos - 4) as i32;
    if let Some(slot) = out.get_mut(len_pos..len_pos + 4) {
        slot.copy_from_slice(&ext_len.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(out: &mut Vec<u8>, key: &str, value: &str) {
        out.extend_from_slice(&(key.len() as i16).to_be_bytes());
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&(value.len() as i32).to_be_bytes());
        out.extend_from_slice(value.as_bytes());
    }

    #[test]
    fn round_trips_and_reads_fields_as_java_does() {
        let fields: ExtFields = [("b", "T"), ("a", "gröup"), ("queueId", "3")]
            .into_iter()
            .collect();
        let mut cmd = RemotingCommand::request_code(310, fields);
        cmd.opaque = 77;
        cmd.remark = Some("hé".into());
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        let mut decoded = decode(&out).expect("decodes");
        decoded.serialize_type = cmd.serialize_type;
        assert_eq!(decoded, cmd);

        // Fields in any order; of a repeated key the last value stays; an empty key or
        // value is dropped (Java reads both as null).
        let mut area = Vec::new();
        field(&mut area, "z", "1");
        field(&mut area, "a", "first");
        field(&mut area, "", "no key");
        field(&mut area, "empty", "");
        field(&mut area, "a", "last");
        let mut h = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        h.extend_from_slice(&(area.len() as i32).to_be_bytes());
        h.extend_from_slice(&area);
        let decoded = decode(&h).expect("decodes");
        assert_eq!(
            decoded.ext_fields.iter().collect::<Vec<_>>(),
            vec![("a", "last"), ("z", "1")]
        );
        let mut bad = h.clone();
        let at = bad.len() - 1;
        bad[at] = 0xff;
        assert_eq!(decode(&bad), Err(FrameError::Utf8));
    }

    #[test]
    fn rejects_overflowing_lengths() {
        let mut h = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        h.extend_from_slice(&100i32.to_be_bytes()); // remark longer than the header
        h.extend_from_slice(&[0; 4]);
        assert!(decode(&h).is_err());
        assert!(decode(&h[..10]).is_err());
        let mut neg = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        neg.extend_from_slice(&(-5i32).to_be_bytes());
        neg.extend_from_slice(&[0; 4]);
        assert!(decode(&neg).is_err());
    }
}
