//! What push and lite pull consumers share: the consumer's state (config, subscriptions,
//! routes, offsets, assigned queues), where pulled messages go ([`MessageSink`]) and the
//! single broker calls every part makes: heartbeats, queue locks and sending a message back.
//!
//! The parts that act on this state sit above it: `pull_loop` (one long-polling loop per
//! queue), `progress` (where a queue starts, committing offsets), `rebalance` (which queues
//! this member owns) and `lifecycle` (start-up checks, the background loop, shutdown).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::protocol::body::{
    fastjson, ConsumeType, ConsumerData, HeartbeatData, LockBatchRequestBody,
    LockBatchResponseBody, MessageModel, MessageQueue,
};
use stellmq_remoting::protocol::headers::ConsumerSendMsgBackRequestHeader;
use stellmq_remoting::protocol::message::now_ms;
use stellmq_remoting::protocol::RequestCode;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::config::ConsumerConfig;
use super::offset_store::OffsetTable;
use super::queue_state::QueueState;
use super::registry::GroupClaim;
use super::routes::{ConsumerRoutes, MASTER_ID};
use super::stats::ConsumerStats;
use super::subscription::Subscriptions;
use crate::error::ClientError;
use crate::instance::ClientInstance;
use crate::message::ReceivedMessage;
use crate::probe::{ConsumerProbe, DirectConsume};
use crate::request::{bare, request};
use crate::trace::{TraceRole, TracedClient, Tracer};

/// How long a consumer's calls to a broker or name server wait (pulls excepted).
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// Where pulled messages go. The pull loop has counted them in flight on their queue
/// ([`QueueState::begin`]) before `deliver`; the sink finishes each when it is consumed.
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
    /// How the consumer reports itself in heartbeats and running info: push consumers
    /// are passive (the listener is called), lite pull and classic pull ones active.
    fn consume_type(&self) -> ConsumeType {
        ConsumeType::ConsumeActively
    }
    /// Runs the listener on one message outside the pull flow (CONSUME_MESSAGE_DIRECTLY);
    /// `None` where there is no listener.
    fn consume_directly(&self, _message: ReceivedMessage) -> Option<DirectConsume> {
        None
    }
}

pub(crate) struct ConsumerCore {
    pub config: ConsumerConfig,
    pub client_id: String,
    pub instance: Arc<ClientInstance>,
    pub subscriptions: Subscriptions,
    pub routes: ConsumerRoutes,
    pub offsets: OffsetTable,
    pub(super) rebalance_now: Arc<Notify>,
    pub(super) route_refresh_now: Notify,
    pub stop: CancellationToken,
    pub(super) queues: Mutex<HashMap<MessageQueue, Arc<QueueState>>>,
    pub(super) sink: Arc<dyn MessageSink>,
    pub(super) claim: Mutex<Option<GroupClaim>>,
    pub(super) stats: ConsumerStats,
    /// When the consumer started (ms since the epoch).
    pub(super) started_ms: i64,
    /// With `enable_msg_trace`: where SubBefore and SubAfter records go.
    pub(super) tracer: Option<Arc<Tracer>>,
}

impl ConsumerCore {
    pub async fn new(
        mut config: ConsumerConfig,
        sink: Arc<dyn MessageSink>,
    ) -> Result<Arc<Self>, ClientError> {
        config.group = crate::namespace::wrap(config.namespace.as_deref(), &config.group);
        config.allocate =
            std::mem::take(&mut config.allocate).in_namespace(config.namespace.as_deref());
        let instance = ClientInstance::obtain(
            &config.namesrv_addr,
            &config.instance_name,
            &config.tls,
            config.credentials.as_ref(),
        )
        .await?;
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
        let tracer = TracedClient {
            enabled: config.enable_msg_trace,
            namesrv_addr: &config.namesrv_addr,
            tls: &config.tls,
            credentials: config.credentials.as_ref(),
            namespace: config.namespace.as_deref(),
            group: &config.group,
            customized_topic: config.customized_trace_topic.as_deref(),
            local_ip: instance.local_ip,
            role: TraceRole::Consume,
        }
        .start();
        let core = Arc::new(Self {
            tracer,
            config,
            client_id,
            routes: ConsumerRoutes::new(instance.clone(), CALL_TIMEOUT),
            instance,
            subscriptions: Subscriptions::default(),
            offsets,
            rebalance_now,
            route_refresh_now: Notify::new(),
            stop: CancellationToken::new(),
            queues: Mutex::new(HashMap::new()),
            sink,
            claim: Mutex::new(Some(claim)),
            stats: ConsumerStats::default(),
            started_ms: now_ms(),
        });
        let weak = Arc::downgrade(&core);
        core.instance.register_offset_reset(
            &core.config.group,
            Arc::new(move |notice| {
                if let Some(core) = weak.upgrade() {
                    tokio::spawn(async move { core.reset_offsets(notice).await });
                }
            }),
        );
        let probe: Weak<dyn ConsumerProbe> = Arc::downgrade(&core) as Weak<dyn ConsumerProbe>;
        core.instance.register_probe(&core.config.group, probe);
        Ok(core)
    }

