//! Timeouts that cost nothing when the work finishes at once. `tokio::time::timeout` reads
//! the clock and looks up the runtime's timer for every call; on a connection's hot path
//! (a write to a socket with room, a send into a queue with room) the work is done on its
//! first poll, so the timer is armed only when it is not.

use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

/// `work`'s output, or None when it is not done by `deadline`.
pub(crate) async fn until<F: Future>(deadline: Instant, work: F) -> Option<F::Output> {
    let mut work = std::pin::pin!(work);
    if let Poll::Ready(out) = poll_once(work.as_mut()) {
        return Some(out);
    }
    // Polled again at once with this task's waker, which replaces the no-op one.
    tokio::time::timeout_at(deadline, work).await.ok()
}

/// `work`'s output, or None when it takes longer than `limit` (counted from its first
/// poll that could not finish it).
pub(crate) async fn within<F: Future>(limit: Duration, work: F) -> Option<F::Output> {
    let mut work = std::pin::pin!(work);
    if let Poll::Ready(out) = poll_once(work.as_mut()) {
        return Some(out);
    }
    tokio::time::timeout(limit, work).await.ok()
}

fn poll_once<F: Future>(work: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    work.poll(&mut Context::from_waker(Waker::noop()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ready_work_needs_no_timer_and_late_work_times_out() {
        let past = Instant::now() - Duration::from_secs(1);
        assert_eq!(
            until(past, async { 7 }).await,
            Some(7),
            "done on the first poll"
        );
        let never = std::future::pending::<()>();
        assert_eq!(within(Duration::from_millis(20), never).await, None);
        let soon = Instant::now() + Duration::from_secs(5);
        let later = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            3
        };
        assert_eq!(
            until(soon, later).await,
            Some(3),
            "woken by the work, not the timer"
        );
    }
}
