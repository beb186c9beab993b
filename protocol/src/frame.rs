//! Frame codec (protocol.md 1.2): `length | serializeType<<24 | headerLength | header | body`.
//!
//! `length` counts everything after itself. A frame whose total size (including the length
//! word) exceeds the configured maximum, or whose header does not decode, is an error; the
//! transport closes that connection and only that one.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::command::{RemotingCommand, SerializeType};
use super::error::FrameError;
use super::{header_binary, header_json};

/// RocketMQ's default `com.rocketmq.remoting.frameMaxLength`.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 16 * 1024 * 1024;

/// Decodes one frame from the front of `buf`.
///
/// Returns `Ok(None)` while the frame is incomplete (a normal state, not an error); on success
/// the frame's bytes are removed from `buf` and the body shares them without copying.
pub fn decode(
    buf: &mut BytesMut,
    max_frame_size: usize,
) -> Result<Option<RemotingCommand>, FrameError> {
    let Some(length_word) = buf.first_chunk::<4>() else {
        return Ok(None);
    };
    let length = i64::from(i32::from_be_bytes(*length_word));
    if length < 4 {
        return Err(FrameError::LengthTooSmall(length));
    }
    let total = length as usize + 4;
    if total > max_frame_size {
        return Err(FrameError::TooLarge {
            length: total,
            max: max_frame_size,
        });
    }
    if buf.len() < total {
        // Wait for more; the caller grows the buffer as bytes arrive, never from the
        // (untrusted) length alone.
        return Ok(None);
    }
    let mut frame = buf.split_to(total).freeze();
    frame.advance(4);
    decode_frame_content(frame).map(Some)
}

/// Decodes a frame without its leading length word.
fn decode_frame_content(mut frame: Bytes) -> Result<RemotingCommand, FrameError> {
    // The length word was checked to be at least 4: the header-length word is there.
    let word = frame
        .first_chunk::<4>()
        .map(|w| u32::from_be_bytes(*w))
        .ok_or(FrameError::LengthTooSmall(frame.len() as i64))?;
    frame.advance(4);
    let type_byte = (word >> 24) as u8;
    let header_len = (word & 0x00FF_FFFF) as usize;
    if header_len > frame.len() {
        return Err(FrameError::HeaderOverflow {
            header: header_len,
            available: frame.len(),
        });
    }
    let header = frame.split_to(header_len);
    let serialize_type =
        SerializeType::from_byte(type_byte).ok_or(FrameError::UnknownSerializeType(type_byte))?;
    let mut cmd = match serialize_type {
        SerializeType::Json => header_json::decode(&header)?,
        SerializeType::RocketMq => header_binary::decode(&header)?,
    };
    cmd.body = frame;
    Ok(cmd)
}

/// Encodes everything of a frame but its body: length word, header-length word and header.
/// Writing the body separately lets large bodies go to the socket without a copy.
pub fn encode_prefix(cmd: &RemotingCommand) -> BytesMut {
    let mut header = Vec::with_capacity(256);
    match cmd.serialize_type {
        SerializeType::Json => header_json::encode(cmd, &mut header),
        SerializeType::RocketMq => header_binary::encode(cmd, &mut header),
    }
    let mut out = BytesMut::with_capacity(8 + header.len());
    let length = 4 + header.len() + cmd.body_len();
    out.put_u32(length as u32);
    out.put_u32(((cmd.serialize_type as u32) << 24) | (header.len() as u32 & 0x00FF_FFFF));
    out.extend_from_slice(&header);
    out
}

/// Encodes a whole frame into `dst`.
pub fn encode(cmd: &RemotingCommand, dst: &mut BytesMut) {
    let prefix = encode_prefix(cmd);
    dst.reserve(prefix.len() + cmd.body_len());
    dst.extend_from_slice(&prefix);
    dst.extend_from_slice(&cmd.body);
    for part in &cmd.body_parts {
        dst.extend_from_slice(part);
    }
}

