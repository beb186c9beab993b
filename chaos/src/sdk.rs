//! Real RocketMQ clients that no one here wrote, as a second workload beside the Rust one:
//! the official C++ SDK (PyPI `rocketmq-client-python`, through the name server's routes) and
//! the official RocketMQ 5 Python client (PyPI `rocketmq-python-client`, gRPC through
//! mqproxy). Each runs as a script of `chaos/sdk/` in the client's namespace, under a Python
//! that has the SDK installed, and reports its sends and receipts as JSON lines; this side
//! time-stamps them on the run's clock.
//!
//! Neither SDK reports where a message was stored in a form every broker agrees on, so their
//! messages are checked by body: every acknowledged one is stored by the final master and
//! was received by the SDK's own consumer.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

use crate::ChaosError;

/// Which SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SdkKind {
    /// Apache RocketMQ's C++ SDK: remoting, routes from the name server.
    Cpp,
    /// Apache RocketMQ's Python client for RocketMQ 5: gRPC through mqproxy.
    Grpc,
}

impl SdkKind {
    fn script(self) -> PathBuf {
        let name = match self {
            SdkKind::Cpp => "cpp_client.py",
            SdkKind::Grpc => "grpc_client.py",
        };
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk").join(name)
    }
}

/// One acknowledged send of the SDK.
#[derive(Debug, Clone, Serialize)]
pub struct SdkAck {
    pub body: String,
    /// Milliseconds since the run began (the send's start is its ack less its latency).
    pub sent_at: u64,
    pub acked_at: u64,
}

/// What the SDK reported.
#[derive(Default)]
pub struct SdkJournal {
    pub acks: Vec<SdkAck>,
    pub failures: u64,
    /// Bodies its consumer received, with how many times.
    pub received: HashMap<String, u32>,
    pub receive_errors: u64,
    started: bool,
    stopped_sending: bool,
}

/// The SDK's script, running.
pub struct SdkClient {
    pub kind: SdkKind,
    pub journal: Arc<Mutex<SdkJournal>>,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: PathBuf,
}

impl SdkClient {
    /// Starts the script under `python` in namespace `netns`, against `endpoint` (the name
    /// server for the C++ SDK, the proxy for gRPC); returns once it has started its producer
    /// and consumer.
    pub async fn start(
        kind: SdkKind,
        python: &Path,
        netns: &str,
        endpoint: &str,
        topic: &str,
        log_dir: &Path,
        epoch: Instant,
    ) -> Result<SdkClient, ChaosError> {
        let stderr = log_dir.join(format!("sdk-{kind:?}.log"));
        let log = File::create(&stderr)
            .map_err(|e| ChaosError::Setup(format!("{}: {e}", stderr.display())))?;
        let mut child = Command::new("ip")
            .args(["netns", "exec", netns])
            .arg(python)
            .arg("-u")
            .arg(kind.script())
            .args([endpoint, topic, "chaos_sdk"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| ChaosError::Setup(format!("{}: {e}", python.display())))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| ChaosError::Setup("the SDK's stdout".into()))?;
        let journal = Arc::new(Mutex::new(SdkJournal::default()));
        let reader_journal = journal.clone();
        std::thread::spawn(move || read_events(stdout, &reader_journal, epoch));
        let mut client = SdkClient {
            kind,
            journal,
            stdin: child.stdin.take(),
            child,
            stderr,
        };
        if let Err(e) = client
            .wait_for(Duration::from_secs(60), "start", |j| j.started)
            .await
        {
            client.kill();
            return Err(e);
        }
        Ok(client)
    }

    /// Stops its sender (its consumer keeps receiving); returns once the last send is over.
    pub async fn stop_sending(&mut self) -> Result<(), ChaosError> {
        if let Some(stdin) = self.stdin.as_mut() {
            // A script that died is reported by the wait below.
            let _ = stdin
                .write_all(b"stop-sending\n")
                .and_then(|()| stdin.flush());
        }
        self.wait_for(Duration::from_secs(60), "stop sending", |j| {
            j.stopped_sending
        })
        .await
    }

    /// Closes its input (it shuts its clients down) and waits for it, killing it after 30 s.
    pub fn shutdown(mut self) {
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.kill();
    }

    fn kill(&mut self) {
        // Already gone is fine.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    async fn wait_for(
        &mut self,
        limit: Duration,
        what: &str,
        done: impl Fn(&SdkJournal) -> bool,
    ) -> Result<(), ChaosError> {
        let deadline = Instant::now() + limit;
        loop {
            if done(&self.journal.lock()) {
                return Ok(());
            }
            let exited = self.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                return Err(ChaosError::Workload(format!(
                    "the {:?} SDK did not {what} ({}); its last output:\n{}",
                    self.kind,
                    exited.map_or_else(|| format!("not within {limit:?}"), |s| s.to_string()),
                    tail.join("\n")
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for SdkClient {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// One line the script writes.
#[derive(serde::Deserialize)]
struct Event {
    ack: Option<String>,
    ms: Option<u64>,
    fail: Option<String>,
    recv: Option<String>,
    receive_error: Option<String>,
    /// How many messages one receive call returned.
    received: Option<u64>,
    started: Option<bool>,
    stopped_sending: Option<bool>,
}

fn read_events(stdout: impl std::io::Read, journal: &Mutex<SdkJournal>, epoch: Instant) {
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { return };
        let Ok(event) = serde_json::from_str::<Event>(&line) else {
            tracing::warn!(%line, "the SDK wrote a line that is not an event");
            continue;
        };
        let now = u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut j = journal.lock();
        if let Some(body) = event.ack {
            let sent_at = now.saturating_sub(event.ms.unwrap_or(0));
            j.acks.push(SdkAck {
                body,
                sent_at,
                acked_at: now,
            });
        }
        if let Some(reason) = event.fail {
            tracing::debug!(%reason, "an SDK send failed");
            j.failures += 1;
        }
        if let Some(reason) = event.receive_error {
            tracing::debug!(%reason, "an SDK receive failed");
            j.receive_errors += 1;
        }
        if let Some(n) = event.received {
            tracing::trace!(n, "an SDK receive returned");
        }
        if let Some(body) = event.recv {
            *j.received.entry(body).or_default() += 1;
        }
        j.started |= event.started.unwrap_or(false);
        j.stopped_sending |= event.stopped_sending.unwrap_or(false);
    }
}
