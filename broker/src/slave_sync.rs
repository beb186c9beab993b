//! A slave copies its master's topics, subscription groups, consumer offsets and delay
//! offsets from the master's main port every 10 s after a 3 s delay (protocol.md 9.4), so
//! consumers that fail over to it find their topics and resume where the group was.
//!
//! Topics and groups are copied only when the master's version differs from the slave's
//! (changes normally reach the slave through the metadata journal first), and then a page
//! at a time: an unchanged table of 100,000 topics costs a page of one every 10 s.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::net::{ClientConfig, RemotingClient, RemotingError};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumerOffsetSerializeWrapper, DataVersion, DelayOffsetSerializeWrapper,
    SubscriptionGroupWrapper, TopicConfigSerializeWrapper,
};
use stellmq_remoting::protocol::error::BodyError;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};
use tokio_util::sync::CancellationToken;

use stellmq_acl::auth::info::{AclInfo, AclInfoExt, UserInfo, UserInfoExt};
use stellmq_acl::auth::{AuthError, AuthRegistry};

use crate::group::SubscriptionGroupManager;
use crate::offset::{ConsumerOffsetManager, Mark};
use crate::processor::admin::offset::{OFFSETS_AT, OFFSETS_DELTA, OFFSETS_SINCE};
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
    /// ACL 2.0's users and policies, copied so that a promoted slave enforces the same.
    pub auth: Arc<AuthRegistry>,
}

impl SlaveSync {
    pub async fn run(self, stop: CancellationToken) {
        let client = RemotingClient::new(self.client.clone());
        let mut wait = FIRST_SYNC;
        // Where the last copy of the master's offsets stands.
        let mut offsets_mark = None;
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
                    synced = self.sync_once(&client, &master, &mut offsets_mark) => synced,
                };
                if let Err(reason) = synced {
                    tracing::warn!(%master, %reason, "metadata sync from the master failed");
                }
            }
        }
        client.shutdown().await;
    }

    async fn sync_once(
        &self,
        client: &RemotingClient,
        master: &str,
        offsets_mark: &mut Option<Mark>,
    ) -> Result<(), SyncError> {
        let pages = Pages {
            client,
            master,
            code: RequestCode::GET_ALL_TOPIC_CONFIG,
            names: ("topicSeq", "maxTopicNum", "totalTopicNum"),
        };
        if let Some((data_version, topic_config_table)) =
            pages.copy_if_changed(self.topics.data_version()).await?
        {
            let topics = TopicConfigSerializeWrapper {
                data_version,
                topic_config_table,
            };
            if self.topics.replace_from_master(topics) {
                tracing::info!(event = "SLAVE_SYNCED_TOPICS", %master, "topics copied from the master");
            }
        }
        let pages = Pages {
            code: RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
            names: ("groupSeq", "maxGroupNum", "totalGroupNum"),
            ..pages
        };
        if let Some((data_version, subscription_group_table)) =
            pages.copy_if_changed(self.groups.data_version()).await?
        {
            self.groups.replace_from_master(SubscriptionGroupWrapper {
                data_version,
                subscription_group_table,
            });
        }
        self.copy_offsets(client, master, offsets_mark).await?;
        let delay: DelayOffsetSerializeWrapper =
            fetch(client, master, RequestCode::GET_ALL_DELAY_OFFSET).await?;
        self.schedule.replace_from_master(delay);
        self.copy_auth(client, master).await?;
        let (offsets, schedule) = (self.offsets.clone(), self.schedule.clone());
        tokio::task::spawn_blocking(move || {
            offsets.persist();
            schedule.persist();
        })
        .await
        .map_err(SyncError::Persist)
    }
}

impl SlaveSync {
    /// Copies the master's ACL 2.0 users and policies (AUTH_LIST_USER and AUTH_LIST_ACL,
    /// signed with the inner credentials when the master checks requests); only what
    /// differs is written.
    async fn copy_auth(&self, client: &RemotingClient, master: &str) -> Result<(), SyncError> {
        let users: Vec<UserInfo> = fetch_list(client, master, RequestCode::AUTH_LIST_USER).await?;
        let acls: Vec<AclInfo> = fetch_list(client, master, RequestCode::AUTH_LIST_ACL).await?;
        let users = users
            .iter()
            .filter_map(|u| {
                u.to_new_user(u.username.as_deref().unwrap_or_default())
                    .ok()
            })
            .collect();
        let acls = acls
            .iter()
            .filter_map(|a| a.to_acl(a.subject.as_deref().unwrap_or_default()).ok())
            .collect();
        let auth = self.auth.clone();
        let changed = tokio::task::spawn_blocking(move || auth.replace_all(users, acls))
            .await
            .map_err(SyncError::Persist)?
            .map_err(SyncError::Auth)?;
        if changed > 0 {
            tracing::info!(event = "SLAVE_SYNCED_AUTH", %master, changed, "ACL 2.0 users and policies copied from the master");
        }
        Ok(())
    }

