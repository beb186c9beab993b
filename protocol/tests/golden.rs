//! Golden byte vectors built from the layouts of docs/protocol.md (1.2, 1.5, 4.1, 4.7, 5.1),
//! independently of the encoders under test.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use stellmq_protocol::message::batch::{self, BatchItem};
use stellmq_protocol::message::id;
use stellmq_protocol::message::record::{
    encode_record, RecordHead, BLANK_MAGIC, MAGIC_V1, MAGIC_V2,
};
use stellmq_protocol::message::{body_crc, sys_flag, MessageRecord, MessageVersion, Properties};
use stellmq_protocol::{frame, ExtFields, LanguageCode, RemotingCommand, SerializeType};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("address")
}

#[test]
fn json_frame_golden() {
    let header = r#"{"code":11,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":17,"serializeTypeCurrentRPC":"JSON","version":401}"#;
    let mut expected = Vec::new();
    expected.extend_from_slice(&((4 + header.len() + 2) as u32).to_be_bytes());
    expected.extend_from_slice(&(header.len() as u32).to_be_bytes());
    expected.extend_from_slice(header.as_bytes());
    expected.extend_from_slice(b"ab");

    let mut cmd = RemotingCommand::request_code(11, [("topic", "T")].into_iter().collect());
    cmd.opaque = 17;
    cmd.body = Bytes::from_static(b"ab");
    assert_eq!(frame::encode_to_bytes(&cmd).as_ref(), expected.as_slice());

    let mut buf = BytesMut::from(expected.as_slice());
    let back = frame::decode(&mut buf, frame::DEFAULT_MAX_FRAME_SIZE)
        .expect("ok")
        .expect("frame");
    assert_eq!(back, cmd);
}

#[test]
fn binary_frame_golden() {
    // code 10, language CPP (1), version 333, opaque 5, flag 0, remark "", extFields {a: b}.
    let expected = unhex(concat!(
        "00000021", "0100001d", // length 33, serialize type 1 | header length 29
        "000a", "01", "014d", "00000005", "00000000", // code, language, version, opaque, flag
        "00000000", // remark length
        "00000008", "0001", "61", "00000001", "62" // extFields
    ));
    let mut cmd = RemotingCommand::request_code(10, [("a", "b")].into_iter().collect());
    cmd.language = LanguageCode::Cpp;
    cmd.version = 333;
    cmd.opaque = 5;
    cmd.serialize_type = SerializeType::RocketMq;
    assert_eq!(frame::encode_to_bytes(&cmd).as_ref(), expected.as_slice());

    let mut buf = BytesMut::from(expected.as_slice());
    let back = frame::decode(&mut buf, frame::DEFAULT_MAX_FRAME_SIZE)
        .expect("ok")
        .expect("frame");
    assert_eq!(back, cmd);
    // A response to a binary request is written in binary too.
    assert_eq!(back.success_to().serialize_type, SerializeType::RocketMq);
}

#[test]
fn binary_header_with_remark_and_body() {
    let mut cmd = RemotingCommand::request_code(34, ExtFields::new()).with_remark("héllo");
    cmd.serialize_type = SerializeType::RocketMq;
    cmd.body = Bytes::from_static(b"{\"clientID\":\"x\"}");
    let bytes = frame::encode_to_bytes(&cmd);
    let mut buf = BytesMut::from(bytes.as_ref());
    let back = frame::decode(&mut buf, frame::DEFAULT_MAX_FRAME_SIZE)
        .expect("ok")
        .expect("frame");
    assert_eq!(back, cmd);
}

const V1_RECORD: &str = concat!(
    "00000062",
    "daa320a7",
    "58932aac", // TOTALSIZE 98, MAGIC V1, BODYCRC(hi)
    "00000001",
    "00000000", // QUEUEID 1, FLAG 0
    "0000000000000002",
    "0000000000000064", // QUEUEOFFSET 2, PHYSICALOFFSET 100
    "00000000",
    "00000000000003e8", // SYSFLAG 0, BORNTIMESTAMP 1000
    "7f000001",
    "00001388",         // BORNHOST 127.0.0.1:5000
    "00000000000007d0", // STORETIMESTAMP 2000
    "0a000001",
    "00002a9f", // STOREHOST 10.0.0.1:10911
    "00000000",
    "0000000000000000", // RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET
    "00000002",
    "6869", // BODY "hi"
    "01",
    "54", // TOPIC "T"
    "0004",
    "4b017602" // PROPERTIES K=v
);

