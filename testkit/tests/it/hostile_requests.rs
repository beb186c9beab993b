//! Hostile input, second round (#42): text that cannot be sliced where a decoder once sliced
//! it, JSON headers with repeated keys, and the answers a live broker gives to both.

use bytes::BytesMut;
use stellmq_remoting::protocol::body::{fastjson, TopicConfigSerializeWrapper};
use stellmq_remoting::protocol::{frame, RemotingCommand, RequestCode};
use stellmq_testkit::{request, Stack};
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
        let read = tokio::time::timeout(stellmq_testkit::TIMEOUT, socket.read_buf(&mut buf))
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
