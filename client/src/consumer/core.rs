//! What push and lite pull consumers share: subscriptions, routes, heartbeats, rebalancing,
//! one long-polling pull loop per assigned queue, and offsets.
//!
//! Each assigned queue has a [`QueueState`]: the next offset to pull, the offsets handed to
//! the application and not yet finished, and a token that stops its pull loop when a
//! rebalance takes the queue away. The consumed offset of a queue is the smallest unfinished
//! offset (or the next pull offset when none is in flight), so a crash never skips a message.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumeFromWhere, ConsumeType, ConsumerData, ConsumerIdList, HeartbeatData,
    LockBatchRequestBody, LockBatchResponseBody, MessageModel, MessageQueue, SubscriptionData,
    TopicRouteData,
};
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::message::now_ms;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::offset_store::OffsetTable;
use super::push::{ConsumerConfig, ExpressionType};
use super::registry::GroupClaim;
use super::ReceivedMessage;
use crate::error::ClientError;
use crate::instance::ClientInstance;

const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// brokerId of a master.
const MASTER_ID: i64 = 0;

/// Progress of one assigned queue.
pub(crate) struct QueueState {
    pub mq: MessageQueue,
    pub next_pull: AtomicI64,
    /// Unfinished offsets with their body sizes.
    in_flight: Mutex<BTreeMap<i64, usize>>,
    pub dropped: CancellationToken,
    pub locked: AtomicBool,
    /// Interrupts a parked pull so a new position (seek) takes effect at once.
    pub repositioned: Notify,
    /// The broker id the last pull response suggested (`suggestWhichBrokerId`; 0 = master).
    pub suggested_broker: AtomicI64,
}

impl QueueState {
    pub fn in_flight_count(&self) -> usize {
        self.in_flight.lock().len()
    }

    pub fn in_flight_bytes(&self) -> usize {
        self.in_flight.lock().values().sum()
    }

    /// The offset to store: the smallest unfinished message, else the next pull offset.
    pub fn consumed_offset(&self) -> i64 {
        self.in_flight
            .lock()
            .first_key_value()
            .map(|(offset, _)| *offset)
            .unwrap_or_else(|| self.next_pull.load(Ordering::Acquire))
    }

    pub fn begin(&self, offsets: impl IntoIterator<Item = (i64, usize)>) {
        self.in_flight.lock().extend(offsets);
    }

    pub fn finish(&self, offset: i64) {
        self.in_flight.lock().remove(&offset);
    }
}

/// Where pulled messages go.
pub(crate) trait MessageSink: Send + Sync + 'static {
    fn deliver(
        &self,
        core: Arc<ConsumerCore>,
        state: Arc<QueueState>,
        messages: Vec<ReceivedMessage>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>>;
    /// Orderly consumption locks queues on the broker before pulling them.
    fn orderly(&self) -> bool {
        false
    }
}

pub(crate) struct ConsumerCore {
    pub config: ConsumerConfig,
    pub client_id: String,
    pub instance: Arc<ClientInstance>,
    pub subscriptions: RwLock<BTreeMap<String, SubscriptionData>>,
    routes: RwLock<HashMap<String, TopicRouteData>>,
    pub offsets: OffsetTable,
    rebalance_now: Arc<Notify>,
    route_refresh_now: Notify,
    pub stop: CancellationToken,
    queues: Mutex<HashMap<MessageQueue, Arc<QueueState>>>,
    pub(super) sink: Arc<dyn MessageSink>,
    claim: Mutex<Option<GroupClaim>>,
}