fn v1_head() -> RecordHead {
    RecordHead {
        body_crc: body_crc(b"hi"),
        queue_id: 1,
        flag: 0,
        queue_offset: 2,
        physical_offset: 100,
        sys_flag: 0,
        born_timestamp: 1000,
        born_host: addr("127.0.0.1:5000"),
        store_timestamp: 2000,
        store_host: addr("10.0.0.1:10911"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

#[test]
fn v1_ipv4_record_golden() {
    let expected = unhex(V1_RECORD);
    let mut out = Vec::new();
    let len = encode_record(&v1_head(), b"hi", "T", "K\u{1}v\u{2}", &mut out).expect("encodes");
    assert_eq!(len, 98);
    assert_eq!(out, expected);

    let (record, used) = MessageRecord::decode(&Bytes::from(expected), true).expect("decodes");
    assert_eq!(used, 98);
    assert_eq!(record.version, MessageVersion::V1);
    assert_eq!(record.head, v1_head());
    assert_eq!(record.topic, "T");
    assert_eq!(record.body.as_ref(), b"hi");
    assert_eq!(record.properties.get("K"), Some("v"));
    assert_eq!(record.offset_msg_id(), "0A00000100002A9F0000000000000064");
}

#[test]
fn v2_ipv6_record_golden() {
    let expected = unhex(concat!(
        "000000f8",
        "daa320ab",
        "58932aac",
        "00000000",
        "00000007",
        "0000000000000003",
        "0000000000001000",
        "00000030",
        "0000000000000001",
        "00000000000000000000000000000001",
        "00001388",
        "0000000000000002",
        "fe800000000000000000000000000001",
        "00002a9f",
        "00000003",
        "0000000000000000",
        "00000002",
        "6869",
        "0082"
    ));
    let topic = "a".repeat(130);
    let mut expected = expected;
    expected.extend_from_slice(topic.as_bytes());
    expected.extend_from_slice(&[0, 0]);

    let head = RecordHead {
        body_crc: body_crc(b"hi"),
        queue_id: 0,
        flag: 7,
        queue_offset: 3,
        physical_offset: 4096,
        sys_flag: 0, // the v6 bits come from the addresses
        born_timestamp: 1,
        born_host: addr("[::1]:5000"),
        store_timestamp: 2,
        store_host: addr("[fe80::1]:10911"),
        reconsume_times: 3,
        prepared_transaction_offset: 0,
    };
    let mut out = Vec::new();
    encode_record(&head, b"hi", &topic, "", &mut out).expect("encodes");
    assert_eq!(out, expected);

    let (record, _) = MessageRecord::decode(&Bytes::from(expected), true).expect("decodes");
    assert_eq!(record.version, MessageVersion::V2);
    assert_eq!(
        record.head.sys_flag,
        sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6
    );
    assert_eq!(record.head.store_host, addr("[fe80::1]:10911"));
    assert_eq!(record.topic, topic);
    assert_eq!(record.offset_msg_id().len(), 56);
}

#[test]
fn compressed_record_golden() {
    // zlib of 100 x 'x' (level 5), as a Java producer would send it.
    let zipped = unhex("785eaba8a03d0000401b2ee1");
    let expected = unhex(concat!(
        "00000068",
        "daa320a7",
        "490bfae5",
        "00000000",
        "00000000",
        "0000000000000000",
        "0000000000000000",
        "00000001",
        "0000000000000000",
        "01020304",
        "00000001",
        "0000000000000000",
        "01020304",
        "00000002",
        "00000000",
        "0000000000000000",
        "0000000c",
        "785eaba8a03d0000401b2ee1",
        "0154",
        "0000"
    ));
    let (record, _) = MessageRecord::decode(&Bytes::from(expected.clone()), true).expect("decodes");
    assert_eq!(record.body.as_ref(), zipped.as_slice());
    assert_eq!(
        record
            .uncompressed_body(1 << 20)
            .expect("inflates")
            .as_ref(),
        vec![b'x'; 100].as_slice()
    );
    assert_eq!(record.encode_to_vec().expect("encodes"), expected);
}

#[test]
fn corrupt_records_are_rejected() {
    let good = unhex(V1_RECORD);
    let mut bad_crc = good.clone();
    bad_crc[84 + 4] ^= 0xFF; // first body byte
    assert!(MessageRecord::decode(&Bytes::from(bad_crc.clone()), true).is_err());
    assert!(MessageRecord::decode(&Bytes::from(bad_crc), false).is_ok());
    let mut bad_magic = good.clone();
    bad_magic[4..8].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
    assert!(MessageRecord::decode(&Bytes::from(bad_magic), false).is_err());
    let mut bad_len = good.clone();
    bad_len[3] = 97;
    assert!(MessageRecord::decode(&Bytes::from(bad_len), false).is_err());
    for cut in 0..good.len() {
        assert!(MessageRecord::decode(&Bytes::copy_from_slice(&good[..cut]), false).is_err());
    }
    assert_eq!(MAGIC_V1, 0xDAA320A7);
    assert_eq!(MAGIC_V2 as i32, -626843477);
}

#[test]
fn decode_all_reads_back_to_back_records() {
    let mut body = unhex(V1_RECORD);
    body.extend(unhex(V1_RECORD));
    let records = MessageRecord::decode_all(Bytes::from(body), true).expect("decodes");
    assert_eq!(records.len(), 2);
}

#[test]
fn batch_body_golden() {
    let expected = unhex(concat!(
        "00000020",
        "00000000",
        "00000000",
        "00000000",
        "00000002",
        "6d31",
        "0008",
        "4b455953016b3102",
        "00000016",
        "00000000",
        "00000000",
        "00000003",
        "00000000",
        "0000"
    ));
    let items = vec![
        BatchItem {
            flag: 0,
            body: Bytes::from_static(b"m1"),
            properties: "KEYS\u{1}k1\u{2}".into(),
        },
        BatchItem {
            flag: 3,
            body: Bytes::new(),
            properties: String::new(),
        },
    ];
    assert_eq!(batch::encode(&items), expected);
    assert_eq!(
        batch::decode(Bytes::from(expected.clone())).expect("decodes"),
        items
    );
    assert_eq!(
        Properties::decode(&items[0].properties).get("KEYS"),
        Some("k1")
    );
    for cut in 1..expected.len() {
        if cut != 0x20 {
            assert!(
                batch::decode(Bytes::copy_from_slice(&expected[..cut])).is_err(),
                "cut {cut}"
            );
        }
    }
}

#[test]
fn offset_msg_id_golden() {
    assert_eq!(
        id::offset_msg_id(&addr("10.0.0.1:10911"), 0x1F40),
        "0A00000100002A9F0000000000001F40"
    );
    assert_eq!(
        id::decode_offset_msg_id("0A00000100002A9F0000000000001F40"),
        Ok((addr("10.0.0.1:10911"), 0x1F40))
    );
}
