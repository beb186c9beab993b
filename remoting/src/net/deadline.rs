//! Timeouts that cost nothing when the work finishes at once. `tokio::time::timeout` reads
//! the clock and looks up the runtime's timer for every call; on a connection's hot path
//! (a write to a socket with room, a send into a queue with room) the work is done on its
//! first poll, so the timer is armed only when it is not.
//!
//! These are futures of their own rather than `async fn`s: an `async fn` stores the work it
//! is given twice (as its argument and pinned in its body), and a request's future nests
//! several of them.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// `work`'s output, or None when it is not done by `deadline`.
pub(crate) fn until<F: Future>(deadline: Instant, work: F) -> Deadline<F> {
    Deadline {
        work,
        due: Due::At(deadline),
        timer: None,
    }
}

/// `work`'s output, or None when it takes longer than `limit` (counted from its first
/// poll that could not finish it).
pub(crate) fn within<F: Future>(limit: Duration, work: F) -> Deadline<F> {
    Deadline {
        work,
        due: Due::After(limit),
        timer: None,
    }
}

#[derive(Clone, Copy)]
enum Due {
    At(Instant),
    After(Duration),
}

pin_project_lite::pin_project! {
    /// See [`until`] and [`within`].
    pub(crate) struct Deadline<F> {
        #[pin]
        work: F,
        due: Due,
        // Armed (and boxed, off the fast path's footprint) once the work had to wait.
        timer: Option<Pin<Box<Sleep>>>,
    }
}

impl<F: Future> Future for Deadline<F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.work.poll(cx) {
            return Poll::Ready(Some(out));
        }
        let due = *this.due;
        let timer = this.timer.get_or_insert_with(|| {
            Box::pin(tokio::time::sleep_until(match due {
                Due::At(at) => at,
                Due::After(limit) => Instant::now() + limit,
            }))
        });
        timer.as_mut().poll(cx).map(|()| None)
    }
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

    #[test]
    fn the_deadline_adds_little_to_the_work_it_wraps() {
        let work = async {
            let buffer = [7u8; 512];
            tokio::task::yield_now().await;
            buffer[3]
        };
        let work_size = std::mem::size_of_val(&work);
        let wrapped = until(Instant::now(), work);
        assert!(
            std::mem::size_of_val(&wrapped) <= work_size + 64,
            "the work is held once: {} for {work_size}",
            std::mem::size_of_val(&wrapped)
        );
    }
}
