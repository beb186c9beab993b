//! Hostile input, second round (#42): text that cannot be sliced where a decoder once sliced
//! it, JSON headers with repeated keys, and the answers a live broker gives to both.

use bytes::BytesMut;
use stellmq_remoting::protocol::body::{fastjson, TopicConfigSerializeWrapper};
use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::id;
use stellmq_remoting::protocol::{frame, RemotingCommand, RequestCode};
use stellmq_testkit::process::spawn_mqnamesrv_in;
use stellmq_testkit::wait::wait_for_blocking;
use stellmq_testkit::{http_get, request, send_header, Process, Registration, Stack, TIMEOUT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SYSTEM_ERROR: i32 = 1;

fn create_topic(topic: &str, attributes: &str) -> RemotingCommand {
    request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", topic),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "4"),
            ("writeQueueNums", "4"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
            ("attributes", attributes),
        ],
    )
}

#[tokio::test]
async fn topic_attributes_that_start_with_multibyte_text_are_refused_with_a_reason() {
    let stack = Stack::start().await;
    for attributes in ["\u{e9}", "\u{e9}+message.type=FIFO", "\u{1f600}", "-\u{e9}"] {
        let answer = stack.call(create_topic("Accented", attributes)).await;
        assert_eq!(answer.code, SYSTEM_ERROR, "{attributes:?}");
        assert!(
            answer.remark_str().contains("attribute"),
            "the remark says what was wrong: {}",
            answer.remark_str()
        );
    }
    // The same connection and broker still serve, and a good change applies.
    let answer = stack
        .call(create_topic("Accented", "+message.type=FIFO"))
        .await;
    assert_eq!(answer.code, 0, "{}", answer.remark_str());
    let all = stack
        .call(request(RequestCode::GET_ALL_TOPIC_CONFIG, &[]))
        .await;
    let all: TopicConfigSerializeWrapper = fastjson::decode(&all.body).expect("topics");
    assert_eq!(
        all.topic_config_table["Accented"].attributes["message.type"],
        "FIFO"
    );
}

/// One JSON-header frame with `header` as its header text.
fn json_frame(header: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(4 + header.len() as i32).to_be_bytes());
    out.extend_from_slice(&(header.len() as u32).to_be_bytes());
    out.extend_from_slice(header.as_bytes());
    out
}

async fn read_answer(socket: &mut TcpStream) -> RemotingCommand {
    let mut buf = BytesMut::new();
    loop {
        if let Some(answer) = frame::decode(&mut buf, 1 << 20).expect("a frame") {
            return answer;
        }
        let read = tokio::time::timeout(TIMEOUT, socket.read_buf(&mut buf))
            .await
            .expect("answered in time")
            .expect("read");
        assert!(
            read > 0,
            "the broker closed the connection instead of answering"
        );
    }
}

#[tokio::test]
async fn a_json_header_with_a_repeated_key_is_read_with_its_last_value_as_fastjson_does() {
    let stack = Stack::start().await;
    let mut socket = TcpStream::connect(stack.addr()).await.expect("connect");
    // `code` and `opaque` twice: the last ones count (GET_BROKER_RUNTIME_INFO = 28, opaque 7).
    let header = r#"{"code":999999,"opaque":3,"language":"JAVA","version":401,"flag":0,"code":28,"opaque":7,"extFields":{"a":"1","a":"2"}}"#;
    socket.write_all(&json_frame(header)).await.expect("write");
    let answer = read_answer(&mut socket).await;
    assert_eq!(answer.opaque, 7, "the last opaque is the request's");
    assert_eq!(answer.code, 0, "{}", answer.remark_str());
    assert!(
        !answer.body.is_empty(),
        "GET_BROKER_RUNTIME_INFO answered with the runtime table"
    );
}

/// What a forger puts in a logged value: a newline, then a line that looks like the server's.
const FORGED_TIME: &str = "2026-12-07T00:00:00.000000Z";

fn forged(field: &str) -> String {
    format!("{field}\n{FORGED_TIME} ERROR stellmq_namesrv: FORGED LINE\r\u{1b}[2K\u{2028}")
}