impl ConsumerCore {
    pub async fn new(
        mut config: ConsumerConfig,
        sink: Arc<dyn MessageSink>,
    ) -> Result<Arc<Self>, ClientError> {
        config.group = crate::namespace::wrap(config.namespace.as_deref(), &config.group);
        let instance = ClientInstance::obtain(&config.namesrv_addr, &config.instance_name).await?;
        let client_id = instance.client_id.clone();
        let rebalance_now = Arc::new(Notify::new());
        let claim = match GroupClaim::take(&client_id, &config.group) {
            Ok(claim) => claim,
            Err(e) => {
                instance.release().await;
                return Err(e);
            }
        };
        instance.register_consumer(&config.group, &rebalance_now);
        let offsets = match config.message_model {
            MessageModel::Clustering => OffsetTable::remote(),
            MessageModel::Broadcasting => OffsetTable::local(
                config
                    .offset_store_dir
                    .join(&client_id)
                    .join(&config.group)
                    .join("offsets.json"),
            ),
        };
        Ok(Arc::new(Self {
            config,
            client_id,
            instance,
            subscriptions: RwLock::new(BTreeMap::new()),
            routes: RwLock::new(HashMap::new()),
            offsets,
            rebalance_now,
            route_refresh_now: Notify::new(),
            stop: CancellationToken::new(),
            queues: Mutex::new(HashMap::new()),
            sink,
            claim: Mutex::new(Some(claim)),
        }))
    }

    pub fn subscribe(&self, topic: &str, expression: &str) {
        let topic = &crate::namespace::wrap(self.config.namespace.as_deref(), topic);
        let sub = build_subscription(topic, expression, self.config.expression_type);
        self.subscriptions.write().insert(topic.to_owned(), sub);
        if self.config.message_model == MessageModel::Clustering {
            let retry = format!("%RETRY%{}", self.config.group);
            self.subscriptions
                .write()
                .entry(retry.clone())
                .or_insert_with(|| build_subscription(&retry, "*", ExpressionType::Tag));
        }
    }

    /// A subscription used only for pulling assigned queues (no retry topic).
    pub fn subscribe_without_retry(&self, topic: &str, expression: &str) {
        self.subscriptions.write().insert(
            topic.to_owned(),
            build_subscription(topic, expression, self.config.expression_type),
        );
    }

    pub fn assigned(&self) -> Vec<MessageQueue> {
        let mut v: Vec<MessageQueue> = self.queues.lock().keys().cloned().collect();
        v.sort();
        v
    }

    pub fn queue_state(&self, mq: &MessageQueue) -> Option<Arc<QueueState>> {
        self.queues.lock().get(mq).cloned()
    }

    async fn fetch_route(&self, topic: &str) -> Result<TopicRouteData, ClientError> {
        let route = self
            .instance
            .topic_route(topic, CALL_TIMEOUT)
            .await?
            .ok_or_else(|| ClientError::TopicNotExist(topic.to_owned()))?;
        self.routes.write().insert(topic.to_owned(), route.clone());
        Ok(route)
    }

    /// The master of a broker name, else any of its brokers (where offsets go).
    pub fn broker_addr(&self, broker_name: &str) -> Option<String> {
        let routes = self.routes.read();
        routes
            .values()
            .flat_map(|r| r.broker_datas.iter())
            .find(|b| b.broker_name == broker_name)
            .and_then(|b| {
                b.master_addr()
                    .map(str::to_owned)
                    .or_else(|| b.broker_addrs.0.values().next().cloned())
            })
    }

