//! `mqadmin startMonitoring` (RocketMQ's MonitorService) against an in-process name server
//! and broker: each round reports a group's undone messages per topic and its dead-letter
//! messages; `--rounds` ends the run, SIGTERM ends an unbounded one with status 0.

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use stellmq_client::AdminClient;
use stellmq_remoting::protocol::body::TopicConfig;
use stellmq_testkit::process::command;
use stellmq_testkit::Stack;

/// A group `mon-g` 3 messages behind on `Watched` with 2 messages in its DLQ.
async fn lagging_group() -> Stack {
    let stack = Stack::start().await;
    let broker = stack.addr();
    let admin = AdminClient::new(stack.ns_addr()).expect("admin");
    for topic in ["Watched", "%RETRY%mon-g", "%DLQ%mon-g"] {
        admin
            .create_topic(broker, &TopicConfig::with_queues(topic, 1, 1, 6))
            .await
            .expect("topic");
    }
    for (topic, n) in [("Watched", 3), ("%DLQ%mon-g", 2)] {
        for i in 0..n {
            admin
                .send(
                    broker,
                    topic,
                    0,
                    format!("m{i}").into_bytes().into(),
                    String::new(),
                )
                .await
                .expect("send");
        }
    }
    admin
        .update_consumer_offset(broker, "mon-g", "Watched", 0, 0)
        .await
        .expect("commit");
    admin.shutdown().await;
    stack.broker().register_now().await;
    stack
}

fn monitor(ns: &str, extra: &[&str]) -> std::process::Command {
    let mut c = command("mqadmin");
    c.args(["startMonitoring", "-n", ns, "--initialDelay", "0"])
        .args(extra)
        .env_remove("NAMESRV_ADDR");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_report_undone_and_dead_letter_messages() {
    let stack = lagging_group().await;
    let mut c = monitor(
        stack.ns_addr(),
        &["--roundInterval", "200", "--rounds", "2"],
    );
    let out = tokio::task::spawn_blocking(move || c.output())
        .await
        .expect("join")
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches("beginRound").count(), 2, "{text}");
    assert_eq!(text.matches("endRound").count(), 2, "{text}");
    assert!(
        text.contains("UndoneMsgs [consumerGroup=mon-g, topic=Watched, undoneMsgsTotal=3, undoneMsgsSingleMQ=3,"),
        "{text}"
    );
    assert!(
        text.contains("DlqMsgs [consumerGroup=mon-g, topic=%DLQ%mon-g, dlqMsgsTotal=2]"),
        "{text}"
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_monitoring_with_status_zero() {
    let stack = lagging_group().await;
    let mut c = monitor(stack.ns_addr(), &["--roundInterval", "100000"]);
    let mut child = c.stdout(Stdio::piped()).spawn().expect("spawn");
    let out = tokio::task::spawn_blocking(move || {
        // The first round's first line: the signal handler is installed by then.
        let mut stdout = child.stdout.take().expect("stdout");
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !String::from_utf8_lossy(&seen).contains("endRound") {
            match stdout.read(&mut byte) {
                Ok(1) => seen.push(byte[0]),
                _ => break,
            }
        }
        let pid = child.id().to_string();
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(killed.success());
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        let status = child.wait().expect("wait");
        (status, String::from_utf8_lossy(&seen).into_owned() + &rest)
    });
    let (status, text) = tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .expect("stops within 30 s")
        .expect("join");
    assert!(status.success(), "{status:?}\n{text}");
    assert!(text.contains("[MONITOR] stopped"), "{text}");
    stack.stop().await;
}
