//! The producer: sync, async and oneway sends, batches, queue selection, delay levels,
//! compression, retries on other brokers and a short quarantine for brokers that failed.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::RwLock;
use stellmq_remoting::protocol::body::{HeartbeatData, MessageQueue, ProducerData, TopicRouteData};
use stellmq_remoting::protocol::headers::{
    CommandHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{
    batch, id::UniqIdGenerator, now_ms, property, sys_flag, zlib_compress,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::instance::ClientInstance;
use crate::message::{Message, SendResult, SendStatus};
use crate::request::{refusal, request};
use crate::route::PublishInfo;

/// Producer options, with RocketMQ's names and defaults.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// `ip:port;ip:port`.
    pub namesrv_addr: String,
    pub group: String,
    pub instance_name: String,
    /// `sendMsgTimeout`.
    pub send_msg_timeout: Duration,
    /// `retryTimesWhenSendFailed`: extra attempts on other brokers.
    pub retry_times_when_send_failed: u32,
    /// `compressMsgBodyOverHowmuch`: zlib-compress bodies at least this large.
    pub compress_msg_body_over_howmuch: usize,
    pub max_message_size: usize,
    /// Queues asked for when a topic is auto-created.
    pub default_topic_queue_nums: i32,
    /// How long a broker that failed a send is avoided.
    pub fault_isolation: Duration,
    /// Optional namespace: topics and the group become `<namespace>%<name>` on the broker.
    pub namespace: Option<String>,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        Self {
            namesrv_addr: std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| "127.0.0.1:9876".into()),
            group: "DEFAULT_PRODUCER".into(),
            instance_name: std::process::id().to_string(),
            send_msg_timeout: Duration::from_secs(3),
            retry_times_when_send_failed: 2,
            compress_msg_body_over_howmuch: 4096,
            max_message_size: 4 * 1024 * 1024,
            default_topic_queue_nums: 4,
            fault_isolation: Duration::from_secs(30),
            namespace: None,
        }
    }
}

/// How to pick the queue of a send.
enum QueueChoice<'a> {
    /// Round robin over healthy brokers, retrying others on failure.
    Any,
    Fixed(&'a MessageQueue),
}

struct Inner {
    config: ProducerConfig,
    instance: Arc<ClientInstance>,
    routes: RwLock<HashMap<String, PublishInfo>>,
    faults: RwLock<HashMap<String, Instant>>,
    next_queue: AtomicUsize,
    ids: UniqIdGenerator,
    client_id: String,
    stop: CancellationToken,
}

/// A started producer; clones share it.
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Inner>,
}

/// Whether a failed send may go to another broker: RocketMQ's retriable response codes, and
/// any failure that is not a refusal (a lost connection, a timeout, an unreadable answer).
fn retriable(error: &ClientError) -> bool {
    error
        .remote_code()
        .is_none_or(|code| [17, 14, 1, 16, 204, 205, 2].contains(&code))
}

impl Producer {
    /// Connects to the name servers and starts heartbeats and route refreshes.
    pub async fn start(config: ProducerConfig) -> Result<Self, ClientError> {
        let instance = ClientInstance::obtain(&config.namesrv_addr, &config.instance_name).await?;
        let local_ip = instance.local_ip;
        let client_id = instance.client_id.clone();
        let mut config = config;
        config.group = crate::namespace::wrap(config.namespace.as_deref(), &config.group);
        let inner = Arc::new(Inner {
            ids: UniqIdGenerator::new(local_ip),
            client_id,
            instance,
            routes: RwLock::new(HashMap::new()),
            faults: RwLock::new(HashMap::new()),
            next_queue: AtomicUsize::new(rand::random::<u16>() as usize),
            stop: CancellationToken::new(),
            config,
        });
        tokio::spawn(background(Arc::downgrade(&inner), inner.stop.clone()));
        Ok(Self { inner })
    }

    pub fn client_id(&self) -> &str {
        &self.inner.client_id
    }

    /// The producer group (with its namespace).
    pub fn group(&self) -> &str {
        &self.inner.config.group
    }

