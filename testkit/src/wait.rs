//! Waiting on conditions instead of sleeping: each helper checks a condition until it holds
//! and panics, naming what it waited for, when the deadline passes first. A test that waits
//! this way is as fast as the system under test allows and never passes because a fixed
//! pause happened to be long enough.

use std::time::{Duration, Instant};

/// How long the helpers without an explicit timeout wait, and the time allowed for one
/// request to be answered.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The pause between two checks.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The pause between two checks of [`wait_for_blocking`], which looks at local state only.
const BLOCKING_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Waits up to [`TIMEOUT`] until `check` returns true.
///
/// ```no_run
/// # async fn demo(stack: &stellmq_testkit::Stack) {
/// stellmq_testkit::eventually("three pulls parked", async || {
///     stack.broker().parked_pulls() == 3
/// })
/// .await;
/// # }
/// ```
pub async fn eventually(what: &str, check: impl AsyncFnMut() -> bool) {
    eventually_within(what, TIMEOUT, check).await;
}

/// Waits up to `timeout` until `check` returns true.
pub async fn eventually_within(
    what: &str,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> bool,
) {
    eventually_some(what, timeout, async || check().await.then_some(())).await;
}

/// Waits up to `timeout` until `check` returns a value, and returns it.
pub async fn eventually_some<T>(
    what: &str,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for: {what}"
        );
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Waits up to `timeout`, without blocking the runtime, until `check` (a cheap, synchronous
/// look at shared state) returns true.
pub async fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    eventually_within(what, timeout, async || check()).await;
}

/// [`wait_for`] for synchronous tests: blocks the calling thread between checks.
pub fn wait_for_blocking(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for: {what}"
        );
        std::thread::sleep(BLOCKING_POLL_INTERVAL);
    }
}
