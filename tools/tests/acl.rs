//! `mqadmin`'s ACL commands and signing, against one in-process server that plays name
//! server and broker, answers the ACL admin requests, and records what it gets.

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use stellmq_remoting::net::{
    Lane, ProcessFuture, RemotingServer, RequestContext, RequestProcessor, ServerConfig,
    ServerHandle,
};
use stellmq_remoting::protocol::signature::{verify, Coverage, ACCESS_KEY, SIGNATURE};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

const BIN: &str = env!("CARGO_BIN_EXE_mqadmin");

#[derive(Default)]
struct FakeBroker {
    addr: Mutex<String>,
    seen: Mutex<Vec<RemotingCommand>>,
}

impl FakeBroker {
    fn answer(&self, request: &RemotingCommand) -> RemotingCommand {
        let addr = self.addr.lock().clone();
        match RequestCode::try_from(request.code).ok() {
            Some(RequestCode::GET_BROKER_CLUSTER_ACL_INFO) => {
                let mut r = request.success_to();
                let f = &mut r.ext_fields;
                f.insert("version", r#"{"counter":7,"stateVersion":0,"timestamp":0}"#);
                f.insert(
                    "allAclFileVersion",
                    r#"{"/rmq/conf/plain_acl.yml":{"counter":7,"stateVersion":0,"timestamp":1700000000000}}"#,
                );
                f.insert("brokerName", "broker-a");
                f.insert("brokerAddr", addr);
                f.insert("clusterName", "DefaultCluster");
                r
            }
            Some(RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG) => request.success_to().with_body(
                &br#"{"globalWhiteAddrs":["10.10.103.*"],"plainAccessConfigs":[{"accessKey":"RocketMQ","secretKey":"12345678","admin":false,"topicPerms":["topicA=DENY"]}]}"#[..],
            ),
            Some(RequestCode::GET_BROKER_CLUSTER_INFO) => request.success_to().with_body(
                format!(r#"{{"brokerAddrTable":{{"broker-a":{{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{{0:"{addr}"}}}}}},"clusterAddrTable":{{"DefaultCluster":["broker-a"]}}}}"#)
                    .into_bytes(),
            ),
            _ => request.success_to(),
        }
    }
}

impl RequestProcessor for FakeBroker {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let answer = (!request.is_oneway()).then(|| self.answer(&request));
        self.seen.lock().push(request);
        Box::pin(async move { Ok(answer) })
    }
}

async fn start() -> (ServerHandle, Arc<FakeBroker>) {
    let fake = Arc::new(FakeBroker::default());
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: "127.0.0.1:0".parse().expect("addr"),
        ..ServerConfig::default()
    });
    server.register_default(fake.clone(), Lane::new("fake", 64, 100_000));
    let handle = server.start().await.expect("server starts");
    *fake.addr.lock() = handle.local_addr().to_string();
    (handle, fake)
}

