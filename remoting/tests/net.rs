//! A real server and client on loopback.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use stellmq_remoting::net::{
    Channel, ClientConfig, InboundHandler, Lane, ProcessFuture, RemotingClient, RemotingError,
    RemotingServer, RequestContext, RequestProcessor, ServerConfig, ServerHandle,
};
use stellmq_remoting::protocol::codes::busy_remark;
use stellmq_remoting::protocol::{frame, ExtFields, RemotingCommand, RequestCode, ResponseCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const T: Duration = Duration::from_secs(10);

/// Echoes extFields and body after an optional delay taken from the `delayMs` field.
struct Echo {
    seen: AtomicUsize,
}

impl RequestProcessor for Echo {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        self.seen.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let delay: u64 = request
                .ext_fields
                .get("delayMs")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            Ok(Some(
                request
                    .success_to()
                    .with_ext_fields(request.ext_fields.clone())
                    .with_body(request.body.clone()),
            ))
        })
    }
}

/// Never answers (as a parked long poll would not, until later).
struct Silent;

impl RequestProcessor for Silent {
    fn process(&self, _ctx: RequestContext, _request: RemotingCommand) -> ProcessFuture {
        Box::pin(async { Ok(None) })
    }
}

/// Asks the client something over the same connection and returns its answer.
struct AskBack;

impl RequestProcessor for AskBack {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        Box::pin(async move {
            let question =
                RemotingCommand::request(RequestCode::GET_CONSUMER_RUNNING_INFO, ExtFields::new());
            let answer = ctx
                .channel
                .invoke(question, Duration::from_secs(5))
                .await
                .map_err(|e| stellmq_remoting::net::ProcessorError::system(e.to_string()))?;
            Ok(Some(request.success_to().with_body(answer.body)))
        })
    }
}

struct ClientSide;

impl InboundHandler for ClientSide {
    fn on_request(&self, channel: Channel, request: RemotingCommand, _received_at: Instant) {
        channel.try_send(
            request
                .success_to()
                .with_body(Bytes::from_static(b"running-info")),
        );
    }
}

async fn start(config: ServerConfig, lane: Arc<Lane>, echo: Arc<Echo>) -> ServerHandle {
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: "127.0.0.1:0".parse().expect("addr"),
        ..config
    });
    server
        .register(
            &[RequestCode::HEART_BEAT, RequestCode::SEND_MESSAGE],
            echo,
            lane.clone(),
        )
        .register(&[RequestCode::PULL_MESSAGE], Arc::new(Silent), lane.clone())
        .register(
            &[RequestCode::GET_ROUTEINFO_BY_TOPIC],
            Arc::new(AskBack),
            lane,
        );
    server.start().await.expect("server starts")
}

async fn start_default() -> (ServerHandle, Arc<Echo>) {
    let echo = Arc::new(Echo {
        seen: AtomicUsize::new(0),
    });
    let server = start(
        ServerConfig::default(),
        Lane::new("test", 64, 100_000),
        echo.clone(),
    )
    .await;
    (server, echo)
}

fn request(code: RequestCode, fields: &[(&str, String)]) -> RemotingCommand {
    RemotingCommand::request(code, fields.iter().cloned().collect())
}

