//! A client configured with plain-ACL credentials signs every request it sends: route
//! lookups, sends (sync and oneway), pulls, heartbeats, unregistrations and admin calls. One
//! in-process server plays name server and broker and checks each request it records with
//! `signature::verify`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_client::admin::AdminClient;
use stellmq_client::SessionCredentials;
use stellmq_client::{ConsumerConfig, LitePullConsumer, Message, Producer, ProducerConfig};
use stellmq_remoting::net::{
    Lane, ProcessFuture, RemotingServer, RequestContext, RequestProcessor, ServerConfig,
    ServerHandle,
};
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::signature::{verify, Coverage, ACCESS_KEY, SIGNATURE};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

const ACCESS: &str = "rocketmq2";
const SECRET: &str = "12345678";
const WAIT: Duration = Duration::from_secs(10);

/// Name server and broker in one: routes every topic to itself, takes sends, records all.
struct FakeCluster {
    addr: Mutex<String>,
    seen: Mutex<Vec<RemotingCommand>>,
}

impl FakeCluster {
    fn addr(&self) -> String {
        self.addr.lock().clone()
    }

    fn route_json(&self) -> String {
        let addr = self.addr();
        format!(
            r#"{{"queueDatas":[{{"brokerName":"b","readQueueNums":1,"writeQueueNums":1,"perm":6,"topicSysFlag":0}}],"brokerDatas":[{{"cluster":"c","brokerName":"b","brokerAddrs":{{0:"{addr}"}}}}]}}"#
        )
    }

    fn answer(&self, request: &RemotingCommand) -> RemotingCommand {
        match RequestCode::try_from(request.code).ok() {
            Some(RequestCode::GET_ROUTEINFO_BY_TOPIC) => request
                .success_to()
                .with_body(self.route_json().into_bytes()),
            Some(RequestCode::SEND_MESSAGE | RequestCode::SEND_MESSAGE_V2) => {
                let mut r = request.success_to();
                r.ext_fields
                    .insert("msgId", "7F00000100002A9F0000000000000000");
                r.ext_fields.insert("queueId", "0");
                r.ext_fields.insert("queueOffset", "0");
                r
            }
            Some(RequestCode::PULL_MESSAGE) => {
                let mut r = request.success_to();
                r.code = ResponseCode::PULL_NOT_FOUND.as_i32();
                for key in ["nextBeginOffset", "minOffset", "maxOffset"] {
                    r.ext_fields.insert(key, "0");
                }
                r.ext_fields.insert("suggestWhichBrokerId", "0");
                r
            }
            Some(RequestCode::QUERY_CONSUMER_OFFSET) => {
                let mut r = request.success_to();
                r.ext_fields.insert("offset", "0");
                r
            }
            _ => request.success_to(),
        }
    }

    fn codes(&self) -> BTreeSet<i32> {
        self.seen.lock().iter().map(|r| r.code).collect()
    }

    async fn wait_for_code(&self, code: RequestCode) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !self.codes().contains(&code.as_i32()) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {code:?} request arrived; seen {:?}",
                self.codes()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl RequestProcessor for FakeCluster {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let answer = (!request.is_oneway()).then(|| self.answer(&request));
        self.seen.lock().push(request);
        Box::pin(async move { Ok(answer) })
    }
}

async fn start() -> (ServerHandle, Arc<FakeCluster>) {
    let fake = Arc::new(FakeCluster {
        addr: Mutex::new(String::new()),
        seen: Mutex::new(Vec::new()),
    });
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: "127.0.0.1:0".parse().expect("addr"),
        ..ServerConfig::default()
    });
    server.register_default(fake.clone(), Lane::new("fake", 256, 100_000));
    let handle = server.start().await.expect("server starts");
    *fake.addr.lock() = handle.local_addr().to_string();
    (handle, fake)
}

fn credentials() -> Option<SessionCredentials> {
    Some(SessionCredentials::new(ACCESS, SECRET))
}

/// Every request recorded carries the access key and a signature the secret verifies.
fn assert_all_signed(fake: &FakeCluster) {
    let seen = fake.seen.lock();
    assert!(!seen.is_empty());
    for r in seen.iter() {
        assert_eq!(
            r.ext_fields.get(ACCESS_KEY),
            Some(ACCESS),
            "code {}",
            r.code
        );
        let claimed = r.ext_fields.get(SIGNATURE).unwrap_or_default();
        assert!(
            verify(SECRET, &r.ext_fields, &r.body, Coverage::All, claimed),
            "code {} carries a valid signature",
            r.code
        );
    }
}

#[tokio::test]
async fn producer_requests_are_signed() {
    let (server, fake) = start().await;
    let producer = Producer::start(ProducerConfig {
        namesrv_addr: fake.addr(),
        group: "signing_producer".into(),
        instance_name: "signing-producer".into(),
        credentials: credentials(),
        ..ProducerConfig::default()
    })
    .await
    .expect("producer starts");
    producer
        .send(Message::new("SignedTopic", "sync").with_keys(["k1"]))
        .await
        .expect("sync send");
    producer
        .send_oneway(Message::new("SignedTopic", "oneway"))
        .await
        .expect("oneway send");
    producer.shutdown().await;
    fake.wait_for_code(RequestCode::UNREGISTER_CLIENT).await;
    let codes = fake.codes();
    for code in [
        RequestCode::GET_ROUTEINFO_BY_TOPIC,
        RequestCode::SEND_MESSAGE_V2,
    ] {
        assert!(codes.contains(&code.as_i32()), "{code:?} in {codes:?}");
    }
    assert!(
        fake.seen.lock().iter().any(|r| r.is_oneway()),
        "a oneway send"
    );
    assert_all_signed(&fake);
    server.shutdown().await;
}

#[tokio::test]
async fn consumer_requests_are_signed() {
    let (server, fake) = start().await;
    let offsets = tempfile::tempdir().expect("temp dir");
    let consumer = LitePullConsumer::assign(
        ConsumerConfig {
            namesrv_addr: fake.addr(),
            group: "signing_consumer".into(),
            instance_name: "signing-consumer".into(),
            offset_store_dir: offsets.path().to_owned(),
            credentials: credentials(),
            ..ConsumerConfig::default()
        },
        &[MessageQueue {
            broker_name: "b".into(),
            queue_id: 0,
            topic: "SignedTopic".into(),
        }],
        true,
    )
    .await
    .expect("consumer starts");
    fake.wait_for_code(RequestCode::PULL_MESSAGE).await;
    consumer.shutdown().await;
    assert_all_signed(&fake);
    server.shutdown().await;
}

#[tokio::test]
async fn admin_requests_are_signed() {
    let (server, fake) = start().await;
    let admin = AdminClient::with_credentials(&fake.addr(), credentials()).expect("admin client");
    let route = admin.topic_route("SignedTopic").await.expect("route");
    assert_eq!(route.broker_datas.len(), 1);
    admin
        .update_broker_config(&fake.addr(), "k", "v")
        .await
        .expect("config update");
    admin.shutdown().await;
    assert_eq!(fake.seen.lock().len(), 2);
    assert_all_signed(&fake);
    server.shutdown().await;
}
