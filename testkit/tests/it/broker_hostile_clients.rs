//! Clients that hold on to what others need: one that never reads its responses, and long
//! polls that ask to wait forever or pile up. The broker keeps serving everyone else.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use stellmq_remoting::protocol::{frame, RequestCode};
use stellmq_testkit::{eventually, request, send_request, Pull, Stack, TIMEOUT as T};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SYSTEM_BUSY: i32 = 2;
const PULL_NOT_FOUND: i32 = 19;

/// Median and slowest of `n` sends.
async fn send_latencies(stack: &Stack, n: usize) -> (Duration, Duration) {
    let mut all = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        let r = stack.send("Victim", 0, &format!("m{i}"), &[]).await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
        all.push(started.elapsed());
    }
    all.sort();
    (all[n / 2], all[n - 1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_does_not_delay_anyone_else() {
    let stack = Stack::start_with(|c| {
        c.broker.server_max_write_buffer_bytes = 2 * 1024 * 1024;
    })
    .await;
    let (normal_median, _) = send_latencies(&stack, 50).await;

    // Thousands of sends and admin calls whose answers it never reads, on the lanes the
    // victim uses too: some 40 MB of answers, far more than socket buffers absorb.
    let mut flood = BytesMut::new();
    for i in 0..16_000 {
        let mut r = if i % 4 == 0 {
            send_request("Flood", 0, &[b'f'; 512], &[])
        } else {
            request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])
        };
        r.opaque = i;
        frame::encode(&r, &mut flood);
    }
    let mut flooder = TcpStream::connect(stack.addr()).await.expect("connect");
    let writer = tokio::spawn(async move {
        let _ = flooder.write_all(&flood).await;
        flooder
    });
    let (median, slowest) = send_latencies(&stack, 200).await;
    let r = stack
        .call(request(RequestCode::GET_BROKER_RUNTIME_INFO, &[]))
        .await;
    assert_eq!(r.code, 0, "the admin lane answers too");
    assert!(
        slowest < Duration::from_secs(1) && median < normal_median * 10 + Duration::from_millis(20),
        "normal median {normal_median:?}; during the flood median {median:?}, slowest {slowest:?}"
    );
    let mut flooder = tokio::time::timeout(T, writer)
        .await
        .expect("the flood ends")
        .expect("join");
    let cut = tokio::time::timeout(T, async {
        let mut sink = vec![0u8; 1 << 20];
        loop {
            match flooder.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        cut.is_ok(),
        "the broker closed the connection that never read"
    );
    stack.stop().await;
}

#[tokio::test]
async fn long_polls_are_capped_in_time_and_number() {
    let stack = Stack::start_with(|c| {
        c.broker.long_polling_max_suspend_millis = 300;
        c.broker.max_parked_pulls_per_connection = 3;
    })
    .await;
    assert_eq!(stack.send("Quiet", 0, "one", &[]).await.code, 0);
    assert!(stack.broker().store().wait_dispatched(T));

    // Asked to wait an hour, answered after the broker's cap.
    let started = Instant::now();
    let r = stack
        .pull(
            Pull::new("g", "Quiet", 0, 1)
                .subscribe("*")
                .suspend(3_600_000),
        )
        .await;
    assert_eq!(r.code, PULL_NOT_FOUND);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
        "{waited:?}"
    );

    // A fourth pull parked by one connection is refused at once.
    let stack = std::sync::Arc::new(stack);
    let mut parked = Vec::new();
    for queue in 1..4 {
        let stack = stack.clone();
        parked.push(tokio::spawn(async move {
            stack
                .pull(
                    Pull::new("g", "Quiet", queue, 0)
                        .subscribe("*")
                        .suspend(200),
                )
                .await
                .code
        }));
    }
    eventually("three pulls parked", async || {
        stack.broker().parked_pulls() == 3
    })
    .await;
    let r = stack
        .pull(Pull::new("g", "Quiet", 0, 1).subscribe("*").suspend(200))
        .await;
    assert_eq!(r.code, SYSTEM_BUSY, "{}", r.remark_str());
    assert!(
        r.remark_str().contains("PULL_HOLD_FULL"),
        "{}",
        r.remark_str()
    );
    for p in parked {
        assert_eq!(p.await.expect("join"), PULL_NOT_FOUND);
    }
    assert_eq!(stack.broker().parked_pulls(), 0);
    let stack = std::sync::Arc::into_inner(stack).expect("sole owner");
    stack.stop().await;
}
