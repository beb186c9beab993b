//! POP against the `mqbroker` binary killed with SIGKILL while messages are in flight: after
//! the restart, acked messages stay acked (even though consumerOffset.json was not written
//! since the POP), and the unacked ones come back once their invisible time passed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stellmq_client::pop::{AckStatus, PopClient, PopRequest, PopResult, PopStatus};
use stellmq_testkit::process::spawn_mqbroker;
use stellmq_testkit::{NameServer, RawClient};

const T: Duration = Duration::from_secs(10);

fn write_conf(dir: &Path, store: &Path) -> PathBuf {
    let conf = dir.join("broker.conf");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\n\
             mappedFileSizeCommitLog=1048576\nmaxMessageSize=65536\n\
             mappedFileSizeConsumeQueue=20000\nmaxHashSlotNum=1000\nmaxIndexNum=4000\n\
             diskSpaceWarningLevelRatio=100\ndiskMaxUsedSpaceRatio=100\n\
             diskSpaceCleanForciblyRatio=100\nreviveInterval=100\n\
             flushConsumerOffsetInterval=600000\n",
            store.display()
        ),
    )
    .expect("conf");
    conf
}

fn bodies(r: &PopResult) -> Vec<String> {
    let mut out: Vec<String> = r
        .messages
        .iter()
        .map(|m| String::from_utf8_lossy(&m.message.body).into_owned())
        .collect();
    out.sort();
    out
}

async fn pop_until(
    client: &PopClient,
    addr: &str,
    req: &PopRequest,
    n: usize,
    within: Duration,
) -> Vec<String> {
    let start = Instant::now();
    let mut got = Vec::new();
    while got.len() < n && start.elapsed() < within {
        let r = client.pop(addr, req, T).await.expect("POP answered");
        got.extend(bodies(&r));
        if r.status != PopStatus::Found {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    got.sort();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_with_messages_in_flight_keeps_acks_and_revives_the_rest() {
    let ns = NameServer::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let conf = write_conf(dir.path(), &dir.path().join("store"));
    let (mut broker, addr) = spawn_mqbroker(&conf, ns.addr()).await;
    let raw = RawClient::new(&addr);
    for i in 0..4 {
        let r = raw.send("PopCrash", 0, &format!("m{i}"), &[]).await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
    }
    let client = PopClient::new(Default::default());
    let req = PopRequest::new("broker-a", "g", "PopCrash").invisible_time_ms(3_000);
    let start = Instant::now();
    let mut popped = Vec::new();
    while popped.len() < 4 && start.elapsed() < T {
        let r = client.pop(&addr, &req, T).await.expect("POP answered");
        popped.extend(r.messages);
    }
    assert_eq!(popped.len(), 4);
    let mut acked = Vec::new();
    for m in popped.iter().take(2) {
        let status = client
            .ack(&addr, "g", "PopCrash", &m.extra_info, T)
            .await
            .expect("ack");
        assert_eq!(status, AckStatus::Ok);
        acked.push(String::from_utf8_lossy(&m.message.body).into_owned());
    }
    let mut unacked: Vec<String> = popped
        .iter()
        .skip(2)
        .map(|m| String::from_utf8_lossy(&m.message.body).into_owned())
        .collect();
    unacked.sort();
    raw.shutdown().await;
    broker.kill();

    let (mut broker, addr) = spawn_mqbroker(&conf, ns.addr()).await;
    let client = PopClient::new(Default::default());
    let r = client.pop(&addr, &req, T).await.expect("POP answered");
    assert_eq!(
        r.status,
        PopStatus::NoNewMessage,
        "nothing popped again right after the restart: {:?}",
        bodies(&r)
    );
    let back = pop_until(&client, &addr, &req, 2, Duration::from_secs(8)).await;
    assert_eq!(
        back, unacked,
        "the unacked come back, the acked ({acked:?}) do not"
    );
    broker.kill();
    ns.shutdown().await;
}