    /// Copies the master's consumer offsets: what changed since `mark` when the master
    /// tells changes (a StellMQ master that still remembers the mark), else the whole table.
    async fn copy_offsets(
        &self,
        client: &RemotingClient,
        master: &str,
        mark: &mut Option<Mark>,
    ) -> Result<(), SyncError> {
        let code = RequestCode::GET_ALL_CONSUMER_OFFSET;
        let mut request = RemotingCommand::request(code, ExtFields::new());
        if let Some(since) = mark {
            request.ext_fields.insert(OFFSETS_SINCE, since.to_string());
        }
        let response = client
            .invoke_ok(master, request, CALL_TIMEOUT)
            .await
            .map_err(|source| SyncError::Call { code, source })?;
        let body: ConsumerOffsetSerializeWrapper =
            fastjson::decode(&response.body).map_err(|source| SyncError::Body { code, source })?;
        if response.ext_fields.get(OFFSETS_DELTA) == Some("true") {
            self.offsets.apply_changes_from_master(body);
        } else {
            self.offsets.replace_from_master(body);
        }
        *mark = response
            .ext_fields
            .get(OFFSETS_AT)
            .and_then(|m| m.parse().ok());
        Ok(())
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
    #[error("{code:?}: the master's table kept changing while it was copied")]
    Moving { code: RequestCode },
    #[error("saving the copied offsets: {0}")]
    Persist(#[source] tokio::task::JoinError),
    #[error("saving the copied users and policies: {0}")]
    Auth(#[source] AuthError),
}

/// Entries per page a slave asks for.
const PAGE: i32 = 2000;
/// Times a copy starts over because the master's table changed under it.
const RESTARTS: usize = 5;

/// A table the master serves a page at a time (RocketMQ 5's `enableSplitMetadata`).
struct Pages<'a> {
    client: &'a RemotingClient,
    master: &'a str,
    code: RequestCode,
    /// The header names of the position, the page size and the total.
    names: (&'static str, &'static str, &'static str),
}

/// A table's version and entries (topics or groups), as the wrappers carry them.
type Table<V> = (DataVersion, BTreeMap<String, V>);

/// A page's version and entries, whatever the wrapper (`topicConfigTable` or
/// `subscriptionGroupTable`).
#[derive(serde::Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(deserialize = "V: serde::de::DeserializeOwned")
)]
struct Page<V> {
    #[serde(default)]
    data_version: DataVersion,
    #[serde(default, alias = "subscriptionGroupTable")]
    topic_config_table: BTreeMap<String, V>,
}

impl Pages<'_> {
    /// The master's table when its version is not `own`: a page of one tells the version;
    /// then pages of [`PAGE`], from the first again whenever the version moves. A master
    /// that does not page (no total in its answer) sends the whole table at once.
    async fn copy_if_changed<V: serde::de::DeserializeOwned>(
        &self,
        own: DataVersion,
    ) -> Result<Option<Table<V>>, SyncError> {
        let own_json = String::from_utf8_lossy(&fastjson::encode(&own)).into_owned();
        let (probe, total) = self.page::<V>(0, 1, &own_json).await?;
        let Some(total) = total else {
            return Ok(Some((probe.data_version, probe.topic_config_table)));
        };
        if probe.data_version == own {
            return Ok(None);
        }
        let total = usize::try_from(total).unwrap_or(0);
        if probe.topic_config_table.len() >= total {
            // A master that does not split (`enableSplitMetadata=false`) sent it all.
            return Ok(Some((probe.data_version, probe.topic_config_table)));
        }
        let mut version = probe.data_version;
        let mut table = BTreeMap::new();
        let mut restarts = 0;
        loop {
            let version_json = String::from_utf8_lossy(&fastjson::encode(&version)).into_owned();
            let seq = i32::try_from(table.len()).unwrap_or(i32::MAX);
            let (page, _) = self.page::<V>(seq, PAGE, &version_json).await?;
            if page.data_version != version {
                restarts += 1;
                if restarts > RESTARTS {
                    return Err(SyncError::Moving { code: self.code });
                }
                version = page.data_version;
                table.clear();
                continue;
            }
            let before = table.len();
            table.extend(page.topic_config_table);
            // A page that adds nothing (past the end, or a master that ignores the
            // position) ends the copy instead of asking again forever.
            if table.len() == before || table.len() >= total {
                return Ok(Some((version, table)));
            }
        }
    }

    async fn page<V: serde::de::DeserializeOwned>(
        &self,
        seq: i32,
        max: i32,
        version: &str,
    ) -> Result<(Page<V>, Option<i32>), SyncError> {
        let (seq_name, max_name, total_name) = self.names;
        let mut fields = ExtFields::new();
        fields.insert(seq_name, seq.to_string());
        fields.insert(max_name, max.to_string());
        fields.insert("dataVersion", version.to_owned());
        let code = self.code;
        let response = self
            .client
            .invoke_ok(
                self.master,
                RemotingCommand::request(code, fields),
                CALL_TIMEOUT,
            )
            .await
            .map_err(|source| SyncError::Call { code, source })?;
        let total = response
            .ext_fields
            .get(total_name)
            .and_then(|t| t.parse().ok());
        let page =
            fastjson::decode(&response.body).map_err(|source| SyncError::Body { code, source })?;
        Ok((page, total))
    }
}

/// A list answer; no body is an empty list.
async fn fetch_list<T: serde::de::DeserializeOwned>(
    client: &RemotingClient,
    master: &str,
    code: RequestCode,
) -> Result<Vec<T>, SyncError> {
    let response = client
        .invoke_ok(
            master,
            RemotingCommand::request(code, ExtFields::new()),
            CALL_TIMEOUT,
        )
        .await
        .map_err(|source| SyncError::Call { code, source })?;
    if response.body.is_empty() {
        return Ok(Vec::new());
    }
    fastjson::decode(&response.body).map_err(|source| SyncError::Body { code, source })
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
