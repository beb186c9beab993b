//! SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK (protocol.md 2.4,
//! 2.5, 7.1-7.3).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::RwLock;
use rand::Rng;
use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::{perm, SubscriptionGroupConfig, TopicConfig};
use stellmq_remoting::protocol::codes::busy_remark;
use stellmq_remoting::protocol::headers::{
    CommandHeader, ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader,
    SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use stellmq_remoting::protocol::message::{
    batch, id, property, sys_flag, MessageRecord, Properties,
};
use stellmq_remoting::protocol::names;
use stellmq_remoting::protocol::version::V3_4_9;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::{MessageStore, PutMessage, PutMessageResult};

use super::{header, FAQ};

mod reply;
use crate::clients::ProducerManager;
use crate::config::BrokerConfig;
use crate::context::BrokerIdentity;
use crate::group::SubscriptionGroupManager;
use crate::metrics::MessageType;
use crate::processor::guard;
use crate::stats::{BrokerStats, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE};
use crate::timer;
use crate::topic::{self, CreateTopicError, TopicConfigManager};
use crate::transaction;
use crate::writer::{self, MessageWriter};

/// RocketMQ's `osPageCacheBusyTimeOutMills`.
const PAGE_CACHE_BUSY_MS: i64 = 1000;

pub struct SendProcessor {
    identity: Arc<BrokerIdentity>,
    config: Arc<RwLock<BrokerConfig>>,
    store: Arc<MessageStore>,
    topics: Arc<TopicConfigManager>,
    groups: Arc<SubscriptionGroupManager>,
    delay_levels: i32,
    writer: Arc<MessageWriter>,
    /// Where replies go (request/reply); none until [`SendProcessor::with_replies`].
    replies: Option<reply::Replies>,
    traffic: Arc<BrokerStats>,
}

/// Which send header a request code carries: `SendMessageRequestHeader` (SEND_MESSAGE,
/// SEND_REPLY_MESSAGE) or its single-letter V2 form (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE,
/// SEND_REPLY_MESSAGE_V2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderForm {
    V1,
    V2,
}

/// A validated send: where it goes and what it carries.
struct Target {
    topic: String,
    queue_id: i32,
    topic_config: TopicConfig,
    /// The topic was auto-created by this send.
    created: bool,
}

/// Retries before the dead-letter queue: the group's `retryMaxTimes`, or what the client
/// asks for (clients from 3.4.9 on send `maxReconsumeTimes`).
fn max_reconsume_times(
    group: &SubscriptionGroupConfig,
    request: &RemotingCommand,
    asked: Option<i32>,
) -> i32 {
    match asked.filter(|m| *m >= 0) {
        Some(m) if request.version >= V3_4_9 => m,
        _ => group.retry_max_times,
    }
}

/// A retry or dead-letter topic that cannot be created.
fn topic_refusal(e: CreateTopicError) -> ProcessorError {
    match e {
        CreateTopicError::Name(e) => guard::refusal(e),
        other => ProcessorError::system(other.to_string()),
    }
}

impl SendProcessor {
    pub fn new(
        identity: Arc<BrokerIdentity>,
        config: Arc<RwLock<BrokerConfig>>,
        store: Arc<MessageStore>,
        topics: Arc<TopicConfigManager>,
        groups: Arc<SubscriptionGroupManager>,
        delay_levels: i32,
        writer: Arc<MessageWriter>,
    ) -> Self {
        Self {
            identity,
            config,
            store,
            topics,
            groups,
            delay_levels,
            writer,
            replies: None,
            traffic: Arc::default(),
        }
    }

    /// Counts stored sends by topic (TOPIC_PUT_NUMS / TOPIC_PUT_SIZE).
    pub fn with_stats(mut self, traffic: Arc<BrokerStats>) -> Self {
        self.traffic = traffic;
        self
    }

    /// Serves SEND_REPLY_MESSAGE(_V2): replies are pushed to the requesting producer's
    /// connection and, with `store`, also stored (`storeReplyMessageEnable`).
    pub fn with_replies(mut self, producers: Arc<ProducerManager>, store: bool) -> Self {
        self.replies = Some(reply::Replies { producers, store });
        self
    }

