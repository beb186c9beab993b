//! What must hold through the attack: messages the broker acknowledged before it read back
//! intact at their offsets afterwards, and both servers answering a health request from a
//! connection of their own every half second.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::headers::{CommandHeader, SendMessageResponseHeader};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};
use stellmq_testkit::{request, send_request, Pull};

use super::grpc;
use super::report::{Integrity, Report};

/// The topic of the canary messages; no fuzzed request names it.
pub const CANARY_TOPIC: &str = "NetFuzzCanary";
const QUEUES: i32 = 4;
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// An acknowledged canary message: where the broker said it stored it, and its body.
pub struct Canary {
    queue_id: i32,
    queue_offset: i64,
    body: String,
}

pub async fn send_canaries(broker: &str, n: usize) -> Result<Vec<Canary>, String> {
    let client = RemotingClient::new(ClientConfig::default());
    let queues = QUEUES.to_string();
    let create = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", CANARY_TOPIC),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", &queues),
            ("writeQueueNums", &queues),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
        ],
    );
    client
        .invoke_ok(broker, create, CALL_TIMEOUT)
        .await
        .map_err(|e| format!("creating {CANARY_TOPIC}: {e}"))?;
    let mut sent = Vec::with_capacity(n);
    for i in 0..n {
        let queue_id = i as i32 % QUEUES;
        let body = format!("canary {i} \u{e9}\u{1f600}");
        let send = send_request(
            CANARY_TOPIC,
            queue_id,
            body.as_bytes(),
            &[("KEYS", "canary")],
        );
        let answer = client
            .invoke_ok(broker, send, CALL_TIMEOUT)
            .await
            .map_err(|e| format!("canary {i}: {e}"))?;
        let header = SendMessageResponseHeader::from_ext_fields(&answer.ext_fields)
            .map_err(|e| format!("canary {i}: {e}"))?;
        sent.push(Canary {
            queue_id: header.queue_id,
            queue_offset: header.queue_offset,
            body,
        });
    }
    Ok(sent)
}

/// Reads every canary queue back and compares it with what was acknowledged.
pub async fn check_canaries(broker: &str, canaries: &[Canary]) -> Integrity {
    let client = RemotingClient::new(ClientConfig::default());
    // A fuzzed UPDATE_BROKER_CONFIG may have taken the broker's read permission away (an
    // admin's right, without ACL); give it back before reading.
    let permission = RemotingCommand::request(RequestCode::UPDATE_BROKER_CONFIG, ExtFields::new())
        .with_body("brokerPermission=6\n");
    let _ = client.invoke(broker, permission, CALL_TIMEOUT).await;
    let mut stored: BTreeMap<(i32, i64), String> = BTreeMap::new();
    let mut problems = Vec::new();
    for queue_id in 0..QUEUES {
        let mut offset = 0;
        loop {
            let pull = Pull::new("NetFuzzCanaryReader", CANARY_TOPIC, queue_id, offset)
                .subscribe("*")
                .to_request();
            let answer = match client.invoke(broker, pull, CALL_TIMEOUT).await {
                Ok(answer) => answer,
                Err(e) => {
                    problems.push(format!("pulling queue {queue_id} at {offset}: {e}"));
                    break;
                }
            };
            if answer.code != 0 {
                break;
            }
            let records = match MessageRecord::decode_all(answer.body.clone(), true) {
                Ok(records) => records,
                Err(e) => {
                    problems.push(format!("queue {queue_id} at {offset}: {e}"));
                    break;
                }
            };
            for record in &records {
                let body = String::from_utf8_lossy(&record.body).into_owned();
                stored.insert((queue_id, record.head.queue_offset), body);
            }
            let next = answer
                .ext_fields
                .get("nextBeginOffset")
                .and_then(|v| v.parse().ok())
                .unwrap_or(offset);
            if next <= offset || records.is_empty() {
                break;
            }
            offset = next;
        }
    }
    let mut intact = 0;
    for canary in canaries {
        match stored.get(&(canary.queue_id, canary.queue_offset)) {
            Some(body) if *body == canary.body => intact += 1,
            Some(body) => problems.push(format!(
                "queue {} offset {}: {body:?}, acknowledged as {:?}",
                canary.queue_id, canary.queue_offset, canary.body
            )),
            None => problems.push(format!(
                "queue {} offset {}: missing",
                canary.queue_id, canary.queue_offset
            )),
        }
    }
    Integrity {
        acknowledged: canaries.len(),
        intact,
        problems,
    }
}

/// Asks both servers for something harmless every half second until `deadline`; records
/// the slowest answer and every request not answered within 5 s.
pub async fn watch_health(
    namesrv: String,
    broker: String,
    proxy: String,
    deadline: Instant,
    report: Arc<Mutex<Report>>,
) {
    let client = RemotingClient::new(ClientConfig::default());
    let mut proxy_connection: Option<grpc::Connection> = None;
    while Instant::now() < deadline {
        let started = Instant::now();
        let outcome = match proxy_connection.as_mut() {
            Some(open) => Ok(open),
            None => grpc::Connection::open(&proxy)
                .await
                .map(|open| proxy_connection.insert(open)),
        };
        let outcome = match outcome {
            Ok(open) => {
                open.call(
                    &grpc::query_route(CANARY_TOPIC),
                    "netfuzz-health",
                    CALL_TIMEOUT,
                )
                .await
            }
            Err(_) => grpc::CallOutcome::Reset,
        };
        {
            let mut report = report.lock();
            report.health_checks += 1;
            report.slowest_health = report.slowest_health.max(started.elapsed());
            if outcome != grpc::CallOutcome::Status(0) {
                proxy_connection = None;
                report.findings.push(format!(
                    "mqproxy answered its health request (QueryRoute of {CANARY_TOPIC}) with {outcome:?}"
                ));
            }
        }
        for (server, addr, code) in [
            ("mqnamesrv", &namesrv, RequestCode::GET_BROKER_CLUSTER_INFO),
            ("mqbroker", &broker, RequestCode::GET_BROKER_RUNTIME_INFO),
        ] {
            let started = Instant::now();
            let answer = client
                .invoke(
                    addr,
                    RemotingCommand::request(code, ExtFields::new()),
                    CALL_TIMEOUT,
                )
                .await;
            let took = started.elapsed();
            let mut report = report.lock();
            report.health_checks += 1;
            report.slowest_health = report.slowest_health.max(took);
            match answer {
                Ok(answer) if answer.code == 0 => {}
                Ok(answer) => report.findings.push(format!(
                    "{server} answered its health request with {}: {}",
                    answer.code,
                    answer.remark_str()
                )),
                Err(e) => report
                    .findings
                    .push(format!("{server} did not answer its health request: {e}")),
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
