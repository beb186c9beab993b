//! Periodic removal of brokers that stopped registering (protocol.md 8.3).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::route::RouteInfoManager;

pub async fn scan_not_active_brokers(
    routes: Arc<RouteInfoManager>,
    interval: Duration,
    stop: CancellationToken,
) {
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticker.tick() => {
                let expired = routes.scan_expired(Instant::now());
                if !expired.is_empty() {
                    tracing::warn!(brokers = ?expired, "expired brokers that stopped registering");
                }
            }
        }
    }
}
