//! Valid inputs for every target, made by the encoders, so the corpus can be rebuilt.
//!
//! `cargo run -p stellmq-fuzz --bin fuzz -- --write-seeds` writes them to
//! `fuzz/corpus/<target>/seed-<name>`; `tests/corpus.rs` checks the files still match.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use stellmq_remoting::protocol::body::fastjson::{self, Style};
use stellmq_remoting::protocol::body::{
    ConsumeStats, ConsumerData, ConsumerOffsetSerializeWrapper, DataVersion,
    DelayOffsetSerializeWrapper, HeartbeatData, KvTable, LockBatchRequestBody, MessageQueue,
    OffsetWrapper, ProducerData, RegisterBrokerBody, ResetOffsetBody, SubscriptionData,
    SubscriptionGroupConfig, TopicConfig, TopicConfigSerializeWrapper,
};
use stellmq_remoting::protocol::message::batch::{self, BatchItem};
use stellmq_remoting::protocol::message::record::RecordHead;
use stellmq_remoting::protocol::message::{id, sys_flag, zlib_compress, MessageRecord};
use stellmq_remoting::protocol::message::{MessageVersion, Properties};
use stellmq_remoting::protocol::{
    frame, header_binary, header_json, ExtFields, LanguageCode, RemotingCommand, SerializeType,
};

/// One seed: its file name (without the `seed-` prefix) and its bytes.
pub type Seed = (String, Vec<u8>);

/// The seeds of `target` (none for an unknown name).
pub fn for_target(target: &str) -> Vec<Seed> {
    let seeds: Vec<(&str, Vec<u8>)> = match target {
        "frame" => frames(),
        "header_json" => commands()
            .into_iter()
            .map(|(name, mut cmd)| {
                cmd.serialize_type = SerializeType::Json;
                let mut out = Vec::new();
                header_json::encode(&cmd, &mut out);
                (name, out)
            })
            .chain([
                ("cpp", br#"{"code":310,"language":"CPP","version":333,"opaque":5,"flag":0,"remark":"","extFields":{"a":"g","e":2,"k":false,"n":null,"f":1.5}}"#.to_vec()),
                ("minimal", br#"{"code":"34"}"#.to_vec()),
            ])
            .collect(),
        "header_binary" => commands()
            .into_iter()
            .map(|(name, mut cmd)| {
                cmd.serialize_type = SerializeType::RocketMq;
                let mut out = Vec::new();
                header_binary::encode(&cmd, &mut out);
                (name, out)
            })
            .collect(),
        "record" => records(),
        "batch" => batches(),
        "properties" => vec![
            ("empty", Vec::new()),
            ("typical", sample_properties().encode().into_bytes()),
            ("java_quirks", b"A\x011\x02\x02B\x01\x02\x01x\x02C\x01a\x01b\x02D\x014".to_vec()),
        ],
        "message_id" => vec![
            ("ipv4", id::offset_msg_id(&addr("10.0.0.1:10911"), 0x1F40).into_bytes()),
            ("ipv6", id::offset_msg_id(&addr("[::1]:10911"), 7).into_bytes()),
            ("lowercase", b"0a00000100002a9f0000000000001f40".to_vec()),
        ],
        "json_body" => json_bodies(),
        "ha_frame" => ha_frames(),
        "recovery" => segments(),
        "register_compressed" => vec![
            ("empty", RegisterBrokerBody::default().encode_compressed()),
            ("topics", register_body().encode_compressed()),
        ],
        "sql92" => [
            "a > 5 AND b = 'abc'\0a\u{1}10\u{2}b\u{1}abc\u{2}",
            "region IN ('us', 'eu-west') OR TAGS = 'TagA'\0region\u{1}eu-west\u{2}",
            "NOT (x BETWEEN 1 AND 10) AND y IS NOT NULL\0x\u{1}11\u{2}y\u{1}1\u{2}",
            "s CONTAINS 'it''s' OR s STARTSWITH 'a' OR s NOT ENDSWITH 'z'\0s\u{1}it's\u{2}",
            "-a < 0.5e1 AND a <> 7L -- comment\n/* block */ OR flag\0a\u{1}1\u{2}flag\u{1}true\u{2}",
            "((a = 1 OR b = 2) AND (c IS NULL)) = TRUE\0a\u{1}1\u{2}",
        ]
        .iter()
        .enumerate()
        .map(|(i, s)| (["doc", "in", "between", "strings", "lexer", "nesting"][i], s.as_bytes().to_vec()))
        .collect(),
        "text" => text_seeds(),
        _ => Vec::new(),
    };
    seeds
        .into_iter()
        .map(|(name, bytes)| (name.to_owned(), bytes))
        .collect()
}

fn addr(text: &str) -> SocketAddr {
    text.parse()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
}

fn commands() -> Vec<(&'static str, RemotingCommand)> {
    let send: ExtFields = [
        ("producerGroup", "PG"),
        ("topic", "TopicTest"),
        ("queueId", "3"),
        ("sysFlag", "0"),
        ("bornTimestamp", "1700000000000"),
        ("flag", "0"),
        ("properties", "TAGS\u{1}TagA\u{2}WAIT\u{1}true\u{2}"),
    ]
    .into_iter()
    .collect();
    let mut request = RemotingCommand::request_code(10, send);
    request.opaque = 42;
    request.language = LanguageCode::Cpp;
    let mut oneway = RemotingCommand::request_code(34, ExtFields::new());
    oneway.mark_oneway();
    oneway.language = LanguageCode::Unknown("COBOL".into());
    let mut response = RemotingCommand::request_code(1, ExtFields::new());
    response.flag = 1;
    response.opaque = -7;
    response.remark = Some("system busy, «try later»".into());
    vec![
        ("send", request),
        ("oneway", oneway),
        ("response", response),
    ]
}

fn frames() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, mut cmd) in commands() {
        cmd.body = Bytes::from_static(b"hello body");
        for (kind, ty) in [
            ("json", SerializeType::Json),
            ("binary", SerializeType::RocketMq),
        ] {
            cmd.serialize_type = ty;
            let label: &'static str = match (name, kind) {
                ("send", "json") => "send_json",
                ("send", _) => "send_binary",
                ("oneway", "json") => "oneway_json",
                ("oneway", _) => "oneway_binary",
                (_, "json") => "response_json",
                _ => "response_binary",
            };
            out.push((label, frame::encode_to_bytes(&cmd).to_vec()));
        }
    }
    // Two frames back to back, as one read may deliver them.
    let mut two = BytesMut::new();
    for (_, cmd) in commands().into_iter().take(2) {
        frame::encode(&cmd, &mut two);
    }
    out.push(("two_frames", two.to_vec()));
    out
}

