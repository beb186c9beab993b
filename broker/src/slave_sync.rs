//! A slave copies its master's topics, subscription groups, consumer offsets and delay
//! offsets from the master's main port every 10 s after a 3 s delay (protocol.md 9.4), so consumers that fail over
//! to it find their topics and resume where the group was.

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::net::{ClientConfig, RemotingClient, RemotingError};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumerOffsetSerializeWrapper, DelayOffsetSerializeWrapper,
    SubscriptionGroupWrapper, TopicConfigSerializeWrapper,
};
use stellmq_remoting::protocol::error::BodyError;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};
use tokio_util::sync::CancellationToken;

use crate::group::SubscriptionGroupManager;
use crate::offset::ConsumerOffsetManager;
use crate::registration::Registrar;
use crate::schedule::ScheduleMessageService;
use crate::topic::TopicConfigManager;

const FIRST_SYNC: Duration = Duration::from_secs(3);
const SYNC_PERIOD: Duration = Duration::from_secs(10);
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

pub struct SlaveSync {
    /// Settings of the connection to the master (TLS among them).
    pub client: ClientConfig,
    pub registrar: Arc<Registrar>,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub schedule: Arc<ScheduleMessageService>,
}

impl SlaveSync {
    pub async fn run(self, stop: CancellationToken) {
        let client = RemotingClient::new(self.client.clone());
        let mut wait = FIRST_SYNC;
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(wait) => {}
            }
            wait = SYNC_PERIOD;
            if let Some(master) = self.registrar.master_addr() {
                // A stop does not wait for a master that does not answer.
                let synced = tokio::select! {
                    _ = stop.cancelled() => break,
                    synced = self.sync_once(&client, &master) => synced,
                };
                if let Err(reason) = synced {
                    tracing::warn!(%master, %reason, "metadata sync from the master failed");
                }
            }
        }
        client.shutdown().await;
    }

    async fn sync_once(&self, client: &RemotingClient, master: &str) -> Result<(), SyncError> {
        let topics: TopicConfigSerializeWrapper =
            fetch(client, master, RequestCode::GET_ALL_TOPIC_CONFIG).await?;
        if self.topics.replace_from_master(topics) {
            tracing::info!(event = "SLAVE_SYNCED_TOPICS", %master, "topics copied from the master");
        }
        let groups: SubscriptionGroupWrapper = fetch(
            client,
            master,
            RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        )
        .await?;
        self.groups.replace_from_master(groups);
        let offsets: ConsumerOffsetSerializeWrapper =
            fetch(client, master, RequestCode::GET_ALL_CONSUMER_OFFSET).await?;
        self.offsets.replace_from_master(offsets);
        let delay: DelayOffsetSerializeWrapper =
            fetch(client, master, RequestCode::GET_ALL_DELAY_OFFSET).await?;
        self.schedule.replace_from_master(delay);
        let (offsets, schedule) = (self.offsets.clone(), self.schedule.clone());
        tokio::task::spawn_blocking(move || {
            offsets.persist();
            schedule.persist();
        })
        .await
        .map_err(SyncError::Persist)
    }
}

/// Why one round of copying the master's tables failed.
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error("{code:?} from the master: {source}")]
    Call {
        code: RequestCode,
        #[source]
        source: RemotingError,
    },
    #[error("{code:?} body from the master: {source}")]
    Body {
        code: RequestCode,
        #[source]
        source: BodyError,
    },
    #[error("saving the copied offsets: {0}")]
    Persist(#[source] tokio::task::JoinError),
}

async fn fetch<T: serde::de::DeserializeOwned>(
    client: &RemotingClient,
    master: &str,
    code: RequestCode,
) -> Result<T, SyncError> {
    let response = client
        .invoke_ok(
            master,
            RemotingCommand::request(code, ExtFields::new()),
            CALL_TIMEOUT,
        )
        .await
        .map_err(|source| SyncError::Call { code, source })?;
    fastjson::decode(&response.body).map_err(|source| SyncError::Body { code, source })
}