    /// The master address of a broker name from the cached routes.
    pub(crate) fn master_addr(&self, broker_name: &str) -> Option<String> {
        self.inner
            .routes
            .read()
            .values()
            .find_map(|info| info.masters.get(broker_name).cloned())
    }

    /// Loads the publish route of `topic` (namespace applied) if not cached yet.
    pub(crate) async fn ensure_route(&self, topic: &str) -> Result<(), ClientError> {
        let topic = crate::namespace::wrap(self.inner.config.namespace.as_deref(), topic);
        self.inner.publish_info(&topic).await.map(|_| ())
    }

    pub(crate) async fn heartbeat_now(&self) {
        self.inner.heartbeat().await;
    }

    pub(crate) async fn invoke_oneway(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<(), ClientError> {
        self.inner
            .instance
            .remoting
            .invoke_oneway(addr, request)
            .await
            .map_err(Into::into)
    }

    pub(crate) fn instance(&self) -> &Arc<ClientInstance> {
        &self.inner.instance
    }

    /// Sends and waits for the broker, retrying other brokers on failure.
    pub async fn send(&self, msg: Message) -> Result<SendResult, ClientError> {
        self.inner
            .send(msg, QueueChoice::Any, false)
            .await?
            .ok_or_else(|| ClientError::Invalid("a two-way send produced no result".into()))
    }

    /// Sends to one queue (no retry elsewhere: ordering depends on the queue).
    pub async fn send_to_queue(
        &self,
        msg: Message,
        queue: &MessageQueue,
    ) -> Result<SendResult, ClientError> {
        self.inner
            .send(msg, QueueChoice::Fixed(queue), false)
            .await?
            .ok_or_else(|| ClientError::Invalid("a two-way send produced no result".into()))
    }

    /// Sends to the queue `selector` picks from the topic's queues (ordered messages: pick by
    /// a key's hash so one key always lands on one queue).
    pub async fn send_with_selector(
        &self,
        msg: Message,
        selector: impl FnOnce(&[MessageQueue]) -> usize,
    ) -> Result<SendResult, ClientError> {
        let topic = crate::namespace::wrap(self.inner.config.namespace.as_deref(), &msg.topic);
        let info = self.inner.publish_info(&topic).await?;
        if info.queues.is_empty() {
            return Err(ClientError::Invalid(format!(
                "topic {} has no writable queue",
                msg.topic
            )));
        }
        let index = selector(&info.queues) % info.queues.len();
        self.send_to_queue(msg, &info.queues[index]).await
    }

    /// Sends without waiting for the broker's answer.
    pub async fn send_oneway(&self, msg: Message) -> Result<(), ClientError> {
        self.inner
            .send(msg, QueueChoice::Any, true)
            .await
            .map(|_| ())
    }

    /// Sends in the background; the returned future resolves to the result.
    pub fn send_async(
        &self,
        msg: Message,
    ) -> impl Future<Output = Result<SendResult, ClientError>> {
        let producer = self.clone();
        let task: JoinHandle<Result<SendResult, ClientError>> =
            tokio::spawn(async move { producer.send(msg).await });
        async move { task.await? }
    }

    /// Sends messages of one topic as one batch (one queue, consecutive offsets).
    pub async fn send_batch(&self, msgs: Vec<Message>) -> Result<SendResult, ClientError> {
        self.inner.send_batch(msgs).await
    }

    /// Unregisters from the brokers and closes connections.
    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        let masters: Vec<String> = self
            .inner
            .routes
            .read()
            .values()
            .flat_map(|i| i.masters.values().cloned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let group = Some(self.inner.config.group.clone());
        self.inner.instance.unregister(masters, group, None).await;
        self.inner.instance.release().await;
    }
}

impl Inner {
    async fn fetch_route(&self, topic: &str) -> Result<Option<TopicRouteData>, ClientError> {
        self.instance
            .topic_route(topic, self.config.send_msg_timeout)
            .await
    }

