//! One in-process server playing name server and broker for the client's tests: routes
//! every topic to itself, answers sends, pulls, offsets and the ACL admin requests, and
//! records every request it gets.
#![allow(dead_code)] // each test binary uses part of it

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_client::SessionCredentials;
use stellmq_remoting::net::{
    Lane, ProcessFuture, RemotingServer, RequestContext, RequestProcessor, ServerConfig,
    ServerHandle,
};
use stellmq_remoting::protocol::signature::{verify, Coverage, ACCESS_KEY, SIGNATURE};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

pub const ACCESS: &str = "rocketmq2";
pub const SECRET: &str = "12345678";
const WAIT: Duration = Duration::from_secs(10);

/// Name server and broker in one: routes every topic to itself, takes sends, records all.
pub struct FakeCluster {
    pub addr: Mutex<String>,
    pub seen: Mutex<Vec<RemotingCommand>>,
}

impl FakeCluster {
    pub fn addr(&self) -> String {
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
            Some(RequestCode::GET_BROKER_CLUSTER_ACL_INFO) => {
                let mut r = request.success_to();
                let fields = &mut r.ext_fields;
                fields.insert("version", r#"{"counter":2,"stateVersion":0,"timestamp":0}"#);
                fields.insert(
                    "allAclFileVersion",
                    r#"{"/home/rocketmq/conf/plain_acl.yml":{"counter":2,"stateVersion":0,"timestamp":0}}"#,
                );
                fields.insert("brokerName", "b");
                fields.insert("brokerAddr", self.addr());
                fields.insert("clusterName", "c");
                r
            }
            Some(RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG) => request.success_to().with_body(
                &br#"{"globalWhiteAddrs":["10.10.103.*"],"plainAccessConfigs":[{"accessKey":"rocketmq2","secretKey":"12345678","admin":true}]}"#[..],
            ),
            Some(RequestCode::GET_BROKER_CLUSTER_INFO) => {
                let addr = self.addr();
                request.success_to().with_body(
                    format!(r#"{{"brokerAddrTable":{{"b":{{"cluster":"c","brokerName":"b","brokerAddrs":{{0:"{addr}",1:"127.0.0.1:1"}}}}}},"clusterAddrTable":{{"c":["b"]}}}}"#)
                        .into_bytes(),
                )
            }
            Some(RequestCode::DELETE_ACL_CONFIG)
                if request.ext_fields.get("accessKey") == Some("unknown") =>
            {
                let mut r = request.success_to();
                r.code = ResponseCode::DELETE_ACL_CONFIG_FAILED.as_i32();
                r.remark = Some("no such account".into());
                r
            }
            _ => request.success_to(),
        }
    }

    pub fn codes(&self) -> BTreeSet<i32> {
        self.seen.lock().iter().map(|r| r.code).collect()
    }

    pub async fn wait_for_code(&self, code: RequestCode) {
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

pub async fn start() -> (ServerHandle, Arc<FakeCluster>) {
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

pub fn credentials() -> Option<SessionCredentials> {
    Some(SessionCredentials::new(ACCESS, SECRET))
}

/// Every request recorded carries the access key and a signature the secret verifies.
pub fn assert_all_signed(fake: &FakeCluster) {
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