    /// Subscribes `topic` (in the consumer's namespace), and in clustering mode the group's
    /// retry topic.
    pub fn subscribe(&self, topic: &str, expression: &str) {
        let topic = &crate::namespace::wrap(self.config.namespace.as_deref(), topic);
        self.subscriptions
            .insert(topic, expression, self.config.expression_type);
        if self.config.message_model == MessageModel::Clustering {
            self.subscriptions
                .insert_retry(&format!("%RETRY%{}", self.config.group));
        }
    }

    /// A subscription used only for pulling assigned queues (no retry topic).
    pub fn subscribe_without_retry(&self, topic: &str, expression: &str) {
        self.subscriptions
            .insert(topic, expression, self.config.expression_type);
    }

    pub fn assigned(&self) -> Vec<MessageQueue> {
        let mut v: Vec<MessageQueue> = self.queues.lock().keys().cloned().collect();
        v.sort();
        v
    }

    pub fn queue_state(&self, mq: &MessageQueue) -> Option<Arc<QueueState>> {
        self.queues.lock().get(mq).cloned()
    }

    /// Asks the background task to re-read routes now (a broker stopped answering).
    pub fn refresh_routes_soon(&self) {
        self.route_refresh_now.notify_one();
    }

    pub async fn heartbeat(&self) {
        let data = HeartbeatData {
            client_id: self.client_id.clone(),
            producer_data_set: Vec::new(),
            consumer_data_set: vec![ConsumerData {
                group_name: self.config.group.clone(),
                consume_type: self.sink.consume_type(),
                message_model: self.config.message_model,
                consume_from_where: self.config.consume_from_where,
                subscription_data_set: self.subscriptions.all(),
                unit_mode: false,
            }],
        };
        self.instance
            .heartbeat(self.routes.all_broker_addrs(), &data, |addr, e| {
                tracing::debug!(broker = %addr, error = %e, "consumer heartbeat failed");
            })
            .await;
    }

    /// LOCK_BATCH_MQ or UNLOCK_BATCH_MQ of one queue; true if the broker locked (or
    /// unlocked) it. Queue locks live on masters only (as in Java clients): without a master
    /// an orderly queue waits, rather than two consumers holding locks on different brokers.
    pub(super) async fn lock_call(&self, code: RequestCode, mq: &MessageQueue) -> bool {
        let Some((addr, true)) = self.routes.pull_addr(&mq.broker_name, MASTER_ID) else {
            return false;
        };
        let body = LockBatchRequestBody {
            consumer_group: self.config.group.clone(),
            client_id: self.client_id.clone(),
            mq_set: vec![mq.clone()],
            only_this_broker: false,
        };
        let request = bare(code).with_body(fastjson::encode(&body));
        match self
            .instance
            .remoting
            .invoke(&addr, request, CALL_TIMEOUT)
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

    /// Gives a failed message back to the broker for a later retry (CONSUMER_SEND_MSG_BACK);
    /// true if the broker took it.
    pub async fn send_back(&self, msg: &ReceivedMessage) -> bool {
        let Some(addr) = self.routes.broker_addr(&msg.queue.broker_name) else {
            return false;
        };
        let header = ConsumerSendMsgBackRequestHeader {
            offset: msg.record.head.physical_offset,
            group: self.config.group.clone(),
            delay_level: 0,
            origin_msg_id: Some(msg.msg_id()),
            origin_topic: Some(msg.origin_topic().to_owned()),
            unit_mode: Some(false),
            max_reconsume_times: Some(self.config.max_reconsume_times),
        };
        let request = request(RequestCode::CONSUMER_SEND_MSG_BACK, &header);
        matches!(
            self.instance.remoting.invoke(&addr, request, CALL_TIMEOUT).await,
            Ok(r) if r.code == 0
        )
    }
}
