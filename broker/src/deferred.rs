//! What delayed, timer and transactional messages share: they are parked in a system queue
//! with their real topic and queue in `REAL_TOPIC` / `REAL_QID`, and a background service
//! re-puts them when due, saving its progress as it goes.

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::protocol::message::{property, Properties};
use stellmq_store::PutMessage;
use tokio_util::sync::CancellationToken;

/// Parks `msg` in `queue_id` of `topic`, keeping its real topic and queue in properties.
pub fn park(msg: &mut PutMessage, props: &mut Properties, topic: &str, queue_id: i32) {
    props.insert(property::REAL_TOPIC, msg.topic.clone());
    props.insert(property::REAL_QID, msg.queue_id.to_string());
    msg.topic = topic.to_owned();
    msg.queue_id = queue_id;
}

/// The real topic and queue of a parked message.
pub fn real_target(props: &Properties) -> Option<(String, i32)> {
    let topic = props.get(property::REAL_TOPIC)?;
    let queue_id = props.get(property::REAL_QID)?.parse().ok()?;
    Some((topic.to_owned(), queue_id))
}

/// The real topic and queue of a parked message, taken out of its properties.
pub fn take_real_target(props: &mut Properties) -> Option<(String, i32)> {
    let target = real_target(props)?;
    props.remove(property::REAL_TOPIC);
    props.remove(property::REAL_QID);
    Some(target)
}

/// A service that re-puts parked messages when they are due.
pub trait DueDelivery: Send + Sync + 'static {
    /// Delivers what is due now.
    fn deliver_due(&self) -> impl std::future::Future<Output = usize> + Send;
    /// Saves progress.
    fn persist(&self);
}

/// Delivers due messages every 100 ms and saves progress every `persist_every` and at the
/// end, until `stop`.
pub async fn run<S: DueDelivery>(
    service: Arc<S>,
    persist_every: Duration,
    stop: CancellationToken,
) {
    let mut last_persist = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        service.deliver_due().await;
        if last_persist.elapsed() >= persist_every {
            persist_off_runtime(&service).await;
            last_persist = tokio::time::Instant::now();
        }
    }
    persist_off_runtime(&service).await;
}

/// Saves progress on a blocking thread (file writes never run on the async runtime).
async fn persist_off_runtime<S: DueDelivery>(service: &Arc<S>) {
    let service = service.clone();
    if let Err(e) = tokio::task::spawn_blocking(move || service.persist()).await {
        tracing::error!(error = %e, "saving delivery progress failed");
    }
}
