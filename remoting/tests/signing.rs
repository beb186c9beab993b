//! A client with plain-ACL credentials signs every request it sends (sync, async, oneway),
//! after the header and body are final; a client without them adds nothing.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use stellmq_remoting::net::{
    ClientConfig, Lane, ProcessFuture, RemotingClient, RemotingServer, RequestContext,
    RequestProcessor, ServerConfig, ServerHandle,
};
use stellmq_remoting::protocol::signature::{
    verify, Coverage, SessionCredentials, ACCESS_KEY, SECURITY_TOKEN, SIGNATURE,
};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

const T: Duration = Duration::from_secs(10);

/// Keeps every request it gets and answers SUCCESS (nothing to oneway requests).
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<RemotingCommand>>,
    arrived: tokio::sync::Notify,
}

impl RequestProcessor for Recorder {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let answer = (!request.is_oneway()).then(|| request.success_to());
        self.seen.lock().push(request);
        self.arrived.notify_waiters();
        Box::pin(async move { Ok(answer) })
    }
}

impl Recorder {
    async fn wait_for(&self, count: usize) -> Vec<RemotingCommand> {
        let deadline = tokio::time::Instant::now() + T;
        loop {
            let notified = self.arrived.notified();
            {
                let seen = self.seen.lock();
                if seen.len() >= count {
                    return seen.clone();
                }
            }
            assert!(
                tokio::time::timeout_at(deadline, notified).await.is_ok(),
                "only {} of {count} requests arrived",
                self.seen.lock().len()
            );
        }
    }
}

async fn start(recorder: Arc<Recorder>) -> ServerHandle {
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: "127.0.0.1:0".parse().expect("addr"),
        ..ServerConfig::default()
    });
    server.register(
        &[
            RequestCode::SEND_MESSAGE,
            RequestCode::HEART_BEAT,
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
        ],
        recorder,
        Lane::new("test", 64, 100_000),
    );
    server.start().await.expect("server starts")
}

fn request(code: RequestCode, topic: &str, body: &'static [u8]) -> RemotingCommand {
    let fields: ExtFields = [("topic", topic), ("queueId", "1")].into_iter().collect();
    RemotingCommand::request(code, fields).with_body(Bytes::from_static(body))
}

fn signed_by(request: &RemotingCommand, secret: &str) -> bool {
    let Some(claimed) = request.ext_fields.get(SIGNATURE) else {
        return false;
    };
    verify(
        secret,
        &request.ext_fields,
        &request.body,
        Coverage::All,
        claimed,
    )
}

#[tokio::test]
async fn every_kind_of_request_is_signed_with_the_configured_credentials() {
    let recorder = Arc::new(Recorder::default());
    let server = start(recorder.clone()).await;
    let addr = server.local_addr().to_string();
    let mut credentials = SessionCredentials::new("rocketmq2", "12345678");
    credentials.security_token = Some("token-1".into());
    let client = RemotingClient::new(ClientConfig {
        credentials: Some(credentials),
        ..ClientConfig::default()
    });

    client
        .invoke(&addr, request(RequestCode::SEND_MESSAGE, "A", b"sync"), T)
        .await
        .expect("sync answer");
    let pending = client
        .start_request(&addr, request(RequestCode::HEART_BEAT, "B", b"async"))
        .await
        .expect("async sent");
    pending.wait(T).await.expect("async answer");
    client
        .invoke_oneway(
            &addr,
            request(RequestCode::GET_ROUTEINFO_BY_TOPIC, "C", b""),
        )
        .await
        .expect("oneway sent");

    let seen = recorder.wait_for(3).await;
    assert_eq!(seen.len(), 3);
    for r in &seen {
        assert_eq!(r.ext_fields.get(ACCESS_KEY), Some("rocketmq2"), "{r:?}");
        assert_eq!(r.ext_fields.get(SECURITY_TOKEN), Some("token-1"));
        assert!(signed_by(r, "12345678"), "valid signature on {r:?}");
        assert!(!signed_by(r, "12345679"), "a wrong secret does not verify");
    }
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_without_credentials_sends_no_signature() {
    let recorder = Arc::new(Recorder::default());
    let server = start(recorder.clone()).await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default());
    client
        .invoke(&addr, request(RequestCode::SEND_MESSAGE, "A", b"x"), T)
        .await
        .expect("answer");
    let seen = recorder.wait_for(1).await;
    assert_eq!(seen[0].ext_fields.get(ACCESS_KEY), None);
    assert_eq!(seen[0].ext_fields.get(SIGNATURE), None);
    client.shutdown().await;
    server.shutdown().await;
}