    /// The topic's publish queues, from cache or the name servers; a topic without a route
    /// borrows TBW102's so the broker can auto-create it.
    async fn publish_info(&self, topic: &str) -> Result<PublishInfo, ClientError> {
        if let Some(info) = self
            .routes
            .read()
            .get(topic)
            .filter(|i| !i.queues.is_empty())
        {
            return Ok(info.clone());
        }
        let info = match self.fetch_route(topic).await? {
            Some(route) => PublishInfo::from_route(topic, &route, None),
            None => match self.fetch_route("TBW102").await? {
                Some(route) => PublishInfo::from_route(
                    topic,
                    &route,
                    Some(self.config.default_topic_queue_nums),
                ),
                None => return Err(ClientError::TopicNotExist(topic.to_owned())),
            },
        };
        if info.queues.is_empty() {
            return Err(ClientError::TopicNotExist(topic.to_owned()));
        }
        self.routes.write().insert(topic.to_owned(), info.clone());
        Ok(info)
    }

    fn healthy(&self, broker: &str) -> bool {
        self.faults
            .read()
            .get(broker)
            .is_none_or(|until| Instant::now() >= *until)
    }

    fn choose(&self, info: &PublishInfo, avoid: Option<&str>) -> MessageQueue {
        let n = info.queues.len();
        let start = self.next_queue.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|i| &info.queues[(start + i) % n])
            .find(|q| Some(q.broker_name.as_str()) != avoid && self.healthy(&q.broker_name))
            .unwrap_or(&info.queues[start % n])
            .clone()
    }