    /// Where a queue is pulled from (Java's `findBrokerAddressInSubscribe`): the broker id
    /// the last response suggested, else the master, else any broker of the name (a slave
    /// once the master left the route). Returns the address and whether it is the master.
    pub fn pull_addr(&self, broker_name: &str, suggested: i64) -> Option<(String, bool)> {
        let routes = self.routes.read();
        let brokers = routes
            .values()
            .flat_map(|r| r.broker_datas.iter())
            .find(|b| b.broker_name == broker_name)?;
        let addrs = &brokers.broker_addrs.0;
        [suggested, MASTER_ID]
            .iter()
            .find_map(|id| addrs.get(id).map(|a| (a.clone(), *id == MASTER_ID)))
            .or_else(|| {
                addrs
                    .iter()
                    .next()
                    .map(|(id, a)| (a.clone(), *id == MASTER_ID))
            })
    }

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
        let subs: Vec<SubscriptionData> = self
            .subscriptions
            .read()
            .values()
            .filter(|s| s.expression_type.as_deref() == Some(ExpressionType::Sql92.as_str()))
            .cloned()
            .collect();
        for sub in subs {
            let route = self.fetch_route(&sub.topic).await?;
            let body = serde_json::json!({
                "clientId": self.client_id,
                "group": self.config.group,
                "subscriptionData": sub,
            });
            for broker in route.broker_datas.iter().filter_map(|b| b.master_addr()) {
                let request =
                    RemotingCommand::request(RequestCode::CHECK_CLIENT_CONFIG, ExtFields::new())
                        .with_body(body.to_string().into_bytes());
                self.instance
                    .remoting
                    .invoke_ok(broker, request, CALL_TIMEOUT)
                    .await?;
            }
        }
        Ok(())
    }

    /// Asks the background task to re-read routes now (a broker stopped answering).
    pub fn refresh_routes_soon(&self) {
        self.route_refresh_now.notify_one();
    }

    fn all_broker_addrs(&self) -> BTreeSet<String> {
        self.routes
            .read()
            .values()
            .flat_map(|r| r.broker_datas.iter())
            .flat_map(|b| b.broker_addrs.0.values().cloned())
            .collect()
    }

    pub async fn heartbeat(&self) {
        let data = HeartbeatData {
            client_id: self.client_id.clone(),
            producer_data_set: Vec::new(),
            consumer_data_set: vec![ConsumerData {
                group_name: self.config.group.clone(),
                consume_type: ConsumeType::ConsumePassively,
                message_model: self.config.message_model,
                consume_from_where: self.config.consume_from_where,
                subscription_data_set: self.subscriptions.read().values().cloned().collect(),
                unit_mode: false,
            }],
        };
        self.instance
            .heartbeat(self.all_broker_addrs(), &data, |addr, e| {
                tracing::debug!(broker = %addr, error = %e, "consumer heartbeat failed");
            })
            .await;
    }

    async fn members(&self, route: &TopicRouteData) -> Vec<String> {
        let header = GetConsumerListByGroupRequestHeader {
            consumer_group: self.config.group.clone(),
        };
        for b in &route.broker_datas {
            for addr in b.broker_addrs.0.values() {
                let request = RemotingCommand::request(
                    RequestCode::GET_CONSUMER_LIST_BY_GROUP,
                    header.to_ext_fields(),
                );
                if let Ok(r) = self
                    .instance
                    .remoting
                    .invoke(addr, request, CALL_TIMEOUT)
                    .await
                {
                    if r.code == 0 {
                        if let Ok(list) = fastjson::decode::<ConsumerIdList>(&r.body) {
                            let mut ids = list.consumer_id_list;
                            ids.sort();
                            return ids;
                        }
                    }
                }
            }
        }
        Vec::new()
    }

    /// Recomputes which queues this client owns and starts or stops their pull loops.
    pub async fn rebalance(self: &Arc<Self>) {
        let topics: Vec<String> = self.subscriptions.read().keys().cloned().collect();
        let mut wanted: BTreeSet<MessageQueue> = BTreeSet::new();
        for topic in topics {
            let route = match self.fetch_route(&topic).await {
                Ok(route) => route,
                Err(e) => {
                    tracing::debug!(%topic, error = %e, "no route yet");
                    continue;
                }
            };
            let queues = crate::route::subscribe_queues(&topic, &route);
            let mine = match self.config.message_model {
                MessageModel::Broadcasting => queues,
                MessageModel::Clustering => {
                    let members = self.members(&route).await;
                    if members.is_empty() {
                        continue;
                    }
                    self.config
                        .allocate
                        .allocate(&self.client_id, &queues, &members)
                }
            };
            wanted.extend(mine);
        }
        let current: BTreeSet<MessageQueue> = self.queues.lock().keys().cloned().collect();
        for gone in current.difference(&wanted) {
            self.drop_queue(gone).await;
        }
        for new in wanted.difference(&current) {
            match self.start_offset(new).await {
                Ok(offset) => self.start_queue(new.clone(), offset),
                Err(e) => tracing::warn!(queue = ?new, error = %e, "cannot find a start offset"),
            }
        }
    }

    /// Takes queues without a group rebalance (lite pull `assign`).
    pub async fn assign(self: &Arc<Self>, queues: &[MessageQueue]) -> Result<(), ClientError> {
        for mq in queues {
            if self.queue_state(mq).is_some() {
                continue;
            }
            self.fetch_route(&mq.topic).await?;
            let offset = self.start_offset(mq).await?;
            self.start_queue(mq.clone(), offset);
        }
        Ok(())
    }

    fn start_queue(self: &Arc<Self>, mq: MessageQueue, offset: i64) {
        let state = Arc::new(QueueState {
            mq: mq.clone(),
            next_pull: AtomicI64::new(offset),
            in_flight: Mutex::new(BTreeMap::new()),
            dropped: self.stop.child_token(),
            locked: AtomicBool::new(false),
            repositioned: Notify::new(),
            suggested_broker: AtomicI64::new(MASTER_ID),
        });
        self.offsets.update(&mq, offset, true);
        self.queues.lock().insert(mq, state.clone());
        tokio::spawn(super::pull_loop::run(self.clone(), state));
    }

    async fn drop_queue(&self, mq: &MessageQueue) {
        let Some(state) = self.queues.lock().remove(mq) else {
            return;
        };
        state.dropped.cancel();
        self.offsets.update(mq, state.consumed_offset(), false);
        self.persist_one(mq).await;
        if self.sink.orderly() && state.locked.load(Ordering::Acquire) {
            self.lock_call(RequestCode::UNLOCK_BATCH_MQ, mq).await;
        }
        self.offsets.remove(mq);
    }

    /// Where a newly assigned queue starts: the stored offset, else consumeFromWhere.
    async fn start_offset(&self, mq: &MessageQueue) -> Result<i64, ClientError> {
        if self.offsets.is_local() {
            if let Some(offset) = self.offsets.get(mq) {
                return Ok(offset);
            }
        } else {
            let addr = self
                .broker_addr(&mq.broker_name)
                .ok_or_else(|| ClientError::Invalid("no broker for queue".into()))?;
            let header = QueryConsumerOffsetRequestHeader {
                consumer_group: self.config.group.clone(),
                topic: mq.topic.clone(),
                queue_id: mq.queue_id,
                set_zero_if_not_found: None,
            };
            let r = self
                .instance
                .remoting
                .invoke(
                    &addr,
                    RemotingCommand::request(
                        RequestCode::QUERY_CONSUMER_OFFSET,
                        header.to_ext_fields(),
                    ),
                    CALL_TIMEOUT,
                )
                .await?;
            if r.code == 0 {
                return Ok(OffsetResponseHeader::from_ext_fields(&r.ext_fields)?.offset);
            }
        }
        let addr = self
            .broker_addr(&mq.broker_name)
            .ok_or_else(|| ClientError::Invalid("no broker for queue".into()))?;
        let offset_call = |code, fields: ExtFields| async move {
            let r = self
                .instance
                .remoting
                .invoke(&addr, RemotingCommand::request(code, fields), CALL_TIMEOUT)
                .await?;
            Ok::<i64, ClientError>(
                OffsetResponseHeader::from_ext_fields(&r.ext_fields)
                    .map(|h| h.offset)
                    .unwrap_or(0),
            )
        };
        match self.config.consume_from_where {
            ConsumeFromWhere::ConsumeFromFirstOffset | ConsumeFromWhere::ConsumeFromMinOffset => {
                Ok(0)
            }
            ConsumeFromWhere::ConsumeFromTimestamp => {
                let h = SearchOffsetRequestHeader {
                    topic: mq.topic.clone(),
                    queue_id: mq.queue_id,
                    timestamp: self.config.consume_timestamp,
                    boundary_type: None,
                };
                offset_call(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, h.to_ext_fields()).await
            }
            _ if mq.topic.starts_with("%RETRY%") => Ok(0),
            _ => {
                let h = GetMaxOffsetRequestHeader {
                    topic: mq.topic.clone(),
                    queue_id: mq.queue_id,
                    committed: None,
                };
                offset_call(RequestCode::GET_MAX_OFFSET, h.to_ext_fields()).await
            }
        }
    }

    async fn persist_one(&self, mq: &MessageQueue) {
        if self.offsets.is_local() {
            let _ = self.offsets.persist_local();
            return;
        }
        let (Some(offset), Some(addr)) = (self.offsets.get(mq), self.broker_addr(&mq.broker_name))
        else {
            return;
        };
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: self.config.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            commit_offset: offset,
        };
        let _ = self
            .instance
            .remoting
            .invoke(
                &addr,
                RemotingCommand::request(
                    RequestCode::UPDATE_CONSUMER_OFFSET,
                    header.to_ext_fields(),
                ),
                CALL_TIMEOUT,
            )
            .await;
    }

    /// Stores every owned queue's consumed offset (every 5 s and at shutdown).
    pub async fn persist_offsets(&self) {
        let states: Vec<Arc<QueueState>> = self.queues.lock().values().cloned().collect();
        for state in &states {
            self.offsets
                .update(&state.mq, state.consumed_offset(), false);
        }
        if self.offsets.is_local() {
            if let Err(e) = self.offsets.persist_local() {
                tracing::warn!(error = %e, "cannot write the local offset file");
            }
            return;
        }
        for state in states {
            self.persist_one(&state.mq).await;
        }
    }

    /// Queue locks live on masters only (as in Java clients): without a master an orderly
    /// queue waits, rather than two consumers holding locks on different brokers.
    pub(super) async fn lock_call(&self, code: RequestCode, mq: &MessageQueue) -> bool {
        let Some((addr, true)) = self.pull_addr(&mq.broker_name, MASTER_ID) else {
            return false;
        };
        let body = LockBatchRequestBody {
            consumer_group: self.config.group.clone(),
            client_id: self.client_id.clone(),
            mq_set: vec![mq.clone()],
            only_this_broker: false,
        };
        match self
            .instance
            .remoting
            .invoke(
                &addr,
                RemotingCommand::request(code, ExtFields::new()).with_body(fastjson::encode(&body)),
                CALL_TIMEOUT,
            )
            .await
        {
            Ok(r) if r.code == 0 && code == RequestCode::LOCK_BATCH_MQ => {
                fastjson::decode::<LockBatchResponseBody>(&r.body)
                    .is_ok_and(|b| b.lock_ok_mq_set.contains(mq))
            }
            Ok(r) => r.code == 0,
            Err(_) => false,
        }
    }

    /// Gives a failed message back to the broker for a later retry (CONSUMER_SEND_MSG_BACK).
    pub async fn send_back(&self, msg: &ReceivedMessage) -> bool {
        let Some(addr) = self.broker_addr(&msg.queue.broker_name) else {
            return false;
        };
        let header = ConsumerSendMsgBackRequestHeader {
            offset: msg.record.head.physical_offset,
            group: self.config.group.clone(),
            delay_level: 0,
            origin_msg_id: Some(msg.msg_id()),
            origin_topic: Some(msg.topic().to_owned()),
            unit_mode: Some(false),
            max_reconsume_times: Some(self.config.max_reconsume_times),
        };
        matches!(
            self.instance.remoting.invoke(&addr, RemotingCommand::request(RequestCode::CONSUMER_SEND_MSG_BACK, header.to_ext_fields()), CALL_TIMEOUT).await,
            Ok(r) if r.code == 0
        )
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
        let topics: Vec<String> = self.subscriptions.read().keys().cloned().collect();
        for topic in topics {
            let _ = self.fetch_route(&topic).await;
        }
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
        let group = Some(self.config.group.clone());
        self.instance
            .unregister(self.all_broker_addrs(), None, group)
            .await;
        self.instance.unregister_consumer(&self.config.group);
        self.instance.release().await;
        self.claim.lock().take();
    }
}

fn build_subscription(topic: &str, expression: &str, kind: ExpressionType) -> SubscriptionData {
    let expression = expression.trim();
    if kind == ExpressionType::Sql92 {
        return SubscriptionData {
            topic: topic.to_owned(),
            sub_string: expression.to_owned(),
            sub_version: now_ms(),
            expression_type: Some(kind.as_str().into()),
            ..Default::default()
        };
    }
    let sub_string = if expression.is_empty() {
        "*".to_owned()
    } else {
        expression.to_owned()
    };
    let mut data = SubscriptionData {
        topic: topic.to_owned(),
        sub_string: sub_string.clone(),
        sub_version: now_ms(),
        expression_type: Some("TAG".into()),
        ..Default::default()
    };
    if sub_string != "*" {
        for tag in sub_string
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            data.tags_set.insert(tag.to_owned());
            data.code_set
                .insert(stellmq_remoting::protocol::message::java_string_hash(tag));
        }
    }
    data
}
