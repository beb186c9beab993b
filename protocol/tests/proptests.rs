//! Property tests: codec round trips, and arbitrary or truncated input never panics.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use stellmq_protocol::body::{
    fastjson, DelayOffsetSerializeWrapper, HeartbeatData, TopicRouteData,
};
use stellmq_protocol::message::batch;
use stellmq_protocol::message::record::RecordHead;
use stellmq_protocol::message::{MessageRecord, MessageVersion, Properties};
use stellmq_protocol::{
    frame, header_binary, header_json, ExtFields, LanguageCode, RemotingCommand, SerializeType,
};

fn arb_command() -> impl Strategy<Value = RemotingCommand> {
    (
        any::<i16>(),
        any::<i16>(),
        any::<i32>(),
        0i32..4,
        proptest::option::of("[^\u{0}]{1,20}"),
        proptest::collection::btree_map("[a-zA-Z_]{1,12}", "[^\u{0}]{1,30}", 0..8),
        proptest::collection::vec(any::<u8>(), 0..256),
        any::<bool>(),
    )
        .prop_map(
            |(code, version, opaque, flag, remark, fields, body, binary)| RemotingCommand {
                code: i32::from(code),
                language: LanguageCode::Go,
                version: i32::from(version),
                opaque,
                flag,
                remark,
                ext_fields: fields.into_iter().collect::<ExtFields>(),
                body: Bytes::from(body),
                body_parts: Vec::new(),
                serialize_type: if binary {
                    SerializeType::RocketMq
                } else {
                    SerializeType::Json
                },
            },
        )
}

proptest! {
    #[test]
    fn frames_round_trip(cmd in arb_command()) {
        let bytes = frame::encode_to_bytes(&cmd);
        let mut buf = BytesMut::from(bytes.as_ref());
        let back = frame::decode(&mut buf, frame::DEFAULT_MAX_FRAME_SIZE).expect("decodes").expect("complete");
        prop_assert_eq!(back, cmd);
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn frame_decoder_never_panics_on_random_input(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut buf = BytesMut::from(data.as_slice());
        for _ in 0..4 {
            match frame::decode(&mut buf, 4096) {
                Ok(Some(_)) => continue,
                _ => break,
            }
        }
    }

    #[test]
    fn truncated_or_corrupted_frames_never_panic(cmd in arb_command(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        let bytes = frame::encode_to_bytes(&cmd).to_vec();
        let cut = cut.index(bytes.len());
        let mut buf = BytesMut::from(&bytes[..cut]);
        prop_assert_eq!(frame::decode(&mut buf, frame::DEFAULT_MAX_FRAME_SIZE), Ok(None));
        let mut corrupted = bytes.clone();
        let i = flip.index(corrupted.len());
        corrupted[i] ^= 1 << bit;
        let mut buf = BytesMut::from(corrupted.as_slice());
        let _ = frame::decode(&mut buf, frame::DEFAULT_MAX_FRAME_SIZE);
    }

    #[test]
    fn header_decoders_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = header_binary::decode(&data);
        let _ = header_json::decode(&data);
    }

    #[test]
    fn records_round_trip(
        body in proptest::collection::vec(any::<u8>(), 0..300),
        topic in "[a-zA-Z0-9_%-]{1,200}",
        props in proptest::collection::btree_map("[A-Z_]{1,10}", "[a-z0-9 ]{1,20}", 0..6),
        queue_id in any::<i32>(), offsets in any::<(i64, i64, i64, i64)>(), v6 in any::<(bool, bool)>(),
        sys_flag in 0i32..16,
    ) {
        let host = |v6: bool, port: u16| if v6 { format!("[fe80::9]:{port}") } else { format!("10.1.2.3:{port}") }.parse().expect("addr");
        let record = MessageRecord {
            head: RecordHead {
                body_crc: stellmq_protocol::message::body_crc(&body),
                queue_id, flag: 3, queue_offset: offsets.0, physical_offset: offsets.1,
                sys_flag: sys_flag | if v6.0 { 0x10 } else { 0 } | if v6.1 { 0x20 } else { 0 },
                born_timestamp: offsets.2, born_host: host(v6.0, 1234),
                store_timestamp: offsets.3, store_host: host(v6.1, 10911),
                reconsume_times: 2, prepared_transaction_offset: 9,
            },
            version: MessageVersion::for_topic(&topic),
            body: Bytes::from(body),
            topic,
            properties: props.into_iter().collect::<Properties>(),
        };
        let bytes = Bytes::from(record.encode_to_vec().expect("encodes"));
        let (back, used) = MessageRecord::decode(&bytes, true).expect("decodes");
        prop_assert_eq!(used, bytes.len());
        prop_assert_eq!(back, record);
    }

    #[test]
    fn record_and_batch_decoders_never_panic(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = MessageRecord::decode_all(Bytes::from(data.clone()), true);
        let _ = batch::decode(Bytes::from(data));
    }

    #[test]
    fn json_body_decoders_never_panic(text in "[{}\\[\\]:,\"0-9a-z ]{0,80}") {
        let _ = fastjson::decode::<TopicRouteData>(text.as_bytes());
        let _ = fastjson::decode::<HeartbeatData>(text.as_bytes());
        let _ = fastjson::to_standard(&text);
    }

    #[test]
    fn int_key_maps_round_trip(map in proptest::collection::btree_map(any::<i64>(), any::<i64>(), 0..10)) {
        let body = DelayOffsetSerializeWrapper { offset_table: stellmq_protocol::body::IntKeyMap(map), data_version: None };
        let back: DelayOffsetSerializeWrapper = fastjson::decode(&fastjson::encode(&body)).expect("decodes");
        prop_assert_eq!(back, body);
    }

    #[test]
    fn properties_round_trip(props in proptest::collection::btree_map("[^\u{1}\u{2}]{1,10}", "[^\u{1}\u{2}]{1,20}", 0..8)) {
        let p: Properties = props.into_iter().collect();
        prop_assert_eq!(Properties::decode(&p.encode()), p);
    }
}
