//! Reloading the ACL when its files change (RocketMQ watches them the same way).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::validator::AccessValidator;

/// How often the files are looked at.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// Looks at the files every `every` until `stop`, reloading on a change.
pub fn spawn_watch(
    validator: Arc<AccessValidator>,
    every: Duration,
    stop: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            let v = validator.clone();
            // Directory listing and file reads stay off the runtime's workers.
            if let Err(e) = tokio::task::spawn_blocking(move || v.reload_if_changed()).await {
                tracing::error!(error = %e, "ACL watch failed");
            }
        }
    })
}