    fn prepare(&self, msg: &mut Message) -> Result<i32, ClientError> {
        msg.topic = crate::namespace::wrap(self.config.namespace.as_deref(), &msg.topic);
        if let Some(reason) = validate_topic(&msg.topic) {
            return Err(ClientError::Invalid(reason));
        }
        if msg.body.is_empty() {
            return Err(ClientError::Invalid("the message body is empty".into()));
        }
        if msg.body.len() > self.config.max_message_size {
            return Err(ClientError::Invalid(format!(
                "the message body is {} bytes, over the {} byte limit",
                msg.body.len(),
                self.config.max_message_size
            )));
        }
        if msg.property(property::UNIQ_KEY).is_none() {
            msg.set_property(property::UNIQ_KEY, self.ids.next_id());
        }
        let mut flag = 0;
        if msg
            .property(property::TRAN_MSG)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            flag |= sys_flag::TRANSACTION_PREPARED_TYPE;
        }
        if msg.body.len() >= self.config.compress_msg_body_over_howmuch {
            msg.body = Bytes::from(zlib_compress(&msg.body, 5));
            flag |= sys_flag::COMPRESSED;
        }
        Ok(flag)
    }

    fn header(
        &self,
        msg: &Message,
        queue: &MessageQueue,
        sys_flag: i32,
    ) -> SendMessageRequestHeaderV2 {
        let mut h = SendMessageRequestHeader {
            producer_group: self.config.group.clone(),
            topic: msg.topic.clone(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: self.config.default_topic_queue_nums,
            queue_id: queue.queue_id,
            sys_flag,
            born_timestamp: now_ms(),
            flag: msg.flag,
            properties: Some(msg.encoded_properties()),
            reconsume_times: Some(0),
            unit_mode: Some(false),
            batch: None,
            max_reconsume_times: None,
            broker_name: None,
        };
        if msg.topic.starts_with("%RETRY%") {
            h.reconsume_times = msg
                .property(property::RECONSUME_TIME)
                .and_then(|v| v.parse().ok());
            h.max_reconsume_times = msg
                .property(property::MAX_RECONSUME_TIMES)
                .and_then(|v| v.parse().ok());
        }
        h.into()
    }

    async fn send(
        &self,
        mut msg: Message,
        choice: QueueChoice<'_>,
        oneway: bool,
    ) -> Result<Option<SendResult>, ClientError> {
        let flag = self.prepare(&mut msg)?;
        let info = self.publish_info(&msg.topic).await?;
        let attempts = match (&choice, oneway) {
            (QueueChoice::Any, false) => 1 + self.config.retry_times_when_send_failed,
            _ => 1,
        };
        let mut last_error = None;
        let mut avoid: Option<String> = None;
        for _ in 0..attempts {
            let queue = match &choice {
                QueueChoice::Any => self.choose(&info, avoid.as_deref()),
                QueueChoice::Fixed(q) => (*q).clone(),
            };
            let Some(addr) = info.masters.get(&queue.broker_name).cloned() else {
                last_error = Some(ClientError::Invalid(format!(
                    "broker {} has no master",
                    queue.broker_name
                )));
                avoid = Some(queue.broker_name.clone());
                continue;
            };
            let code = if msg.is_reply() {
                RequestCode::SEND_REPLY_MESSAGE_V2
            } else {
                RequestCode::SEND_MESSAGE_V2
            };
            let mut request =
                request(code, &self.header(&msg, &queue, flag)).with_body(msg.body.clone());
            if oneway {
                request.mark_oneway();
                return self
                    .instance
                    .remoting
                    .invoke_oneway(&addr, request)
                    .await
                    .map(|_| None)
                    .map_err(Into::into);
            }
            let started = Instant::now();
            match self
                .instance
                .remoting
                .invoke(&addr, request, self.config.send_msg_timeout)
                .await
            {
                Ok(response) => match to_result(
                    &addr,
                    &response,
                    &queue,
                    msg.property(property::UNIQ_KEY).unwrap_or(""),
                ) {
                    Ok(result) => {
                        if started.elapsed() > Duration::from_secs(1) {
                            self.isolate(&queue.broker_name, Duration::from_secs(5));
                        }
                        return Ok(Some(result));
                    }
                    Err(e) => {
                        let retry = retriable(&e);
                        last_error = Some(e);
                        if !retry {
                            break;
                        }
                    }
                },
                Err(e) => last_error = Some(e.into()),
            }
            self.isolate(&queue.broker_name, self.config.fault_isolation);
            avoid = Some(queue.broker_name.clone());
            // The route may have changed (broker gone): refresh it for the next attempt.
            self.routes.write().remove(&msg.topic);
        }
        Err(last_error.unwrap_or_else(|| ClientError::Invalid("no queue to send to".into())))
    }

    fn isolate(&self, broker: &str, for_how_long: Duration) {
        self.faults
            .write()
            .insert(broker.to_owned(), Instant::now() + for_how_long);
    }

    async fn send_batch(&self, mut msgs: Vec<Message>) -> Result<SendResult, ClientError> {
        for m in &mut msgs {
            m.topic = crate::namespace::wrap(self.config.namespace.as_deref(), &m.topic);
        }
        let topic = msgs
            .first()
            .map(|m| m.topic.clone())
            .ok_or_else(|| ClientError::Invalid("empty batch".into()))?;
        if msgs.iter().any(|m| m.topic != topic) {
            return Err(ClientError::Invalid("a batch must have one topic".into()));
        }
        if topic.starts_with("%RETRY%")
            || msgs.iter().any(|m| m.property(property::DELAY).is_some())
        {
            return Err(ClientError::Invalid(
                "a batch cannot hold retry or delayed messages".into(),
            ));
        }
        let mut items = Vec::with_capacity(msgs.len());
        let mut ids = Vec::with_capacity(msgs.len());
        for m in &mut msgs {
            if m.body.is_empty() {
                return Err(ClientError::Invalid(
                    "a batched message body is empty".into(),
                ));
            }
            if m.property(property::UNIQ_KEY).is_none() {
                m.set_property(property::UNIQ_KEY, self.ids.next_id());
            }
            ids.push(m.property(property::UNIQ_KEY).unwrap_or("").to_owned());
            items.push(batch::BatchItem {
                flag: m.flag,
                body: m.body.clone(),
                properties: m.encoded_properties(),
            });
        }
        let body = batch::encode(&items);
        if body.len() > self.config.max_message_size {
            return Err(ClientError::Invalid(format!(
                "the batch is {} bytes, over the {} byte limit",
                body.len(),
                self.config.max_message_size
            )));
        }
        let info = self.publish_info(&topic).await?;
        let mut last_error = None;
        for _ in 0..=self.config.retry_times_when_send_failed {
            let queue = self.choose(&info, None);
            let Some(addr) = info.masters.get(&queue.broker_name).cloned() else {
                continue;
            };
            let mut header = self.header(&Message::new(topic.clone(), Bytes::new()), &queue, 0);
            header.m = Some(true);
            header.i = None;
            let request = request(RequestCode::SEND_BATCH_MESSAGE, &header).with_body(body.clone());
            match self
                .instance
                .remoting
                .invoke(&addr, request, self.config.send_msg_timeout)
                .await
            {
                Ok(response) => match to_result(&addr, &response, &queue, &ids.join(",")) {
                    Ok(result) => return Ok(result),
                    Err(e) => {
                        let retry = retriable(&e);
                        last_error = Some(e);
                        if !retry {
                            break;
                        }
                    }
                },
                Err(e) => last_error = Some(e.into()),
            }
            self.isolate(&queue.broker_name, self.config.fault_isolation);
        }
        Err(last_error.unwrap_or_else(|| ClientError::Invalid("no queue to send to".into())))
    }

    /// Heartbeats to every master this producer knows.
    async fn heartbeat(&self) {
        let data = HeartbeatData {
            client_id: self.client_id.clone(),
            producer_data_set: vec![
                ProducerData {
                    group_name: self.config.group.clone(),
                },
                ProducerData {
                    group_name: "CLIENT_INNER_PRODUCER".into(),
                },
            ],
            consumer_data_set: Vec::new(),
        };
        let masters: std::collections::BTreeSet<String> = self
            .routes
            .read()
            .values()
            .flat_map(|i| i.masters.values().cloned())
            .collect();
        self.instance
            .heartbeat(masters, &data, |addr, e| {
                tracing::debug!(broker = %addr, error = %e, "heartbeat failed");
            })
            .await;
    }

    async fn refresh_routes(&self) {
        let topics: Vec<String> = self.routes.read().keys().cloned().collect();
        for topic in topics {
            if let Ok(Some(route)) = self.fetch_route(&topic).await {
                let info = PublishInfo::from_route(&topic, &route, None);
                if !info.queues.is_empty() {
                    self.routes.write().insert(topic, info);
                }
            }
        }
    }
}

