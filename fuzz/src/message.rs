//! Stored message records, batch bodies, properties strings and message ids.

use bytes::Bytes;
use stellmq_remoting::protocol::message::{batch, id, MessageRecord, MessageVersion, Properties};

/// Largest body the target inflates (the broker's limit is its max message size).
const INFLATE_LIMIT: usize = 256 * 1024;

/// A stored record (CommitLog bytes, or a pull/query response body): decoded with and
/// without its CRC checked, alone and back to back; what decoded is re-encoded.
pub fn record(data: &[u8]) -> bool {
    let buf = Bytes::copy_from_slice(data);
    let plain = MessageRecord::decode(&buf, false);
    let checked = MessageRecord::decode(&buf, true);
    if let Ok(checked) = &checked {
        assert_eq!(
            plain.as_ref().ok(),
            Some(checked),
            "the CRC check changed a record"
        );
    }
    let _ = MessageRecord::decode_all(buf.clone(), true);
    let Ok((record, used)) = plain else {
        return false;
    };
    assert!(
        used <= data.len(),
        "record used {used} of {} bytes",
        data.len()
    );
    let _ = record.uncompressed_body(INFLATE_LIMIT);
    let _ = record.msg_id();
    let _ = record.properties.keys().count();
    let _ = record.properties.delay_level();
    // A re-encoded record may not fit (properties gain trailing separators); otherwise it
    // must decode to the same record, in the version its topic calls for.
    if let Ok(encoded) = record.encode_to_vec() {
        let (back, n) = match MessageRecord::decode(&Bytes::from(encoded.clone()), false) {
            Ok(decoded) => decoded,
            Err(e) => panic!("re-encoded record does not decode: {e}\n{record:?}"),
        };
        assert_eq!(n, encoded.len());
        let mut expected = record;
        expected.version = MessageVersion::for_topic(&expected.topic);
        assert_eq!(back, expected);
    }
    true
}

/// A SEND_BATCH_MESSAGE body, and each message's properties as the broker reads them.
pub fn batch(data: &[u8]) -> bool {
    let Ok(items) = batch::decode(Bytes::copy_from_slice(data)) else {
        return false;
    };
    for item in &items {
        let _ = Properties::decode(&item.properties);
    }
    match batch::decode(Bytes::from(batch::encode(&items))) {
        Ok(back) => assert_eq!(back, items),
        Err(e) => panic!("re-encoded batch does not decode: {e}"),
    }
    true
}

/// A properties string (the `properties` header field, or a record's).
pub fn properties(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let props = Properties::decode(&text);
    assert_eq!(Properties::decode(&props.encode()), props);
    let _ = props.keys().count();
    let _ = props.delay_level();
    let _ = props.wait_store_ok();
    !props.is_empty()
}

/// An offsetMsgId, as VIEW_MESSAGE_BY_ID and the admin tools read them.
pub fn message_id(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok((host, offset)) = id::decode_offset_msg_id(text) else {
        return false;
    };
    let encoded = id::offset_msg_id(&host, offset);
    assert_eq!(id::decode_offset_msg_id(&encoded), Ok((host, offset)));
    true
}