#[test]
fn no_value_a_client_sends_can_forge_a_line_of_the_name_servers_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (namesrv, addr) = spawn_mqnamesrv_in(dir.path());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = stellmq_testkit::RawClient::new(&addr);
        let broker = Registration::new(&forged("cluster"), &forged("broker"), &forged("addr"))
            .topics(&[&forged("topic")]);
        client.call_ok(broker.request()).await;
        let mut bad_crc = broker.request();
        bad_crc.ext_fields.insert("bodyCrc32", "12345");
        assert_ne!(
            client.call(bad_crc).await.code,
            0,
            "a CRC mismatch is refused"
        );
        let (namespace, key) = (forged("namespace"), forged("key"));
        let kv = [
            ("namespace", namespace.as_str()),
            ("key", key.as_str()),
            ("value", "v"),
        ];
        client
            .call_ok(request(RequestCode::PUT_KV_CONFIG, &kv))
            .await;
        client
            .call_ok(request(RequestCode::DELETE_KV_CONFIG, &kv[..2]))
            .await;
        let name = forged("broker");
        client
            .call(request(
                RequestCode::WIPE_WRITE_PERM_OF_BROKER,
                &[("brokerName", &name)],
            ))
            .await;
        let topic = forged("topic");
        client
            .call(request(
                RequestCode::DELETE_TOPIC_IN_NAMESRV,
                &[("topic", &topic), ("clusterName", &forged("cluster"))],
            ))
            .await;
        client.call_ok(broker.unregister_request()).await;
    });
    let events = [
        "BROKER_REGISTERED",
        "TOPIC_ROUTE_UPDATED",
        "CRC mismatch",
        "KV_CONFIG_PUT",
        "KV_CONFIG_DELETED",
        "BROKER_WRITE_PERM_WIPED",
        "TOPIC_DELETED",
        "BROKER_UNREGISTERED",
    ];
    wait_for_blocking("every event logged", TIMEOUT, || {
        let output = namesrv.output();
        events
            .iter()
            .all(|event| output.iter().any(|line| line.contains(event)))
    });
    assert_unforged(&namesrv.output(), events.len());

    // The console logs what its pages refuse, query text included.
    let mut console = stellmq_testkit::process::command("mqdashboard");
    console.args(["--port", "0", "-n", &addr]);
    let (console, console_addr) = Process::spawn_until(console, |line| {
        let rest = line.split("CONSOLE_STARTED").nth(1)?;
        let addr = rest.split("addr=").nth(1)?;
        addr.split_whitespace().next().map(str::to_owned)
    });
    let console_addr = console_addr.parse().expect("the console's address");
    let forged_time = "x%0A2026-12-07T00:00:00.000000Z%20ERROR%20FORGED%20LINE%0D%1B%E2%80%A8y";
    runtime.block_on(async {
        let page = http_get(
            console_addr,
            &format!("/messages?by=time&topic=T&end={forged_time}"),
        )
        .await;
        assert_eq!(page.status, 400, "refused: {}", page.body);
    });
    wait_for_blocking("the refusal logged", TIMEOUT, || {
        console
            .output()
            .iter()
            .any(|line| line.contains("CONSOLE_REQUEST_FAILED"))
    });
    assert_unforged(&console.output(), 1);
}

/// No line of `output` is forged or holds a raw control character, and at least `at_least`
/// lines carry a forged value, escaped in place.
fn assert_unforged(output: &[String], at_least: usize) {
    let carrying: Vec<&String> = output.iter().filter(|l| l.contains("FORGED")).collect();
    assert!(
        carrying.len() >= at_least,
        "the forged values were logged:\n{}",
        output.join("\n")
    );
    for line in output {
        assert!(
            !line.starts_with(FORGED_TIME) && !line.contains('\r') && !line.contains('\u{1b}'),
            "a forged line or control character reached the log: {line:?}"
        );
    }
    for line in carrying {
        assert!(
            line.contains(&format!("\\n{FORGED_TIME}")) && line.contains("\\u{2028}"),
            "escaped in place: {line:?}"
        );
    }
}

/// `field` (`VmHWM`, `RssAnon`, ...) of `/proc/<pid>/status`, in KiB.
fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// A REGISTER_BROKER of `broker` whose compressed body is `body`.
fn compressed_registration(broker: &str, body: bytes::Bytes) -> RemotingCommand {
    let mut request = Registration::new("C", broker, "127.0.0.1:1").compressed_request();
    request.ext_fields.insert("bodyCrc32", "0");
    request.with_body(body)
}

