//! SEND_REPLY_MESSAGE_V2 over TCP: a reply is pushed to the requesting client's connection
//! (found by REPLY_TO_CLIENT) and stored in `<cluster>_REPLY_TOPIC`; a reply for a client
//! that is not connected is a clear error.

use std::sync::Arc;
use std::time::Instant;

use stellmq_remoting::net::{Channel, ClientConfig, InboundHandler, RemotingClient};
use stellmq_remoting::protocol::body::MessageModel;
use stellmq_remoting::protocol::headers::{
    CommandHeader, ReplyMessageRequestHeader, SendMessageRequestHeaderV2,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{heartbeat, send_header, Stack, TIMEOUT as T};
use tokio::sync::mpsc;

/// A requester: answers PUSH_REPLY_MESSAGE_TO_CLIENT and passes the pushes on.
struct Requester(mpsc::UnboundedSender<RemotingCommand>);

impl InboundHandler for Requester {
    fn on_request(&self, channel: Channel, request: RemotingCommand, _at: Instant) {
        if request.request_code_typed() == Some(RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT) {
            channel.try_send(request.success_to());
            let _ = self.0.send(request);
        }
    }
}

fn reply_request(requester: &str) -> RemotingCommand {
    let props = [
        ("CORRELATION_ID", "corr-1"),
        ("REPLY_TO_CLIENT", requester),
        ("MSG_TYPE", "reply"),
    ];
    let header: SendMessageRequestHeaderV2 =
        send_header("DefaultCluster_REPLY_TOPIC", 0, &props).into();
    RemotingCommand::request(RequestCode::SEND_REPLY_MESSAGE_V2, header.to_ext_fields())
        .with_body(&b"the answer"[..])
}

#[tokio::test]
async fn replies_are_pushed_to_the_requester_and_stored() {
    let stack = Stack::start().await;
    let missing = stack.call(reply_request("127.0.0.1@nobody")).await;
    assert_eq!(missing.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(
        missing
            .remark_str()
            .contains("channel of <127.0.0.1@nobody> not found"),
        "{}",
        missing.remark_str()
    );

    let (tx, mut pushes) = mpsc::unbounded_channel();
    let requester = RemotingClient::with_handler(ClientConfig::default(), Arc::new(Requester(tx)));
    let heartbeat = heartbeat("127.0.0.1@asker", "unused", &[], MessageModel::Clustering);
    assert_eq!(
        requester
            .invoke(stack.addr(), heartbeat, T)
            .await
            .expect("heartbeat")
            .code,
        0
    );
    let r = stack.call(reply_request("127.0.0.1@asker")).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let push = tokio::time::timeout(T, pushes.recv())
        .await
        .expect("pushed in time")
        .expect("push");
    assert_eq!(&push.body[..], b"the answer");
    let h = ReplyMessageRequestHeader::from_ext_fields(&push.ext_fields).expect("header");
    let props = h.properties.unwrap_or_default();
    assert!(props.contains("CORRELATION_ID\u{1}corr-1"), "{props:?}");
    assert!(props.contains("PUSH_REPLY_TIME\u{1}"), "{props:?}");
    // storeReplyMessageEnable keeps every reply, the undeliverable one too (as RocketMQ).
    let stored = stack
        .pull_until("reply-reader", "DefaultCluster_REPLY_TOPIC", 0, 2)
        .await;
    assert_eq!(stored.len(), 2);
    requester.shutdown().await;
    stack.stop().await;
}