/// What `addr` answered to a send: where the message landed, or why it was not stored.
fn to_result(
    addr: &str,
    response: &RemotingCommand,
    queue: &MessageQueue,
    msg_id: &str,
) -> Result<SendResult, ClientError> {
    let status = match response.response_code() {
        Some(ResponseCode::SUCCESS) => SendStatus::SendOk,
        Some(ResponseCode::FLUSH_DISK_TIMEOUT) => SendStatus::FlushDiskTimeout,
        Some(ResponseCode::FLUSH_SLAVE_TIMEOUT) => SendStatus::FlushSlaveTimeout,
        Some(ResponseCode::SLAVE_NOT_AVAILABLE) => SendStatus::SlaveNotAvailable,
        _ => return Err(refusal(addr, response).into()),
    };
    let header = SendMessageResponseHeader::from_ext_fields(&response.ext_fields)?;
    Ok(SendResult {
        status,
        msg_id: msg_id.to_owned(),
        offset_msg_id: header.msg_id,
        queue: MessageQueue {
            queue_id: header.queue_id,
            ..queue.clone()
        },
        queue_offset: header.queue_offset,
    })
}

/// RocketMQ's client-side topic checks.
fn validate_topic(topic: &str) -> Option<String> {
    if topic.trim().is_empty() {
        return Some("the topic is blank".into());
    }
    if topic.len() > 127 {
        return Some("the topic is longer than 127 characters".into());
    }
    if !topic
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        return Some(format!(
            "the topic {topic} contains characters outside [%|a-zA-Z0-9_-]"
        ));
    }
    None
}

/// Heartbeats and route refreshes every 30 s (the first heartbeat soon after the first send).
async fn background(inner: std::sync::Weak<Inner>, stop: CancellationToken) {
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        ticks += 1;
        if ticks == 2 || ticks.is_multiple_of(30) {
            inner.refresh_routes().await;
            inner.heartbeat().await;
        }
    }
}
