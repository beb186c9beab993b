//! What the producer benchmarks count (`mqbench producer` over remoting, `mqbench
//! grpc-producer` through mqproxy) and their lines: RocketMQ's `Send TPS` line every report
//! interval and the `[Complete]` summary, both with the run's latency percentiles.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_client::admin::now_ms;
use tokio::task::JoinHandle;

use crate::stats::Latency;

/// Counters shared by the sending tasks and the reporter.
#[derive(Default)]
pub struct SendStats {
    ok: AtomicU64,
    send_failed: AtomicU64,
    response_failed: AtomicU64,
    max_rt_us: AtomicU64,
    total_rt_us: AtomicU64,
    latency: Mutex<Latency>,
}

impl SendStats {
    /// One successful request that carried `messages` messages and took `rt`.
    pub fn record(&self, rt: Duration, messages: u64) {
        let us = rt.as_micros() as u64;
        self.ok.fetch_add(messages, Ordering::Relaxed);
        self.max_rt_us.fetch_max(us, Ordering::Relaxed);
        self.total_rt_us.fetch_add(us, Ordering::Relaxed);
        self.latency.lock().record(rt);
    }

    /// A request that could not be sent or got no answer (RocketMQ's `Send Failed`).
    pub fn send_failed(&self) {
        self.send_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// A request the server answered with an error (RocketMQ's `Response Failed`).
    pub fn response_failed(&self) {
        self.response_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Messages sent so far.
    pub fn sent(&self) -> u64 {
        self.ok.load(Ordering::Relaxed)
    }

    /// Prints RocketMQ's line every `every` until `stop` is set (abort the task at the end).
    pub fn spawn_reporter(
        self: &Arc<Self>,
        every: Duration,
        stop: Arc<AtomicBool>,
    ) -> JoinHandle<()> {
        let stats = self.clone();
        tokio::spawn(async move {
            let (mut last_ok, mut last_rt, mut last_at) = (0u64, 0u64, Instant::now());
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(every).await;
                let ok = stats.ok.load(Ordering::Relaxed);
                let rt = stats.total_rt_us.load(Ordering::Relaxed);
                let secs = last_at.elapsed().as_secs_f64();
                let latency = stats.latency.lock().summary();
                let calls = (ok - last_ok).max(1) as f64;
                crate::outln!(
                    "Current Time: {} Send TPS: {:.0} Max RT(ms): {:.3} Average RT(ms): {:.3} Send Failed: {} Response Failed: {} | {latency}",
                    now_ms(),
                    (ok - last_ok) as f64 / secs,
                    stats.max_rt_us.load(Ordering::Relaxed) as f64 / 1000.0,
                    (rt - last_rt) as f64 / 1000.0 / calls,
                    stats.send_failed.load(Ordering::Relaxed),
                    stats.response_failed.load(Ordering::Relaxed)
                );
                (last_ok, last_rt, last_at) = (ok, rt, Instant::now());
            }
        })
    }

    /// The `[Complete]` line of a run that took `elapsed`.
    pub fn complete_line(&self, elapsed: Duration) -> String {
        let ok = self.sent();
        let (mean, summary) = {
            let latency = self.latency.lock();
            (latency.mean_us(), latency.summary())
        };
        format!(
            "[Complete] Send Total: {ok} Send TPS: {:.0} Max RT(ms): {:.3} Average RT(ms): {:.3} Send Failed: {} Response Failed: {} | {summary}",
            ok as f64 / elapsed.as_secs_f64().max(1e-3),
            self.max_rt_us.load(Ordering::Relaxed) as f64 / 1000.0,
            mean / 1000.0,
            self.send_failed.load(Ordering::Relaxed),
            self.response_failed.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_and_messages() {
        let stats = SendStats::default();
        stats.record(Duration::from_millis(2), 32);
        stats.record(Duration::from_millis(4), 1);
        stats.send_failed();
        stats.response_failed();
        stats.response_failed();
        assert_eq!(stats.sent(), 33);
        let line = stats.complete_line(Duration::from_secs(1));
        assert!(
            line.starts_with(
                "[Complete] Send Total: 33 Send TPS: 33 Max RT(ms): 4.000 Average RT(ms): "
            ),
            "{line}"
        );
        assert!(
            line.contains("Send Failed: 1 Response Failed: 2 | p50 "),
            "{line}"
        );
    }
}