    fn send_header(
        request: &RemotingCommand,
        form: HeaderForm,
    ) -> Result<SendMessageRequestHeader, ProcessorError> {
        match form {
            HeaderForm::V1 => header(request),
            HeaderForm::V2 => Ok(header::<SendMessageRequestHeaderV2>(request)?.into()),
        }
    }

    /// Checks common to every send; resolves topic (auto-creating it) and queue.
    fn check(
        &self,
        ctx: &RequestContext,
        h: &SendMessageRequestHeader,
    ) -> Result<Target, ProcessorError> {
        let config = self.config.read();
        if config.start_accept_send_request_time_stamp > crate::context::now_ms() {
            return Err(ProcessorError::system(format!(
                "broker unable to service, until {}",
                config.start_accept_send_request_time_stamp
            )));
        }
        if ctx.queued_for() > Duration::from_millis(config.wait_time_mills_in_send_queue) {
            return Err(ProcessorError::new(
                ResponseCode::SYSTEM_BUSY,
                busy_remark::TIMEOUT_CLEAN_QUEUE,
            ));
        }
        if self.store.is_page_cache_busy(PAGE_CACHE_BUSY_MS) {
            return Err(ProcessorError::new(
                ResponseCode::SYSTEM_BUSY,
                busy_remark::PC_SYNCHRONIZED,
            ));
        }
        if !self.identity.is_master() {
            return Err(ProcessorError::new(
                ResponseCode::SERVICE_NOT_AVAILABLE,
                "the broker is a slave and refuses writes",
            ));
        }
        if !perm::is_writeable(config.broker_permission) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!(
                    "the broker[{}] sending message is forbidden",
                    self.identity.broker_addr
                ),
            ));
        }
        names::check_topic(&h.topic).map_err(guard::refusal)?;
        if topic::is_not_allowed_send_topic(&h.topic) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("Sending message to topic[{}] is forbidden.", h.topic),
            ));
        }
        drop(config);
        let (topic_config, created) = self.resolve_topic(h)?;
        if !perm::is_writeable(topic_config.perm) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("the topic[{}] sending message is forbidden", h.topic),
            ));
        }
        let queues = topic_config
            .write_queue_nums
            .max(topic_config.read_queue_nums);
        let queue_id = if h.queue_id < 0 {
            rand::thread_rng().gen_range(0..topic_config.write_queue_nums.max(1))
        } else {
            h.queue_id
        };
        if queue_id >= queues {
            return Err(ProcessorError::system(format!(
                "request queueId[{queue_id}] is illegal, {} Producer: {}",
                h.topic,
                ctx.channel.peer()
            )));
        }
        Ok(Target {
            topic: h.topic.clone(),
            queue_id,
            topic_config,
            created,
        })
    }

    /// The topic's config, auto-created if allowed; true when it was created now.
    fn resolve_topic(
        &self,
        h: &SendMessageRequestHeader,
    ) -> Result<(TopicConfig, bool), ProcessorError> {
        if let Some(config) = self.topics.get(&h.topic) {
            return Ok((config, false));
        }
        let created = if h.topic.starts_with(topic::RETRY_PREFIX) {
            self.topics
                .auto_create(&h.topic, 1, perm::READ | perm::WRITE)
        } else {
            self.topics
                .create_in_send(&h.topic, &h.default_topic, h.default_topic_queue_nums, 0)
        };
        created.map(|config| (config, true)).map_err(|e| {
            let reason = match e {
                CreateTopicError::NoTemplate(_) => String::new(),
                other => format!(" ({other})"),
            };
            ProcessorError::new(
                ResponseCode::TOPIC_NOT_EXIST,
                format!(
                    "topic[{}] not exist, apply first please!{reason}{FAQ}",
                    h.topic
                ),
            )
        })
    }

    fn base_message(
        &self,
        ctx: &RequestContext,
        h: &SendMessageRequestHeader,
        target: &Target,
        body: Bytes,
    ) -> PutMessage {
        let mut flag = h.sys_flag;
        if target.topic_config.topic_filter_type == "MULTI_TAG" {
            flag |= sys_flag::MULTI_TAGS;
        }
        PutMessage {
            topic: target.topic.clone(),
            queue_id: target.queue_id,
            flag: h.flag,
            body,
            properties: String::new(),
            sys_flag: flag,
            born_timestamp: h.born_timestamp,
            born_host: ctx.channel.peer(),
            store_host: self.identity.store_host,
            reconsume_times: h.reconsume_times.unwrap_or(0),
            prepared_transaction_offset: 0,
            wait_store_ok: true,
        }
    }

    pub(crate) async fn send(
        &self,
        ctx: RequestContext,
        request: RemotingCommand,
        form: HeaderForm,
    ) -> ProcessResult {
        let h = Self::send_header(&request, form)?;
        let mut target = self.check(&ctx, &h)?;
        if target.created {
            // The sender learns of the topic from this answer: have it on disk first.
            self.topics.persisted_all().await;
        }
        if h.batch.unwrap_or(false) {
            return self.send_batch(&ctx, &request, &h, &target).await;
        }
        let max_size = self.store.config().max_message_size;
        if request.body.len() > max_size {
            return Err(ProcessorError::new(
                ResponseCode::MESSAGE_ILLEGAL,
                format!("the message body size over max value, MAX: {max_size}"),
            ));
        }
        let mut props = Properties::decode(h.properties.as_deref().unwrap_or(""));
        let message_type = MessageType::of(&props);
        let half = transaction::is_half_request(&props);
        if half && self.config.read().reject_transaction_message {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!(
                    "the broker[{}] sending transaction message is forbidden",
                    self.identity.broker_addr
                ),
            ));
        }
        if h.topic.starts_with(topic::RETRY_PREFIX) {
            self.redirect_retry(&request, &h, &mut target, &mut props)?;
        }
        let wait = props.wait_store_ok();
        props.remove(property::WAIT);
        props.insert(property::CLUSTER, self.identity.cluster_name.clone());
        let mut msg = self.base_message(&ctx, &h, &target, request.body.clone());
        msg.wait_store_ok = wait;
        if half {
            self.topics
                .ensure_internal_topic(topic::TRANS_HALF_TOPIC, 1, perm::READ | perm::WRITE);
            transaction::to_half(&mut msg, &mut props);
        } else if let Some(due) = self.timer_due(&props)? {
            self.topics
                .ensure_internal_topic(timer::TIMER_TOPIC, 1, perm::READ | perm::WRITE);
            timer::to_timer(&mut msg, &mut props, due);
        } else {
            self.apply_delay(&mut msg, &mut props);
        }
        msg.properties = props.encode();
        let result = self.writer.put_for(&ctx, vec![msg]).await;
        self.respond(&request, &target, result, message_type)
    }

    /// `%RETRY%group` sends: the group must exist, and past the retry limit the message goes
    /// to the dead letter queue (protocol.md 2.4 step 6).
    fn redirect_retry(
        &self,
        request: &RemotingCommand,
        h: &SendMessageRequestHeader,
        target: &mut Target,
        props: &mut Properties,
    ) -> Result<(), ProcessorError> {
        let group_name = &h.topic[topic::RETRY_PREFIX.len()..];
        let group = self
            .groups
            .find_or_create(group_name)
            .map_err(guard::group_refusal)?;
        let max = max_reconsume_times(&group, request, h.max_reconsume_times);
        if h.reconsume_times.unwrap_or(0) >= max {
            let dlq = names::dlq_topic(group_name).map_err(guard::refusal)?;
            let config = self
                .topics
                .auto_create(&dlq, 1, perm::READ | perm::WRITE)
                .map_err(topic_refusal)?;
            tracing::info!(event = "MESSAGE_TO_DLQ", group = %group_name, reconsume = h.reconsume_times.unwrap_or(0), "retry limit reached, message goes to the DLQ");
            props.remove(property::DELAY);
            *target = Target {
                topic: dlq,
                queue_id: 0,
                topic_config: config,
                created: false,
            };
        }
        Ok(())
    }

    /// When a timer message is due (None: not a timer, or timers are off, or already due).
    fn timer_due(&self, props: &Properties) -> Result<Option<i64>, ProcessorError> {
        let (enabled, max_delay_sec) = {
            let c = self.config.read();
            (c.timer_wheel_enable, c.timer_max_delay_sec)
        };
        if !enabled {
            return Ok(None);
        }
        timer::due_time(props, crate::context::now_ms(), max_delay_sec).map_err(|reason| {
            ProcessorError::new(
                ResponseCode::MESSAGE_ILLEGAL,
                format!("the message is illegal: {reason}"),
            )
        })
    }

    /// A `DELAY` level moves the message to SCHEDULE_TOPIC_XXXX, queue level - 1 (protocol.md 7.1).
    fn apply_delay(&self, msg: &mut PutMessage, props: &mut Properties) {
        let level = props.delay_level();
        if level <= 0
            || sys_flag::transaction_type(msg.sys_flag) == sys_flag::TRANSACTION_PREPARED_TYPE
        {
            return;
        }
        let level = level.min(self.delay_levels);
        props.insert(property::DELAY, level.to_string());
        crate::deferred::park(msg, props, topic::SCHEDULE_TOPIC, level - 1);
    }

    async fn send_batch(
        &self,
        ctx: &RequestContext,
        request: &RemotingCommand,
        h: &SendMessageRequestHeader,
        target: &Target,
    ) -> ProcessResult {
        if h.topic.starts_with(topic::RETRY_PREFIX) {
            return Err(ProcessorError::new(
                ResponseCode::MESSAGE_ILLEGAL,
                "batch messages cannot be sent to a retry topic",
            ));
        }
        let max_size = self.store.config().max_message_size;
        if request.body.len() > max_size {
            return Err(ProcessorError::new(
                ResponseCode::MESSAGE_ILLEGAL,
                format!("the message body size over max value, MAX: {max_size}"),
            ));
        }
        let max_count = self.config.read().max_batch_message_count;
        let items =
            batch::decode_at_most(request.body.clone(), max_count).map_err(|e| match e {
                batch::BatchError::TooMany { max } => ProcessorError::new(
                    ResponseCode::MESSAGE_ILLEGAL,
                    format!("a batch may hold at most {max} messages (maxBatchMessageCount)"),
                ),
                batch::BatchError::Record(e) => e.into(),
            })?;
        if items.is_empty() {
            return Err(ProcessorError::new(
                ResponseCode::MESSAGE_ILLEGAL,
                "empty batch",
            ));
        }
        let mut batch_props = Properties::decode(h.properties.as_deref().unwrap_or(""));
        let wait = batch_props.wait_store_ok();
        batch_props.remove(property::WAIT);
        batch_props.insert(property::CLUSTER, self.identity.cluster_name.clone());
        let mut msgs = Vec::with_capacity(items.len());
        for item in items {
            if item.body.len() > max_size {
                return Err(ProcessorError::new(
                    ResponseCode::MESSAGE_ILLEGAL,
                    format!("the message body size over max value, MAX: {max_size}"),
                ));
            }
            let mut props = Properties::decode(&item.properties);
            if props.delay_level() > 0 {
                return Err(ProcessorError::new(
                    ResponseCode::MESSAGE_ILLEGAL,
                    "batch messages cannot be delayed",
                ));
            }
            for (k, v) in batch_props.iter() {
                props.insert(k, v);
            }
            let mut msg = self.base_message(ctx, h, target, item.body);
            msg.flag = item.flag;
            msg.wait_store_ok = wait;
            msg.properties = props.encode();
            msgs.push(msg);
        }
        let result = self.writer.put_for(ctx, msgs).await;
        self.respond(request, target, result, MessageType::Normal)
    }

    fn respond(
        &self,
        request: &RemotingCommand,
        target: &Target,
        result: PutMessageResult,
        message_type: MessageType,
    ) -> ProcessResult {
        let queue_id = target.queue_id;
        let code = writer::response_code(&result)?;
        let Some(append) = result.append else {
            return Err(ProcessorError::system("stored without a position"));
        };
        let count = append.phys_offsets.len() as u64;
        self.traffic.add(TOPIC_PUT_NUMS, &target.topic, count, 1);
        self.traffic
            .add(TOPIC_PUT_SIZE, &target.topic, append.wrote_bytes as u64, 1);
        self.traffic.metrics.record_in(
            &target.topic,
            message_type,
            count,
            append.wrote_bytes as u64,
        );
        let msg_id = match append.phys_offsets.as_slice() {
            [one] => id::offset_msg_id(&self.identity.store_host, *one),
            many => many
                .iter()
                .map(|o| id::offset_msg_id(&self.identity.store_host, *o))
                .collect::<Vec<_>>()
                .join(","),
        };
        let fields = SendMessageResponseHeader {
            msg_id,
            queue_id,
            queue_offset: append.queue_offset,
            transaction_id: None,
            batch_uniq_id: None,
            msg_region: Some(self.identity.region_id.clone()),
            trace_on: Some(self.identity.trace_on.to_string()),
        }
        .to_ext_fields();
        Ok(Some(
            request.response_to(code, None).with_ext_fields(fields),
        ))
    }

    /// CONSUMER_SEND_MSG_BACK: a consumer gives a message back for a later retry.
    pub(crate) async fn send_back(
        &self,
        ctx: RequestContext,
        request: RemotingCommand,
    ) -> ProcessResult {
        let h: ConsumerSendMsgBackRequestHeader = header(&request)?;
        let group = self
            .groups
            .find_or_create(&h.group)
            .map_err(guard::group_refusal)?;
        if !perm::is_writeable(self.config.read().broker_permission) || !self.identity.is_master() {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!(
                    "the broker[{}] sending message is forbidden",
                    self.identity.broker_addr
                ),
            ));
        }
        if group.retry_queue_nums <= 0 {
            return Ok(Some(request.success_to()));
        }
        let raw = self.store.look_message_by_offset(h.offset).ok_or_else(|| {
            ProcessorError::system(format!("look message by offset failed, {}", h.offset))
        })?;
        let (original, _) = MessageRecord::decode(&raw, false)?;
        let mut props = original.properties.clone();
        if !props.contains(property::RETRY_TOPIC) {
            props.insert(property::RETRY_TOPIC, original.topic.clone());
        }
        let max = max_reconsume_times(&group, &request, h.max_reconsume_times);
        let reconsume = original.head.reconsume_times;
        let (topic_name, queue_id, delay) = if reconsume >= max || h.delay_level < 0 {
            let dlq = names::dlq_topic(&h.group).map_err(guard::refusal)?;
            self.topics
                .auto_create(&dlq, 1, perm::READ | perm::WRITE)
                .map_err(topic_refusal)?;
            tracing::info!(event = "MESSAGE_TO_DLQ", group = %h.group, reconsume, "send-back past the retry limit, message goes to the DLQ");
            (dlq, 0, 0)
        } else {
            let retry = names::retry_topic(&h.group).map_err(guard::refusal)?;
            let config = self
                .topics
                .auto_create(&retry, group.retry_queue_nums, perm::READ | perm::WRITE)
                .map_err(topic_refusal)?;
            let queue_id = rand::thread_rng().gen_range(0..config.write_queue_nums.max(1));
            let delay = if h.delay_level == 0 {
                3 + reconsume
            } else {
                h.delay_level
            };
            (retry, queue_id, delay)
        };
        if !props.contains(property::ORIGIN_MESSAGE_ID) {
            props.insert(
                property::ORIGIN_MESSAGE_ID,
                h.origin_msg_id.clone().unwrap_or_else(|| original.msg_id()),
            );
        }
        props.insert(property::WAIT, "false");
        props.remove(property::DELAY);
        if delay > 0 {
            props.insert(property::DELAY, delay.to_string());
        }
        let mut msg = PutMessage {
            topic: topic_name,
            queue_id,
            flag: original.head.flag,
            body: original.body.clone(),
            properties: String::new(),
            sys_flag: original.head.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6),
            born_timestamp: original.head.born_timestamp,
            born_host: original.head.born_host,
            store_host: self.identity.store_host,
            reconsume_times: reconsume + 1,
            prepared_transaction_offset: 0,
            wait_store_ok: false,
        };
        self.apply_delay(&mut msg, &mut props);
        msg.properties = props.encode();
        let result = self.writer.put_for(&ctx, vec![msg]).await;
        if result.status.is_stored() {
            Ok(Some(request.success_to()))
        } else {
            tracing::warn!(peer = %ctx.channel.peer(), status = ?result.status, "send-back not stored");
            Err(ProcessorError::system(format!("{:?}", result.status)))
        }
    }
}
