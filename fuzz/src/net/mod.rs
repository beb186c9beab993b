//! Network-level fuzzing: many connections send mutated requests of every code, and bytes
//! that are no frame at all, to a live name server and broker, while one more connection
//! checks that each server keeps answering everyone else. Before the attack the broker
//! acknowledges canary messages; afterwards every one of them must read back intact at
//! its acknowledged offset, no server may have died or logged a panic, and the report
//! gives the figures (requests, answers by code, connections the servers closed, memory
//! before and after).

pub mod attack;
mod canary;
pub mod grpc;
mod report;
pub mod servers;
pub mod vocabulary;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use parking_lot::Mutex;
use stellmq_remoting::protocol::frame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub use report::Report;

use attack::{Attack, Generator, Server};
use servers::Servers;

/// How a run goes.
#[derive(Debug, Clone)]
pub struct Options {
    pub duration: Duration,
    /// Attacking connections, split between the broker, the name server and mqproxy.
    pub connections: usize,
    pub seed: u64,
    /// Canary messages the broker acknowledges before the attack.
    pub canary_messages: usize,
    /// Where to copy the servers' logs after the run.
    pub keep_logs: Option<std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(60),
            connections: 16,
            seed: 1,
            canary_messages: 200,
            keep_logs: None,
        }
    }
}

/// How long an attacking connection waits for an answer before it gives up on it (long
/// polls are asked to park for at most a fraction of this).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// The same for gRPC calls: mqproxy parks a ReceiveMessage up to
/// `grpcClientConsumerMaxLongPollingTimeoutMillis` (20 s).
const GRPC_ANSWER_TIMEOUT: Duration = Duration::from_secs(25);

/// Starts a name server and a broker, attacks them as `options` say and checks them.
pub async fn run(options: &Options) -> Result<Report, String> {
    let mut servers = tokio::task::spawn_blocking(Servers::spawn)
        .await
        .map_err(|e| e.to_string())??;
    let mut report = Report::new(options.seed);
    let canaries = canary::send_canaries(&servers.broker.addr, options.canary_messages).await?;
    report.before = servers.all().map(|s| (s.name, s.memory())).to_vec();

    let shared = Arc::new(Mutex::new(report));
    let deadline = Instant::now() + options.duration;
    let health = tokio::spawn(canary::watch_health(
        servers.namesrv.addr.clone(),
        servers.broker.addr.clone(),
        servers.proxy.addr.clone(),
        deadline,
        shared.clone(),
    ));
    let mut workers = Vec::new();
    for i in 0..options.connections.max(1) {
        let seed = options.seed.wrapping_mul(1000).wrapping_add(i as u64);
        if i % 3 == 2 {
            workers.push(tokio::spawn(call_until(
                servers.proxy.addr.clone(),
                grpc::GrpcGenerator::new(seed),
                deadline,
                shared.clone(),
            )));
            continue;
        }
        let is_broker = i % 3 == 0;
        let target = if is_broker {
            servers.broker.addr.clone()
        } else {
            servers.namesrv.addr.clone()
        };
        let generator = Generator::new(
            seed,
            if is_broker {
                Server::Broker
            } else {
                Server::NameServer
            },
            &servers.broker.addr,
            stellmq_remoting::protocol::message::now_ms(),
        );
        workers.push(tokio::spawn(attack_until(
            target,
            is_broker,
            generator,
            deadline,
            shared.clone(),
        )));
    }
    for worker in workers {
        let _ = worker.await;
    }
    let _ = health.await;

    let mut report = Arc::try_unwrap(shared)
        .map(Mutex::into_inner)
        .map_err(|_| "a task still holds the report".to_owned())?;
    report.integrity = canary::check_canaries(&servers.broker.addr, &canaries).await;
    // Let freed memory settle before it is read.
    tokio::time::sleep(Duration::from_secs(2)).await;
    report.after = servers.all().map(|s| (s.name, s.memory())).to_vec();
    if let Some(dir) = &options.keep_logs {
        servers.keep_logs(dir)?;
    }
    for server in servers.all_mut() {
        if !server.alive() {
            report
                .findings
                .push(format!("{} exited during the run", server.name));
        }
        for panic in server.panics() {
            report
                .findings
                .push(format!("{} logged: {panic}", server.name));
        }
    }
    Ok(report)
}

