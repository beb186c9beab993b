//! Remoting frames and both header encodings, as a connection reads them.

use std::fmt::Debug;

use bytes::BytesMut;
use stellmq_remoting::protocol::headers::{
    CommandHeader, ConsumerSendMsgBackRequestHeader, PullMessageRequestHeader,
    RegisterBrokerRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
    UpdateConsumerOffsetRequestHeader,
};
use stellmq_remoting::protocol::{
    frame, header_binary, header_json, ExtFields, LanguageCode, RemotingCommand, SerializeType,
};

/// The frame limit `frame` decodes with: small, so inputs reach the size checks.
pub const MAX_FRAME: usize = 8 * 1024;

/// Frames as a connection's read loop takes them: decode from the front of the buffer
/// until a frame is incomplete or bad (which closes the connection).
pub fn frame(data: &[u8]) -> bool {
    let mut buf = BytesMut::from(data);
    let mut decoded = false;
    loop {
        let before = buf.len();
        match frame::decode(&mut buf, MAX_FRAME) {
            Ok(Some(cmd)) => {
                assert!(buf.len() < before, "a decoded frame consumed nothing");
                frame_round_trip(&cmd);
                typed_headers(&cmd.ext_fields);
                decoded = true;
            }
            Ok(None) => {
                assert_eq!(buf.len(), before, "an incomplete frame consumed bytes");
                return decoded;
            }
            Err(_) => return decoded,
        }
    }
}

fn frame_round_trip(cmd: &RemotingCommand) {
    let bytes = frame::encode_to_bytes(cmd);
    let mut buf = BytesMut::from(&bytes[..]);
    match frame::decode(&mut buf, usize::MAX) {
        Ok(Some(back)) => {
            assert!(buf.is_empty(), "re-encoded frame left bytes behind");
            assert_same(cmd, &back);
        }
        other => panic!("re-encoded frame does not decode: {other:?}\n{cmd:?}"),
    }
}

/// A JSON header: decode, and re-encode what decoded.
pub fn header_json(data: &[u8]) -> bool {
    let Ok(cmd) = header_json::decode(data) else {
        return false;
    };
    typed_headers(&cmd.ext_fields);
    let mut out = Vec::new();
    header_json::encode(&cmd, &mut out);
    match header_json::decode(&out) {
        Ok(back) => assert_same(&cmd, &back),
        Err(e) => panic!("re-encoded JSON header does not decode: {e}\n{cmd:?}"),
    }
    true
}

/// A ROCKETMQ binary header: decode, and re-encode what decoded.
pub fn header_binary(data: &[u8]) -> bool {
    let Ok(cmd) = header_binary::decode(data) else {
        return false;
    };
    typed_headers(&cmd.ext_fields);
    let mut out = Vec::new();
    header_binary::encode(&cmd, &mut out);
    match header_binary::decode(&out) {
        Ok(back) => assert_same(&cmd, &back),
        Err(e) => panic!("re-encoded binary header does not decode: {e}\n{cmd:?}"),
    }
    true
}

/// Equal up to what an encoding cannot carry: the binary header writes languages it does
/// not know as OTHER.
fn assert_same(sent: &RemotingCommand, back: &RemotingCommand) {
    let language = |c: &RemotingCommand| match (c.serialize_type, &c.language) {
        (SerializeType::RocketMq, l) => LanguageCode::from_byte(l.byte()),
        (SerializeType::Json, l) => l.clone(),
    };
    assert_eq!(language(sent), language(back), "language");
    let mut sent = sent.clone();
    sent.language = back.language.clone();
    assert_eq!(&sent, back);
}

/// The typed headers of the busiest requests, read from `extFields` as processors do;
/// what reads re-reads the same from its own `extFields`.
fn typed_headers(fields: &ExtFields) {
    typed::<SendMessageRequestHeader>(fields);
    if let Some(v2) = typed::<SendMessageRequestHeaderV2>(fields) {
        let _ = SendMessageRequestHeader::from(v2);
    }
    typed::<PullMessageRequestHeader>(fields);
    typed::<ConsumerSendMsgBackRequestHeader>(fields);
    typed::<UpdateConsumerOffsetRequestHeader>(fields);
    typed::<RegisterBrokerRequestHeader>(fields);
}

fn typed<H: CommandHeader + PartialEq + Debug>(fields: &ExtFields) -> Option<H> {
    let header = H::from_ext_fields(fields).ok()?;
    assert_eq!(
        H::from_ext_fields(&header.to_ext_fields()).as_ref(),
        Ok(&header)
    );
    Some(header)
}