/// Runs mqadmin with `home` as ROCKETMQ_HOME (no STELLMQ_HOME); (success, stdout, stderr).
async fn mqadmin(home: &Path, args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(BIN)
        .args(args)
        .env_remove("NAMESRV_ADDR")
        .env_remove("STELLMQ_HOME")
        .env("ROCKETMQ_HOME", home)
        .output()
        .await
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_tools_yml(home: &Path, text: &str) {
    std::fs::create_dir_all(home.join("conf")).expect("conf dir");
    std::fs::write(home.join("conf/tools.yml"), text).expect("tools.yml");
}

/// The requests with `code`, each checked to be signed by `access`/`secret`.
fn signed_requests(fake: &FakeBroker, code: RequestCode, access: &str, secret: &str) -> usize {
    let seen = fake.seen.lock();
    let matching: Vec<_> = seen.iter().filter(|r| r.code == code.as_i32()).collect();
    for r in &matching {
        assert_eq!(r.ext_fields.get(ACCESS_KEY), Some(access));
        let claimed = r.ext_fields.get(SIGNATURE).unwrap_or_default();
        assert!(verify(
            secret,
            &r.ext_fields,
            &r.body,
            Coverage::All,
            claimed
        ));
    }
    matching.len()
}

#[tokio::test]
async fn acl_commands_sign_with_tools_yml_and_print_as_rocketmq() {
    let (server, fake) = start().await;
    let addr = fake.addr.lock().clone();
    let home = tempfile::tempdir().expect("home");
    write_tools_yml(home.path(), "accessKey: rocketmq2\nsecretKey: 12345678\n");

    let (ok, out, err) = mqadmin(home.path(), &["getAclConfig", "-n", &addr, "-b", &addr]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("globalWhiteRemoteAddresses: [10.10.103.*]"),
        "{out}"
    );
    assert!(out.contains("  topicPerms        : [topicA=DENY]"), "{out}");
    assert_eq!(
        signed_requests(
            &fake,
            RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG,
            "rocketmq2",
            "12345678"
        ),
        1
    );

    let (ok, out, err) = mqadmin(
        home.path(),
        &[
            "clusterAclConfigVersion",
            "-n",
            &addr,
            "-c",
            "DefaultCluster",
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.starts_with("#Cluster Name "), "{out}");
    assert!(out.contains("/rmq/conf/plain_acl.yml  7 "), "{out}");
    assert!(
        out.contains("get cluster's plain access config version success."),
        "{out}"
    );
    assert_eq!(
        signed_requests(
            &fake,
            RequestCode::GET_BROKER_CLUSTER_INFO,
            "rocketmq2",
            "12345678"
        ),
        1,
        "the name server's answer is asked for signed too"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn flags_win_over_tools_yml() {
    let (server, fake) = start().await;
    let addr = fake.addr.lock().clone();
    let home = tempfile::tempdir().expect("home");
    write_tools_yml(home.path(), "accessKey: fromFile\nsecretKey: fileSecret\n");
    let args = [
        "updateAclConfig",
        "-n",
        &addr,
        "-c",
        "DefaultCluster",
        "-a",
        "newUser",
        "-s",
        "87654321",
        "-t",
        "topicA=PUB,topicB=SUB",
        "--accessKey",
        "adminKey",
        "--secretKey",
        "adminSecret",
    ];
    let (ok, out, err) = mqadmin(home.path(), &args).await;
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "create or update plain access config to {addr} success."
        )),
        "{out}"
    );
    assert!(
        out.contains("PlainAccessConfig{accessKey='newUser', whiteRemoteAddress='null', admin=false, defaultTopicPerm='null', defaultGroupPerm='null', topicPerms=[topicA=PUB, topicB=SUB], groupPerms=null}"),
        "{out}"
    );
    assert_eq!(
        signed_requests(
            &fake,
            RequestCode::UPDATE_AND_CREATE_ACL_CONFIG,
            "adminKey",
            "adminSecret"
        ),
        1
    );
    let create = fake
        .seen
        .lock()
        .iter()
        .find(|r| r.code == RequestCode::UPDATE_AND_CREATE_ACL_CONFIG.as_i32())
        .map(|r| r.ext_fields.clone())
        .expect("sent");
    // The header's `accessKey` is the account; the signer's `AccessKey` sits beside it.
    assert_eq!(create.get("accessKey"), Some("newUser"));
    assert_eq!(create.get("secretKey"), Some("87654321"));
    assert_eq!(create.get(ACCESS_KEY), Some("adminKey"));
    assert_eq!(create.get("topicPerms"), Some("topicA=PUB,topicB=SUB"));
    server.shutdown().await;
}

#[tokio::test]
async fn credential_mistakes_are_clear() {
    let home = tempfile::tempdir().expect("home");
    let (ok, _, err) = mqadmin(
        home.path(),
        &["topicList", "-n", "127.0.0.1:1", "--accessKey", "ak"],
    )
    .await;
    assert!(!ok);
    assert!(err.contains("--secretKey"), "{err}");
    write_tools_yml(home.path(), "accessKey: [unclosed\n");
    let (ok, _, err) = mqadmin(home.path(), &["topicList", "-n", "127.0.0.1:1"]).await;
    assert!(!ok);
    assert!(err.contains("tools.yml"), "{err}");
    let (ok, out, _) = mqadmin(home.path(), &["help", "updateAclConfig"]).await;
    assert!(ok);
    assert!(
        out.contains("-a <arg>") && out.contains("Set accessKey") && out.contains("--topicPerms"),
        "{out}"
    );
}