/// One connection's attacks until `deadline`; a new connection after each one the server
/// closed, each that went unanswered, and each raw attack.
async fn attack_until(
    target: String,
    is_broker: bool,
    mut generator: Generator,
    deadline: Instant,
    report: Arc<Mutex<Report>>,
) {
    let mut connection: Option<(TcpStream, BytesMut)> = None;
    while Instant::now() < deadline {
        let (socket, buf) = match connection.as_mut() {
            Some(open) => open,
            None => match TcpStream::connect(&target).await {
                Ok(socket) => {
                    report.lock().connections += 1;
                    connection.insert((socket, BytesMut::new()))
                }
                Err(e) => {
                    report.lock().connect_failures.push(e.to_string());
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        match generator.next_attack() {
            Attack::Request {
                code,
                opaque,
                oneway,
                bytes,
            } => {
                let outcome = exchange(socket, buf, &bytes, opaque, oneway).await;
                let keep = matches!(outcome, Outcome::Answered(_) | Outcome::Oneway);
                report.lock().note_request(is_broker, code, outcome);
                if !keep {
                    connection = None;
                }
            }
            Attack::Raw { kind, bytes, drip } => {
                let closed = send_raw(socket, &bytes, drip).await;
                report.lock().note_raw(kind, closed);
                connection = None;
            }
        }
    }
}

/// One HTTP/2 connection's gRPC calls until `deadline`; a new connection after a reset or
/// an unanswered call.
async fn call_until(
    target: String,
    mut generator: grpc::GrpcGenerator,
    deadline: Instant,
    report: Arc<Mutex<Report>>,
) {
    let mut connection: Option<grpc::Connection> = None;
    while Instant::now() < deadline {
        let open = match connection.as_mut() {
            Some(open) => open,
            None => match grpc::Connection::open(&target).await {
                Ok(open) => {
                    report.lock().connections += 1;
                    connection.insert(open)
                }
                Err(e) => {
                    report.lock().connect_failures.push(e);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let call = generator.next_call();
        let outcome = open
            .call(&call, generator.client_id(), GRPC_ANSWER_TIMEOUT)
            .await;
        report.lock().note_call(call.method, outcome);
        if !matches!(outcome, grpc::CallOutcome::Status(_)) {
            connection = None;
        }
    }
}

/// What became of one well-formed request.
#[derive(Debug, Clone, Copy)]
pub enum Outcome {
    /// The server answered with this code.
    Answered(i32),
    /// Oneway: nothing to wait for.
    Oneway,
    /// The server closed the connection instead of answering.
    Closed,
    /// No answer within [`ANSWER_TIMEOUT`].
    Unanswered,
}

async fn exchange(
    socket: &mut TcpStream,
    buf: &mut BytesMut,
    bytes: &[u8],
    opaque: i32,
    oneway: bool,
) -> Outcome {
    let answer = async {
        socket.write_all(bytes).await.ok()?;
        if oneway {
            return Some(Outcome::Oneway);
        }
        loop {
            while let Ok(Some(response)) = frame::decode(buf, 64 << 20) {
                if response.is_response() && response.opaque == opaque {
                    return Some(Outcome::Answered(response.code));
                }
            }
            if socket.read_buf(buf).await.ok()? == 0 {
                return None;
            }
        }
    };
    match tokio::time::timeout(ANSWER_TIMEOUT, answer).await {
        Ok(Some(outcome)) => outcome,
        Ok(None) => Outcome::Closed,
        Err(_) => Outcome::Unanswered,
    }
}

/// Sends raw bytes (the first few at a time when `drip`), then reads until the server closes the
/// connection or 300 ms pass; true when the server closed it.
async fn send_raw(socket: &mut TcpStream, bytes: &[u8], drip: bool) -> bool {
    let sent = async {
        // A slow start: the first 63 bytes 7 at a time, then the rest.
        let (slow, rest) = bytes
            .split_at_checked(63.min(bytes.len()))
            .unwrap_or((&[], bytes));
        if drip {
            for chunk in slow.chunks(7) {
                socket.write_all(chunk).await?;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } else {
            socket.write_all(slow).await?;
        }
        socket.write_all(rest).await?;
        Ok::<_, std::io::Error>(())
    };
    if sent.await.is_err() {
        return true;
    }
    let mut sink = [0u8; 4096];
    let closed = async {
        loop {
            match socket.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_millis(300), closed)
        .await
        .is_ok()
}

/// Replays the gRPC calls of connection seed `seed` one at a time against fresh servers
/// until mqproxy dies; returns the number and the call that killed it (`None` if it lived
/// through `max_calls`). For pinning down a finding of [`run`].
pub async fn find_fatal_grpc_call(
    seed: u64,
    max_calls: usize,
) -> Result<Option<(usize, grpc::Call)>, String> {
    let mut servers = tokio::task::spawn_blocking(Servers::spawn)
        .await
        .map_err(|e| e.to_string())??;
    let mut generator = grpc::GrpcGenerator::new(seed);
    let mut connection: Option<grpc::Connection> = None;
    for i in 0..max_calls {
        let call = generator.next_call();
        if connection.is_none() {
            connection = grpc::Connection::open(&servers.proxy.addr).await.ok();
        }
        let outcome = match connection.as_mut() {
            Some(open) => {
                open.call(&call, generator.client_id(), GRPC_ANSWER_TIMEOUT)
                    .await
            }
            None => grpc::CallOutcome::Reset,
        };
        if !matches!(outcome, grpc::CallOutcome::Status(_)) {
            connection = None;
            tokio::time::sleep(Duration::from_millis(200)).await;
            if !servers.proxy.alive() {
                return Ok(Some((i, call)));
            }
        }
    }
    Ok(None)
}
