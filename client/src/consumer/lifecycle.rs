//! A consumer's life after `ConsumerCore::new`: subscribing (with the brokers' check of
//! SQL92 selectors), the background loop (heartbeats, rebalances, route refreshes, offset
//! persistence) and the orderly shutdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_remoting::protocol::RequestCode;

use super::core::{ConsumerCore, CALL_TIMEOUT};
use crate::error::ClientError;
use crate::request::bare;

impl ConsumerCore {
    /// Subscribes to every (topic, expression), then checks SQL92 selectors with the
    /// brokers; a refused selector shuts this consumer down and is the error.
    pub async fn subscribe_all(&self, subscriptions: &[(&str, &str)]) -> Result<(), ClientError> {
        for (topic, expression) in subscriptions {
            self.subscribe(topic, expression);
        }
        if let Err(e) = self.check_client_config().await {
            self.shutdown().await;
            return Err(e);
        }
        Ok(())
    }

    /// Before consuming with SQL92 selectors, asks every broker of the subscribed topics
    /// whether it serves them (CHECK_CLIENT_CONFIG), as Java clients do, so a broker without
    /// `enablePropertyFilter` or a malformed selector fails the start with the broker's reason.
    async fn check_client_config(&self) -> Result<(), ClientError> {
        for sub in self.subscriptions.sql92() {
            let route = self.routes.fetch(&sub.topic).await?;
            let body = serde_json::json!({
                "clientId": self.client_id,
                "group": self.config.group,
                "subscriptionData": sub,
            });
            for broker in route.broker_datas.iter().filter_map(|b| b.master_addr()) {
                let request =
                    bare(RequestCode::CHECK_CLIENT_CONFIG).with_body(body.to_string().into_bytes());
                self.instance
                    .remoting
                    .invoke_ok(broker, request, CALL_TIMEOUT)
                    .await?;
            }
        }
        Ok(())
    }

    /// Heartbeat and rebalance now, then keep them (and offset persistence) going.
    pub async fn run_background(self: Arc<Self>) {
        self.refresh_routes().await;
        self.heartbeat().await;
        self.rebalance().await;
        let mut last_heartbeat = Instant::now();
        let mut last_rebalance = Instant::now();
        let mut last_persist = Instant::now();
        let mut last_route_refresh = Instant::now();
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = self.rebalance_now.notified() => {
                    self.rebalance().await;
                    last_rebalance = Instant::now();
                }
                _ = self.route_refresh_now.notified() => {
                    // At most once a second however many pulls fail.
                    if last_route_refresh.elapsed() >= Duration::from_secs(1) {
                        self.refresh_routes().await;
                        last_route_refresh = Instant::now();
                    }
                }
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
            if last_persist.elapsed() >= Duration::from_secs(5) {
                self.persist_offsets().await;
                last_persist = Instant::now();
            }
            if last_heartbeat.elapsed() >= Duration::from_secs(30) {
                self.refresh_routes().await;
                self.heartbeat().await;
                last_heartbeat = Instant::now();
            }
            if last_rebalance.elapsed() >= self.config.rebalance_interval {
                self.rebalance().await;
                last_rebalance = Instant::now();
            }
        }
    }

    async fn refresh_routes(&self) {
        self.routes.refresh(self.subscriptions.topics()).await;
    }

    /// Stops pulling, stores offsets, unlocks and unregisters.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.persist_offsets().await;
        let assigned = self.assigned();
        if self.sink.orderly() {
            for mq in &assigned {
                self.lock_call(RequestCode::UNLOCK_BATCH_MQ, mq).await;
            }
        }
        if let Some(tracer) = &self.tracer {
            tracer.shutdown().await;
        }
        let group = Some(self.config.group.clone());
        self.instance
            .unregister(self.routes.all_broker_addrs(), None, group)
            .await;
        self.instance.unregister_consumer(&self.config.group);
        self.instance.release().await;
        self.claim.lock().take();
    }
}