/// zlib of `inflated` zero bytes.
fn zlib_of_zeros(inflated: usize) -> bytes::Bytes {
    use std::io::Write as _;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..inflated >> 20 {
        encoder.write_all(&zeros).expect("vec");
    }
    encoder.finish().expect("vec").into()
}

#[test]
fn compressed_registrations_cannot_make_the_name_server_hold_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (namesrv, addr) = spawn_mqnamesrv_in(dir.path());
    let pid = namesrv.id();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let before = proc_status_kib(pid, "RssAnon");
    let before_rss = proc_status_kib(pid, "VmRSS");
    let bomb = zlib_of_zeros(96 << 20);
    assert!(bomb.len() < 200_000, "{} bytes", bomb.len());
    let bombs: Vec<RemotingCommand> = (0..4)
        .map(|i| compressed_registration(&format!("b{i}"), bomb.clone()))
        .collect();
    runtime.block_on(async {
        // Four at once, each on a connection of its own, twice.
        for _ in 0..2 {
            let answers = bombs.iter().cloned().map(|bomb| {
                let addr = addr.clone();
                tokio::spawn(async move { stellmq_testkit::RawClient::new(&addr).call(bomb).await })
            });
            for answer in answers {
                let answer = answer.await.expect("answered");
                assert_ne!(answer.code, 0, "a bomb is refused");
                assert!(!answer.remark_str().is_empty(), "with a reason");
            }
        }
        // A real compressed registration still goes through.
        let topics: Vec<String> = (0..2000).map(|i| format!("Topic{i}")).collect();
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        let real = Registration::new("C", "real", "127.0.0.1:2").topics(&names);
        let client = stellmq_testkit::RawClient::new(&addr);
        client.call_ok(real.compressed_request()).await;
    });
    let peak = proc_status_kib(pid, "VmHWM");
    let after = proc_status_kib(pid, "RssAnon");
    eprintln!(
        "name server memory: RssAnon {before} KiB before, {after} KiB after; VmRSS {before_rss} KiB before, VmHWM {peak} KiB"
    );
    assert!(
        peak < before_rss + 48 * 1024,
        "at most a few MiB more at the peak: {before_rss} KiB before, peak {peak} KiB"
    );
    assert!(
        after < before + 24 * 1024,
        "memory given back: {before} KiB before, {after} KiB after"
    );
}

/// The CommitLog offset of an acknowledged send (from its offsetMsgId).
fn stored_at(answer: &RemotingCommand) -> i64 {
    let h = SendMessageResponseHeader::from_ext_fields(&answer.ext_fields).expect("send header");
    id::decode_offset_msg_id(&h.msg_id).expect("offsetMsgId").1
}

#[tokio::test]
async fn a_send_back_of_a_message_that_claims_endless_retries_is_answered() {
    let stack = Stack::start().await;
    // The reconsume count a client sent is stored as it came; sending the message back must
    // not overflow it (netfuzz found `reconsume + 1` panicking in a debug broker).
    for reconsume in [i32::MAX, i32::MAX - 2, -1] {
        let mut header = send_header("Endless", 0, &[]);
        header.reconsume_times = Some(reconsume);
        let send = RemotingCommand::request(RequestCode::SEND_MESSAGE, header.to_ext_fields())
            .with_body("again");
        let sent = stack.call(send).await;
        assert_eq!(sent.code, 0, "{}", sent.remark_str());
        let offset = stored_at(&sent).to_string();
        for (delay_level, max) in [("0", "16"), ("0", &*i32::MAX.to_string()), ("3", "16")] {
            let back = request(
                RequestCode::CONSUMER_SEND_MSG_BACK,
                &[
                    ("offset", &offset),
                    ("group", "EndlessGroup"),
                    ("delayLevel", delay_level),
                    ("maxReconsumeTimes", max),
                ],
            );
            let answer = stack.call(back).await;
            assert_eq!(
                answer.code,
                0,
                "reconsume {reconsume}, level {delay_level}, max {max}: {}",
                answer.remark_str()
            );
        }
    }
}