fn sample_properties() -> Properties {
    [
        ("KEYS", "k1 k2"),
        ("TAGS", "TagA"),
        ("UNIQ_KEY", "7F00000100002A9F0000000000001F40"),
        ("DELAY", "3"),
        ("WAIT", "false"),
    ]
    .into_iter()
    .collect()
}

fn head(born: &str, store: &str) -> RecordHead {
    RecordHead {
        body_crc: 0,
        queue_id: 1,
        flag: 0,
        queue_offset: 5,
        physical_offset: 4096,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: addr(born),
        store_timestamp: 1_700_000_000_005,
        store_host: addr(store),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

fn encode_record(mut record: MessageRecord) -> Vec<u8> {
    record.head.body_crc = stellmq_remoting::protocol::message::body_crc(&record.body);
    record.encode_to_vec().unwrap_or_default()
}

fn records() -> Vec<(&'static str, Vec<u8>)> {
    let plain = MessageRecord {
        head: head("10.0.0.2:50000", "10.0.0.1:10911"),
        version: MessageVersion::V1,
        body: Bytes::from_static(b"Hello RocketMQ"),
        topic: "TopicTest".into(),
        properties: sample_properties(),
    };
    let mut v6 = plain.clone();
    v6.head = head("[::1]:50000", "[fe80::1]:10911");
    v6.head.sys_flag = sys_flag::TRANSACTION_PREPARED_TYPE;
    let mut v2 = plain.clone();
    v2.topic = "T".repeat(200);
    v2.version = MessageVersion::V2;
    let mut compressed = plain.clone();
    compressed.head.sys_flag = sys_flag::COMPRESSED;
    compressed.body = Bytes::from(zlib_compress(&[b'z'; 5000], 5));
    let mut empty = plain.clone();
    empty.body = Bytes::new();
    empty.properties = Properties::new();
    let mut two = encode_record(plain.clone());
    two.extend(encode_record(v6.clone()));
    vec![
        ("v1", encode_record(plain)),
        ("ipv6_prepared", encode_record(v6)),
        ("v2_long_topic", encode_record(v2)),
        ("compressed", encode_record(compressed)),
        ("empty", encode_record(empty)),
        ("two_records", two),
    ]
}

/// Records laid out from offset 0, each carrying its own physical offset, as a log holds them.
fn log_records(n: usize) -> Vec<Vec<u8>> {
    let mut offset = 0i64;
    (0..n)
        .map(|i| {
            let mut head = head("10.0.0.2:50000", "10.0.0.1:10911");
            head.physical_offset = offset;
            head.queue_offset = i as i64;
            let bytes = encode_record(MessageRecord {
                head,
                version: MessageVersion::V1,
                body: Bytes::from(format!("body-{i}")),
                topic: "TopicTest".into(),
                properties: sample_properties(),
            });
            offset += bytes.len() as i64;
            bytes
        })
        .collect()
}

/// An end-of-file blank that fills a 4 KiB segment from `pos`.
fn blank(pos: usize) -> Vec<u8> {
    let mut out = vec![0u8; 4096 - pos];
    out[..4].copy_from_slice(&((4096 - pos) as i32).to_be_bytes());
    out[4..8].copy_from_slice(&0xCBD4_3194u32.to_be_bytes());
    out
}

fn ha_frames() -> Vec<(&'static str, Vec<u8>)> {
    use stellmq_broker::ha::protocol::{encode_frame_header, encode_hello, SlaveIdentity};
    let identity = SlaveIdentity {
        cluster_name: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
        broker_id: 1,
    };
    let hello = encode_hello(&identity.encode().unwrap_or_default()).unwrap_or_default();
    let frame = |offset: usize, body: &[u8]| {
        let mut out = encode_frame_header(offset as i64, body.len()).to_vec();
        out.extend_from_slice(body);
        out
    };
    let records = log_records(3);
    let mut whole = hello.clone();
    let mut split = hello.clone();
    let mut offset = 0;
    for (i, r) in records.iter().enumerate() {
        whole.extend(frame(offset, r));
        if i == 1 {
            let (a, b) = r.split_at_checked(r.len() / 2).unwrap_or((r, &[]));
            split.extend(frame(offset, a));
            split.extend(frame(offset + a.len(), b));
        } else {
            split.extend(frame(offset, r));
        }
        offset += r.len();
    }
    let mut blanked = hello.clone();
    blanked.extend(frame(0, &records[0]));
    blanked.extend(frame(records[0].len(), &blank(records[0].len())));
    vec![
        ("hello", hello),
        ("records", whole),
        ("split_record", split),
        ("blank", blanked),
    ]
}

fn segments() -> Vec<(&'static str, Vec<u8>)> {
    let records = log_records(4);
    let written: Vec<u8> = records.concat();
    let mut full = written.clone();
    full.extend(blank(written.len()));
    let mut torn = written.clone();
    torn.extend_from_slice(&records[0][..40]);
    vec![
        ("records", written),
        ("full_segment", full),
        ("torn_tail", torn),
    ]
}

fn batches() -> Vec<(&'static str, Vec<u8>)> {
    let item = |body: &'static [u8], props: &str| BatchItem {
        flag: 0,
        body: Bytes::from_static(body),
        properties: props.to_owned(),
    };
    vec![
        ("one", batch::encode(&[item(b"m1", "TAGS\u{1}A\u{2}")])),
        (
            "three",
            batch::encode(&[
                item(b"m1", "KEYS\u{1}k\u{2}"),
                item(b"", ""),
                item(b"third body", "UNIQ_KEY\u{1}ABC\u{2}"),
            ]),
        ),
    ]
}

fn register_body() -> RegisterBrokerBody {
    let mut body = RegisterBrokerBody::default();
    body.topic_config_serialize_wrapper.data_version = DataVersion::new(1_700_000_000_000);
    for (name, perm) in [("TBW102", 7), ("TopicA", 6)] {
        body.topic_config_serialize_wrapper
            .topic_config_table
            .insert(name.into(), TopicConfig::with_queues(name, 8, 8, perm));
    }
    body.filter_server_list = vec!["10.0.0.9:30000".into()];
    body
}

fn json_bodies() -> Vec<(&'static str, Vec<u8>)> {
    let mq = |q| MessageQueue {
        broker_name: "broker-a".into(),
        queue_id: q,
        topic: "TopicTest".into(),
    };
    let heartbeat = HeartbeatData {
        client_id: "10.0.0.2@1234".into(),
        producer_data_set: vec![ProducerData {
            group_name: "PG".into(),
        }],
        consumer_data_set: vec![ConsumerData {
            group_name: "CG".into(),
            subscription_data_set: vec![SubscriptionData {
                topic: "TopicTest".into(),
                sub_string: "TagA || TagB".into(),
                tags_set: ["TagA".to_owned(), "TagB".to_owned()].into(),
                code_set: [2598919, 2598920].into(),
                sub_version: 1_700_000_000_000,
                expression_type: Some("TAG".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let lock = LockBatchRequestBody {
        consumer_group: "CG".into(),
        client_id: "c1".into(),
        mq_set: vec![mq(0), mq(1)],
        only_this_broker: true,
    };
    let reset = ResetOffsetBody {
        offset_table: [(mq(0), 10), (mq(1), -1)].into_iter().collect(),
    };
    let stats = ConsumeStats {
        consume_tps: 12.5,
        offset_table: [(
            mq(2),
            OffsetWrapper {
                broker_offset: 100,
                consumer_offset: 90,
                last_timestamp: 1,
                pull_offset: 95,
            },
        )]
        .into_iter()
        .collect(),
    };
    let mut offsets = ConsumerOffsetSerializeWrapper::default();
    offsets.offset_table.insert(
        "TopicTest@CG".into(),
        [(0, 120), (1, 118)].into_iter().collect(),
    );
    let delay = DelayOffsetSerializeWrapper {
        offset_table: [(1, 5), (18, 0)].into_iter().collect(),
        data_version: None,
    };
    let kv = KvTable {
        table: [("ORDER_TOPIC_CONFIG".to_owned(), "broker-a:4".to_owned())].into(),
    };
    let topics: TopicConfigSerializeWrapper = register_body().topic_config_serialize_wrapper;
    let mut out = vec![
        ("heartbeat", fastjson::encode(&heartbeat)),
        ("heartbeat_standard", fastjson::encode_standard(&heartbeat)),
        (
            "heartbeat_cpp",
            br#"{"clientID":"c","consumerDataSet":[{"groupName":"g","consumeType":1,"messageModel":1,"consumeFromWhere":4,"subscriptionDataSet":[{"topic":"T","subString":"*","subVersion":"17","tagsSet":[],"codeSet":null}],"unitMode":"false"}],"producerDataSet":null}"#.to_vec(),
        ),
        ("group", fastjson::encode(&SubscriptionGroupConfig::new("CG"))),
        ("lock", fastjson::encode(&lock)),
        ("reset_offset", fastjson::encode(&reset)),
        ("consume_stats", fastjson::encode(&stats)),
        ("consumer_offsets", fastjson::encode(&offsets)),
        ("delay_offsets", fastjson::encode(&delay)),
        ("kv", fastjson::encode(&kv)),
        ("register", fastjson::encode(&register_body())),
        ("data_version", fastjson::encode(&DataVersion::new(7))),
    ];
    out.push((
        "topics_pretty",
        fastjson::encode_with(&topics, Style::FastjsonPretty).into_bytes(),
    ));
    out
}

/// One valid text per parser of the `text` target.
fn text_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use stellmq_remoting::protocol::pop::{ExtraInfo, TopicType};
    let handle = ExtraInfo {
        ck_queue_offset: 4,
        pop_time: 1_700_000_000_000,
        invisible_time: 60_000,
        revive_qid: 0,
        topic_type: TopicType::Normal,
        broker_name: "broker-a".into(),
        queue_id: 1,
        queue_offset: Some(5),
    }
    .to_string();
    let acl_file =
        "globalWhiteRemoteAddresses:\n- 10.10.103.*\naccounts:\n- accessKey: RocketMQ\n  \
                    secretKey: '12345678'\n  admin: false\n  defaultTopicPerm: DENY\n  \
                    defaultGroupPerm: SUB\n  topicPerms:\n  - topicA=DENY\n  - topicB=PUB|SUB\n";
    [
        (
            "topic_attributes",
            "topic_attributes",
            "+message.type=FIFO,+queue.type=BatchCQ,-cleanup.policy",
        ),
        ("tag_expression", "tag_expression", "TagA || TagB ||TagC"),
        ("pop_extra_info", "pop_extra_info", handle.as_str()),
        ("pop_offset_infos", "pop_offset_infos", "0 1 5;1 2 6,7"),
        ("acl_address", "acl_address", "192.168.0.{1,2}"),
        ("acl_address_ranges", "acl_address", "10.10.1-8.*"),
        ("acl_perms", "acl_perms", "PUB|SUB"),
        ("acl_file", "acl_file", acl_file),
        (
            "config_changes",
            "config_changes",
            "brokerPermission=6\nflushDiskType=ASYNC_FLUSH\n",
        ),
        (
            "delay_levels",
            "delay_levels",
            "1s 5s 10s 30s 1m 2m 1h 2h 1d",
        ),
        (
            "topic_compact",
            "topic_compact",
            "TopicA 8 8 6 SINGLE_TAG {\"message.type\":\"FIFO\"}",
        ),
        ("names", "names", "%RETRY%GroupA"),
        (
            "kv_table",
            "kv_table",
            r#"{"table":{"TopicA":"broker-a:4;broker-b:4"}}"#,
        ),
    ]
    .into_iter()
    .map(|(seed, parser, text)| (seed, crate::text::input(parser, text)))
    .collect()
}