/// Encodes a whole frame into a new buffer.
pub fn encode_to_bytes(cmd: &RemotingCommand) -> Bytes {
    let mut out = BytesMut::new();
    encode(cmd, &mut out);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExtFields;

    #[test]
    fn body_parts_go_out_as_one_body() {
        let whole = RemotingCommand::new_response(crate::ResponseCode::SUCCESS, None)
            .with_body(Bytes::from_static(b"onetwothree"));
        let parts = whole.clone().with_body_parts(vec![
            Bytes::from_static(b"one"),
            Bytes::from_static(b"two"),
            Bytes::from_static(b"three"),
        ]);
        assert_eq!(parts.body_len(), 11);
        let wire = encode_to_bytes(&parts);
        assert_eq!(wire, encode_to_bytes(&whole));
        let mut buf = BytesMut::from(&wire[..]);
        let decoded = decode(&mut buf, 1 << 20).unwrap().unwrap();
        assert_eq!(decoded.body, Bytes::from_static(b"onetwothree"));
        assert!(decoded.body_parts.is_empty());
    }

    #[test]
    fn incomplete_frames_wait_for_more() {
        let mut cmd = RemotingCommand::request_code(10, ExtFields::new());
        cmd.body = Bytes::from_static(b"hello");
        let full = encode_to_bytes(&cmd);
        for cut in 0..full.len() {
            let mut buf = BytesMut::from(&full[..cut]);
            assert_eq!(
                decode(&mut buf, DEFAULT_MAX_FRAME_SIZE),
                Ok(None),
                "cut at {cut}"
            );
        }
        let mut buf = BytesMut::from(&full[..]);
        let back = decode(&mut buf, DEFAULT_MAX_FRAME_SIZE)
            .expect("ok")
            .expect("complete");
        assert_eq!(back.body, Bytes::from_static(b"hello"));
        assert!(buf.is_empty());
    }

    #[test]
    fn oversize_and_undersize_lengths_are_errors() {
        let mut buf = BytesMut::from(&[0x01, 0x00, 0x00, 0x01][..]);
        assert!(matches!(
            decode(&mut buf, DEFAULT_MAX_FRAME_SIZE),
            Err(FrameError::TooLarge { .. })
        ));
        let mut buf = BytesMut::from(&[0, 0, 0, 2, 0, 0][..]);
        assert_eq!(
            decode(&mut buf, DEFAULT_MAX_FRAME_SIZE),
            Err(FrameError::LengthTooSmall(2))
        );
        let mut buf = BytesMut::from(&[0xFF, 0xFF, 0xFF, 0xFF][..]);
        assert!(decode(&mut buf, DEFAULT_MAX_FRAME_SIZE).is_err());
    }

    #[test]
    fn a_length_prefix_alone_reserves_nothing() {
        let mut buf = BytesMut::with_capacity(16);
        buf.put_u32(15 * 1024 * 1024);
        assert_eq!(decode(&mut buf, DEFAULT_MAX_FRAME_SIZE), Ok(None));
        assert!(buf.capacity() < 1024, "capacity {}", buf.capacity());
        // A large frame still decodes once its bytes have arrived, in any pieces.
        let mut cmd = RemotingCommand::request_code(10, ExtFields::new());
        cmd.body = Bytes::from(vec![7u8; 200 * 1024 + 5]);
        let full = encode_to_bytes(&cmd);
        let mut buf = BytesMut::new();
        for piece in full.chunks(1000) {
            assert_eq!(decode(&mut buf, DEFAULT_MAX_FRAME_SIZE), Ok(None));
            buf.extend_from_slice(piece);
        }
        let back = decode(&mut buf, DEFAULT_MAX_FRAME_SIZE)
            .expect("ok")
            .expect("complete");
        assert_eq!(back.body, cmd.body);
    }

    #[test]
    fn header_longer_than_frame_is_an_error() {
        let mut buf = BytesMut::new();
        buf.put_u32(8);
        buf.put_u32(100);
        buf.put_u32(0);
        assert!(matches!(
            decode(&mut buf, DEFAULT_MAX_FRAME_SIZE),
            Err(FrameError::HeaderOverflow { .. })
        ));
    }

    #[test]
    fn unknown_serialize_type_is_an_error() {
        let mut buf = BytesMut::new();
        buf.put_u32(6);
        buf.put_u32((7 << 24) | 2);
        buf.put_slice(b"{}");
        assert_eq!(
            decode(&mut buf, DEFAULT_MAX_FRAME_SIZE),
            Err(FrameError::UnknownSerializeType(7))
        );
    }
}