async fn read_frame(stream: &mut TcpStream) -> Option<RemotingCommand> {
    let mut buf = BytesMut::new();
    loop {
        if let Ok(Some(cmd)) = frame::decode(&mut buf, frame::DEFAULT_MAX_FRAME_SIZE) {
            return Some(cmd);
        }
        let n = tokio::time::timeout(T, stream.read_buf(&mut buf))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_concurrent_requests_on_one_connection_are_correlated() {
    let (server, echo) = start_default().await;
    let addr = server.local_addr().to_string();
    let client = Arc::new(RemotingClient::new(ClientConfig::default()));
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..5000u32 {
        let client = client.clone();
        let addr = addr.clone();
        tasks.spawn(async move {
            let req = request(
                RequestCode::SEND_MESSAGE,
                &[("n", n.to_string()), ("delayMs", (n % 5).to_string())],
            )
            .with_body(n.to_be_bytes().to_vec());
            let resp = client.invoke(&addr, req, T).await.expect("response");
            assert_eq!(resp.ext_fields.get("n"), Some(n.to_string().as_str()));
            assert_eq!(resp.body.as_ref(), n.to_be_bytes());
            assert!(resp.is_response());
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("task");
    }
    assert_eq!(echo.seen.load(Ordering::SeqCst), 5000);
    assert_eq!(
        server.channels().len(),
        1,
        "all requests shared one connection"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn malformed_frame_closes_only_that_connection() {
    let (server, _) = start_default().await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default());
    client
        .invoke_ok(&addr, request(RequestCode::HEART_BEAT, &[]), T)
        .await
        .expect("healthy before");

    for garbage in [
        &b"\x00\x00\x00\x0c\x00\x00\x00\x08not json"[..], // JSON header that is not JSON
        &b"\x00\x00\x00\x08\x00\x00\x01\x00\x00\x00\x00\x00"[..], // header longer than frame
        &b"\x7f\xff\xff\xff"[..],                         // frame over 16 MiB
        &b"\x00\x00\x00\x06\x05\x00\x00\x02{}"[..],       // unknown serialize type
    ] {
        let mut bad = TcpStream::connect(&addr).await.expect("connect");
        bad.write_all(garbage).await.expect("write");
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(T, bad.read(&mut buf))
            .await
            .expect("closed in time")
            .unwrap_or(0);
        assert_eq!(
            n, 0,
            "the server closes the offending connection without answering"
        );
    }
    client
        .invoke_ok(&addr, request(RequestCode::HEART_BEAT, &[]), T)
        .await
        .expect("others still served");
    server.shutdown().await;
}

#[tokio::test]
async fn oneway_requests_get_no_reply() {
    let (server, echo) = start_default().await;
    let mut raw = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let mut out = BytesMut::new();
    let mut oneway = request(RequestCode::HEART_BEAT, &[]);
    oneway.opaque = 1;
    oneway.mark_oneway();
    frame::encode(&oneway, &mut out);
    let mut unknown_oneway = RemotingCommand::request_code(9999, ExtFields::new());
    unknown_oneway.opaque = 2;
    unknown_oneway.mark_oneway();
    frame::encode(&unknown_oneway, &mut out);
    let mut normal = request(RequestCode::HEART_BEAT, &[]);
    normal.opaque = 3;
    frame::encode(&normal, &mut out);
    raw.write_all(&out).await.expect("write");

    let first = read_frame(&mut raw).await.expect("a response");
    assert_eq!(first.opaque, 3, "only the two-way request is answered");
    assert_eq!(
        echo.seen.load(Ordering::SeqCst),
        2,
        "the oneway request was processed"
    );
    let nothing_more = tokio::time::timeout(Duration::from_millis(300), read_frame(&mut raw)).await;
    assert!(nothing_more.is_err(), "no further frames");
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_code_is_not_supported_with_rocketmq_remark() {
    let (server, _) = start_default().await;
    let client = RemotingClient::new(ClientConfig::default());
    let resp = client
        .invoke(
            &server.local_addr().to_string(),
            RemotingCommand::request_code(7777, ExtFields::new()),
            T,
        )
        .await
        .expect("answer");
    assert_eq!(resp.code, ResponseCode::REQUEST_CODE_NOT_SUPPORTED.as_i32());
    assert_eq!(resp.remark_str(), " request type 7777 not supported");
    server.shutdown().await;
}

#[tokio::test]
async fn full_lane_answers_system_busy() {
    let echo = Arc::new(Echo {
        seen: AtomicUsize::new(0),
    });
    let server = start(ServerConfig::default(), Lane::new("tiny", 1, 0), echo).await;
    let addr = server.local_addr().to_string();
    let client = Arc::new(RemotingClient::new(ClientConfig::default()));
    let slow = {
        let client = client.clone();
        let addr = addr.clone();
        tokio::spawn(async move {
            client
                .invoke(
                    &addr,
                    request(RequestCode::HEART_BEAT, &[("delayMs", "500".into())]),
                    T,
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let busy = client
        .invoke(&addr, request(RequestCode::HEART_BEAT, &[]), T)
        .await
        .expect("answer");
    assert_eq!(busy.code, ResponseCode::SYSTEM_BUSY.as_i32());
    assert_eq!(busy.remark_str(), busy_remark::REJECT_REQUEST);
    assert_eq!(slow.await.expect("join").expect("answer").code, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let echo = Arc::new(Echo {
        seen: AtomicUsize::new(0),
    });
    let config = ServerConfig {
        idle_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let server = start(config, Lane::new("l", 4, 10), echo).await;
    let mut raw = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let started = Instant::now();
    let mut buf = [0u8; 8];
    let n = tokio::time::timeout(T, raw.read(&mut buf))
        .await
        .expect("closed")
        .unwrap_or(0);
    assert_eq!(n, 0);
    assert!(started.elapsed() >= Duration::from_millis(250));
    server.shutdown().await;
}

#[tokio::test]
async fn graceful_shutdown_answers_in_flight_requests() {
    let (server, _) = start_default().await;
    let addr = server.local_addr().to_string();
    let client = Arc::new(RemotingClient::new(ClientConfig::default()));
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .invoke(
                    &addr,
                    request(RequestCode::HEART_BEAT, &[("delayMs", "300".into())]),
                    T,
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.shutdown().await;
    let resp = in_flight
        .await
        .expect("join")
        .expect("answered before closing");
    assert_eq!(resp.code, 0);
    assert!(
        TcpStream::connect(server.local_addr()).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn server_can_call_the_client_back_on_the_same_connection() {
    let (server, _) = start_default().await;
    let client = RemotingClient::with_handler(ClientConfig::default(), Arc::new(ClientSide));
    let resp = client
        .invoke_ok(
            &server.local_addr().to_string(),
            request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[]),
            T,
        )
        .await
        .expect("answer");
    assert_eq!(resp.body.as_ref(), b"running-info");
    server.shutdown().await;
}

#[tokio::test]
async fn error_kinds_are_distinct() {
    let (server, _) = start_default().await;
    let addr = server.local_addr().to_string();
    let client = RemotingClient::new(ClientConfig::default());

    let timeout = client
        .invoke(
            &addr,
            request(RequestCode::PULL_MESSAGE, &[]),
            Duration::from_millis(200),
        )
        .await;
    assert!(
        matches!(timeout, Err(RemotingError::Timeout { .. })),
        "{timeout:?}"
    );

    let remote = client
        .invoke_ok(
            &addr,
            RemotingCommand::request_code(4444, ExtFields::new()),
            T,
        )
        .await;
    match remote {
        Err(RemotingError::Remote { code, remark, .. }) => {
            assert_eq!(code, 3);
            assert!(remark.contains("4444"));
        }
        other => panic!("expected a remote error, got {other:?}"),
    }

    server.shutdown().await;
    let closed = client
        .invoke(&addr, request(RequestCode::HEART_BEAT, &[]), T)
        .await;
    assert!(
        matches!(
            closed,
            Err(RemotingError::ConnectionClosed { .. }) | Err(RemotingError::Connect { .. })
        ),
        "{closed:?}"
    );
    let refused = client
        .invoke(&addr, request(RequestCode::HEART_BEAT, &[]), T)
        .await;
    assert!(
        matches!(refused, Err(RemotingError::Connect { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn client_reconnects_after_the_server_comes_back() {
    let echo = Arc::new(Echo {
        seen: AtomicUsize::new(0),
    });
    let server = start(
        ServerConfig::default(),
        Lane::new("l", 4, 100),
        echo.clone(),
    )
    .await;
    let addr = server.local_addr();
    let client = RemotingClient::new(ClientConfig::default());
    client
        .invoke_ok(&addr.to_string(), request(RequestCode::HEART_BEAT, &[]), T)
        .await
        .expect("first");
    server.shutdown().await;
    assert!(client
        .invoke(&addr.to_string(), request(RequestCode::HEART_BEAT, &[]), T)
        .await
        .is_err());

    let mut again = RemotingServer::new(ServerConfig {
        listen_addr: addr,
        ..Default::default()
    });
    again.register(&[RequestCode::HEART_BEAT], echo, Lane::new("l", 4, 100));
    let again = again.start().await.expect("rebinds the same port");
    client
        .invoke_ok(&addr.to_string(), request(RequestCode::HEART_BEAT, &[]), T)
        .await
        .expect("reconnected");
    again.shutdown().await;
}

#[tokio::test]
async fn cpp_style_request_gets_json_response_with_string_ext_fields() {
    let (server, _) = start_default().await;
    let mut raw = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let header = br#"{"code":10,"language":"CPP","version":333,"opaque":42,"flag":0,"remark":"","extFields":{"queueId":3,"unitMode":false,"Signature":"","AccessKey":""}}"#;
    let mut out = BytesMut::new();
    out.put_u32((4 + header.len() + 3) as u32);
    out.put_u32(header.len() as u32);
    out.put_slice(header);
    out.put_slice(b"abc");
    raw.write_all(&out).await.expect("write");
    let mut buf = BytesMut::new();
    loop {
        raw.read_buf(&mut buf).await.expect("read");
        if buf.len() >= 8
            && buf.len() >= 4 + u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize
        {
            break;
        }
    }
    assert_eq!(buf[4], 0, "serialize type byte is JSON for a JSON request");
    let header_len = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
    let json: serde_json::Value =
        serde_json::from_slice(&buf[8..8 + header_len]).expect("strict JSON");
    assert_eq!(json["opaque"], 42);
    assert_eq!(json["flag"], 1);
    assert_eq!(json["language"], "JAVA");
    assert_eq!(
        json["extFields"]["queueId"], "3",
        "extFields values are strings"
    );
    assert_eq!(json["extFields"]["unitMode"], "false");
    assert_eq!(&buf[8 + header_len..], b"abc");
    server.shutdown().await;
}

/// Echo requests with a body of `n` bytes, encoded back to back.
fn echo_frames(n: usize, count: usize) -> Vec<u8> {
    let mut out = BytesMut::new();
    for i in 0..count {
        let mut r = request(RequestCode::HEART_BEAT, &[]);
        r.opaque = i as i32;
        r.body = Bytes::from(vec![b'x'; n]);
        frame::encode(&r, &mut out);
    }
    out.to_vec()
}

/// A peer that sends requests and never reads is disconnected once its unread responses
/// pass the write limit, and meanwhile the shared lane keeps answering everyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_is_disconnected_without_stalling_the_lane() {
    let echo = Arc::new(Echo {
        seen: AtomicUsize::new(0),
    });
    let server = start(
        ServerConfig {
            max_write_buffer_bytes: 1024 * 1024,
            ..ServerConfig::default()
        },
        // Few workers: the old code blocked them all in the send.
        Lane::new("shared", 2, 100_000),
        echo.clone(),
    )
    .await;
    let addr = server.local_addr().to_string();
    let mut flooder = TcpStream::connect(&addr).await.expect("connect");
    // 8 KiB echoed back per request: 8000 of them are far more than socket buffers hold,
    // and more frames than a per-connection queue of 4096 (which used to block the lane).
    let frames = echo_frames(8 * 1024, 8000);
    let writer = tokio::spawn(async move {
        // The server closes the connection part way; the write then fails.
        let _ = flooder.write_all(&frames).await;
        flooder
    });
    let client = RemotingClient::new(ClientConfig::default());
    let mut slowest = Duration::ZERO;
    for _ in 0..50 {
        let started = Instant::now();
        let r = client
            .invoke(&addr, request(RequestCode::HEART_BEAT, &[]), T)
            .await
            .expect("answered while the flooder is stuck");
        assert_eq!(r.code, 0);
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(slowest < Duration::from_secs(1), "slowest {slowest:?}");
    let mut flooder = tokio::time::timeout(T, writer)
        .await
        .expect("the flood ends")
        .expect("join");
    // Positive check that the server got busy with the flood, then cut it off.
    assert!(echo.seen.load(Ordering::SeqCst) > 100);
    let cut = tokio::time::timeout(T, async {
        loop {
            let mut sink = vec![0u8; 1 << 20];
            match flooder.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(cut.is_ok(), "the server closed the flooder's connection");
    server.shutdown().await;
}

/// Counts how many requests run at once; each takes 20 ms.
#[derive(Default)]
struct Counters {
    running: AtomicUsize,
    most: AtomicUsize,
    done: AtomicUsize,
}

struct Gate(Arc<Counters>);

impl RequestProcessor for Gate {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let counters = self.0.clone();
        let now = counters.running.fetch_add(1, Ordering::SeqCst) + 1;
        counters.most.fetch_max(now, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            counters.running.fetch_sub(1, Ordering::SeqCst);
            counters.done.fetch_add(1, Ordering::SeqCst);
            Ok(Some(request.success_to()))
        })
    }
}

/// One connection has at most `max_in_flight_per_connection` requests in processing; the
/// rest wait in its socket (not in the lane), and all are answered in the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_has_a_bounded_number_of_requests_in_flight() {
    let counters = Arc::new(Counters::default());
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: "127.0.0.1:0".parse().expect("addr"),
        max_in_flight_per_connection: 4,
        ..ServerConfig::default()
    });
    server.register(
        &[RequestCode::HEART_BEAT],
        Arc::new(Gate(counters.clone())),
        Lane::new("wide", 64, 100_000),
    );
    let server = server.start().await.expect("server");
    let addr = server.local_addr().to_string();
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    stream.write_all(&echo_frames(0, 40)).await.expect("write");
    let mut answered = 0;
    let mut buf = BytesMut::new();
    while answered < 40 {
        while let Ok(Some(r)) = frame::decode(&mut buf, frame::DEFAULT_MAX_FRAME_SIZE) {
            assert_eq!(r.code, 0);
            answered += 1;
        }
        if answered < 40 {
            let n = tokio::time::timeout(T, stream.read_buf(&mut buf))
                .await
                .expect("answers keep coming")
                .expect("read");
            assert!(n > 0, "connection stays open");
        }
    }
    assert_eq!(counters.done.load(Ordering::SeqCst), 40);
    let most = counters.most.load(Ordering::SeqCst);
    assert!(
        (2..=4).contains(&most),
        "at most 4 at once, some overlap: {most}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_code_registered_twice_is_a_start_up_error() {
    let echo = Arc::new(Echo {
        seen: AtomicUsize::new(0),
    });
    let lane = Lane::new("dup", 1, 1);
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: "127.0.0.1:0".parse().expect("addr"),
        ..ServerConfig::default()
    });
    server
        .register(&[RequestCode::HEART_BEAT], echo.clone(), lane.clone())
        .register(
            &[RequestCode::SEND_MESSAGE, RequestCode::HEART_BEAT],
            echo,
            lane,
        );
    let error = server.start().await.err().expect("refused");
    assert!(error.to_string().contains("[34]"), "{error}");
}

/// Waits (as a write waits for its flush) after giving its lane worker back, until four
/// requests wait together.
struct GroupCommit {
    waiting: AtomicUsize,
    group: Arc<tokio::sync::Barrier>,
}

impl RequestProcessor for GroupCommit {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        ctx.release_worker();
        let group = self.group.clone();
        Box::pin(async move {
            group.wait().await;
            Ok(Some(request.success_to()))
        })
    }
}

#[tokio::test]
async fn requests_that_give_their_worker_back_wait_together() {
    // One worker: without release_worker the second request could never start, and the
    // first would wait forever for a group of four.
    let commit = Arc::new(GroupCommit {
        waiting: AtomicUsize::new(0),
        group: Arc::new(tokio::sync::Barrier::new(4)),
    });
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: "127.0.0.1:0".parse().expect("addr"),
        ..ServerConfig::default()
    });
    server.register(
        &[RequestCode::SEND_MESSAGE],
        commit.clone(),
        Lane::new("one", 1, 100),
    );
    let server = server.start().await.expect("server starts");
    let client = Arc::new(RemotingClient::new(ClientConfig::default()));
    let addr = server.local_addr().to_string();
    let mut calls = Vec::new();
    for _ in 0..4 {
        let (client, addr) = (client.clone(), addr.clone());
        calls.push(tokio::spawn(async move {
            client
                .invoke(&addr, request(RequestCode::SEND_MESSAGE, &[]), T)
                .await
        }));
    }
    for call in calls {
        let answer = call.await.expect("joined").expect("answered");
        assert_eq!(answer.code, ResponseCode::SUCCESS.as_i32());
    }
    assert_eq!(commit.waiting.load(Ordering::SeqCst), 4);
    client.shutdown().await;
    server.shutdown().await;
}

/// A peer that takes requests and never answers (a cut network looks like this: the
/// socket stays open). After a call times out on it, the next call dials again instead of
/// waiting on the same dead connection.
#[tokio::test]
async fn a_connection_that_answers_nothing_is_dropped_after_a_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut sink = [0u8; 4096];
                while socket.read(&mut sink).await.is_ok_and(|n| n > 0) {}
            });
        }
    });
    let client = RemotingClient::new(ClientConfig::default());
    for _ in 0..2 {
        let silent = client
            .invoke(
                &addr,
                request(RequestCode::HEART_BEAT, &[]),
                Duration::from_millis(200),
            )
            .await;
        assert!(
            matches!(silent, Err(RemotingError::Timeout { .. })),
            "{silent:?}"
        );
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        2,
        "the second call used a new connection"
    );
}
