//! SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK (protocol.md 2.4,
//! 2.5, 7.1-7.3).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rand::Rng;
use stellmq_remoting::net::{ProcessResult, ProcessorError, RequestContext};
use stellmq_remoting::protocol::body::{perm, SubscriptionGroupConfig, TopicConfig};
use stellmq_remoting::protocol::codes::busy_remark;
use stellmq_remoting::protocol::headers::{
    CommandHeader, ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader,
    SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use stellmq_remoting::protocol::lite::{check_lite_topic, lmq_name, MAX_LITE_TOPIC_SIZE};
use stellmq_remoting::protocol::message::{
    batch, delay_level_of, id, priority_of, property, sys_flag, wait_store_ok, MessageKind,
    MessageRecord, Properties, PropertyLookup,
};
use stellmq_remoting::protocol::names;
use stellmq_remoting::protocol::recall::RecallHandle;
use stellmq_remoting::protocol::version::V3_4_9;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::{MessageStore, PutMessage, PutMessageResult};

use super::{header, FAQ};

mod props;
mod reply;
use props::SendProperties;

use crate::clients::ProducerManager;
use crate::config::BrokerConfig;
use crate::context::BrokerIdentity;
use crate::group::SubscriptionGroupManager;
use crate::metrics::MessageType;
use crate::processor::guard;
use crate::settings::Settings;
use crate::stats::{BrokerStats, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE};
use crate::timer;
use crate::topic::{self, CreateTopicError, TopicConfigManager};
use crate::transaction;
use crate::writer::{self, MessageWriter};

/// RocketMQ's `osPageCacheBusyTimeOutMills`.
const PAGE_CACHE_BUSY_MS: i64 = 1000;

pub struct SendProcessor {
    identity: Arc<BrokerIdentity>,
    settings: Settings<SendSettings>,
    store: Arc<MessageStore>,
    topics: Arc<TopicConfigManager>,
    groups: Arc<SubscriptionGroupManager>,
    delay_levels: i32,
    writer: Arc<MessageWriter>,
    /// Where replies go (request/reply); none until [`SendProcessor::with_replies`].
    replies: Option<reply::Replies>,
    traffic: Arc<BrokerStats>,
}

/// The broker settings a send reads (replaced when the configuration changes).
#[derive(Debug, Clone)]
pub struct SendSettings {
    pub broker_permission: i32,
    pub start_accept_send_request_time_stamp: i64,
    pub wait_time_mills_in_send_queue: u64,
    pub reject_transaction_message: bool,
    pub timer_wheel_enable: bool,
    pub timer_max_delay_sec: i64,
    pub max_batch_message_count: usize,
    pub recall_message_enable: bool,
    pub allow_recall_when_broker_not_writeable: bool,
}

impl From<&BrokerConfig> for SendSettings {
    fn from(c: &BrokerConfig) -> Self {
        Self {
            broker_permission: c.broker_permission,
            start_accept_send_request_time_stamp: c.start_accept_send_request_time_stamp,
            wait_time_mills_in_send_queue: c.wait_time_mills_in_send_queue,
            reject_transaction_message: c.reject_transaction_message,
            timer_wheel_enable: c.timer_wheel_enable,
            timer_max_delay_sec: c.timer_max_delay_sec,
            max_batch_message_count: c.max_batch_message_count,
            recall_message_enable: c.recall_message_enable,
            allow_recall_when_broker_not_writeable: c.allow_recall_when_broker_not_writeable,
        }
    }
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
    topic_config: TopicShape,
    /// The topic was auto-created by this send.
    created: bool,
}

/// RocketMQ 5.4: a priority message goes to the queue of its priority (the last queue when
/// the priority is higher than the topic has queues), whatever queue the producer chose. A
/// message that is also delayed, FIFO or transactional loses its priority, as in RocketMQ.
fn place_by_priority(target: &mut Target, props: &mut SendProperties<'_>) {
    let Some(priority) = priority_of(props) else {
        return;
    };
    if MessageKind::of(props) == MessageKind::Priority {
        let last = target
            .topic_config
            .write_queue_nums
            .saturating_sub(1)
            .max(0);
        target.queue_id = priority.min(last);
    } else {
        props.to_mut().remove(property::PRIORITY);
    }
}

/// RocketMQ 5.5: a message naming a lite topic (`__LITE_TOPIC`) also goes to that lite
/// topic's light message queue, `%LMQ%$<topic>$<lite>`. The name becomes a directory: it
/// is checked with RocketMQ's rule first.
fn lite_queue(topic: &str, props: &SendProperties<'_>) -> Result<Option<String>, ProcessorError> {
    let Some(lite) = props.get(property::LITE_TOPIC) else {
        return Ok(None);
    };
    check_lite_topic(lite, MAX_LITE_TOPIC_SIZE)
        .map_err(|reason| ProcessorError::new(ResponseCode::MESSAGE_ILLEGAL, reason))?;
    Ok(Some(lmq_name(topic, lite)))
}

/// What a send needs of its topic's config (read without cloning the config).
#[derive(Debug, Clone, Copy)]
struct TopicShape {
    perm: i32,
    read_queue_nums: i32,
    write_queue_nums: i32,
    multi_tag: bool,
}

impl From<&TopicConfig> for TopicShape {
    fn from(config: &TopicConfig) -> Self {
        Self {
            perm: config.perm,
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
            multi_tag: config.topic_filter_type == "MULTI_TAG",
        }
    }
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
        settings: Settings<SendSettings>,
        store: Arc<MessageStore>,
        topics: Arc<TopicConfigManager>,
        groups: Arc<SubscriptionGroupManager>,
        delay_levels: i32,
        writer: Arc<MessageWriter>,
    ) -> Self {
        Self {
            identity,
            settings,
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
        let config = self.settings.get();
        let accept_from = config.start_accept_send_request_time_stamp;
        if accept_from > 0 && accept_from > crate::context::now_ms() {
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
    ) -> Result<(TopicShape, bool), ProcessorError> {
        if let Some(shape) = self.topics.read(&h.topic, |c| TopicShape::from(c)) {
            return Ok((shape, false));
        }
        let created = if h.topic.starts_with(topic::RETRY_PREFIX) {
            self.topics
                .auto_create(&h.topic, 1, perm::READ | perm::WRITE)
        } else {
            self.topics
                .create_in_send(&h.topic, &h.default_topic, h.default_topic_queue_nums, 0)
        };
        created.map(|config| ((&config).into(), true)).map_err(|e| {
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
        if target.topic_config.multi_tag {
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
        let mut props = SendProperties::read(h.properties.as_deref().unwrap_or(""));
        let message_type = MessageType::of(&props);
        let half = transaction::is_half_request(&props);
        if half && self.settings.get().reject_transaction_message {
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
        place_by_priority(&mut target, &mut props);
        let lmq = lite_queue(&target.topic, &props)?;
        let mut msg = self.base_message(&ctx, &h, &target, request.body.clone());
        msg.wait_store_ok = wait_store_ok(&props);
        let mut recall = None;
        if half {
            self.topics
                .ensure_internal_topic(topic::TRANS_HALF_TOPIC, 1, perm::READ | perm::WRITE);
            transaction::to_half(&mut msg, props.to_mut());
        } else if let Some(due) = self.timer_due(&props)? {
            self.topics
                .ensure_internal_topic(timer::TIMER_TOPIC, 1, perm::READ | perm::WRITE);
            recall = self.recall_handle(&target.topic, due, &props);
            timer::to_timer(&mut msg, props.to_mut(), due);
        } else if let Some(level) = self.delay_level(&msg, &props) {
            Self::park_delayed(&mut msg, props.to_mut(), level);
        }
        msg.properties = props.encode_stored(&self.identity.cluster_name, lmq.as_deref());
        let result = self.writer.put_for(&ctx, vec![msg]).await;
        let mut response = self.respond(&request, &target, result, message_type)?;
        if let (Some(handle), Some(answer)) = (recall, response.as_mut()) {
            answer.ext_fields.insert("recallHandle", handle);
        }
        Ok(response)
    }

    /// The recall handle a timer message's send answers (RocketMQ's `attachRecallHandle`):
    /// none for a retry topic's message or one without a UNIQ_KEY.
    fn recall_handle(&self, topic: &str, due: i64, props: &impl PropertyLookup) -> Option<String> {
        if topic.starts_with(topic::RETRY_PREFIX) {
            return None;
        }
        let uniq_key = props.get(property::UNIQ_KEY)?;
        let handle = RecallHandle::for_timer(topic, &self.identity.broker_name, due, uniq_key);
        Some(handle.encode())
    }

    /// `%RETRY%group` sends: the group must exist, and past the retry limit the message goes
    /// to the dead letter queue (protocol.md 2.4 step 6).
    fn redirect_retry(
        &self,
        request: &RemotingCommand,
        h: &SendMessageRequestHeader,
        target: &mut Target,
        props: &mut SendProperties<'_>,
    ) -> Result<(), ProcessorError> {
        let group_name = h
            .topic
            .strip_prefix(topic::RETRY_PREFIX)
            .ok_or_else(|| ProcessorError::system("not a retry topic"))?;
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
            if props.contains(property::DELAY) {
                props.to_mut().remove(property::DELAY);
            }
            *target = Target {
                topic: dlq,
                queue_id: 0,
                topic_config: (&config).into(),
                created: false,
            };
        }
        Ok(())
    }

    /// When a timer message is due (None: not a timer, or timers are off, or already due).
    fn timer_due(&self, props: &impl PropertyLookup) -> Result<Option<i64>, ProcessorError> {
        let (enabled, max_delay_sec) = {
            let c = self.settings.get();
            (c.timer_wheel_enable, c.timer_max_delay_sec)
        };
        if !enabled {
            return Ok(None);
        }
        timer::due_time(props, crate::context::now_ms, max_delay_sec).map_err(|reason| {
            ProcessorError::new(
                ResponseCode::MESSAGE_ILLEGAL,
                format!("the message is illegal: {reason}"),
            )
        })
    }

    /// The delay level `msg` is parked at (capped at the broker's levels); none for a
    /// message without one and for a prepared transaction message.
    fn delay_level(&self, msg: &PutMessage, props: &impl PropertyLookup) -> Option<i32> {
        let level = delay_level_of(props.get(property::DELAY));
        let prepared =
            sys_flag::transaction_type(msg.sys_flag) == sys_flag::TRANSACTION_PREPARED_TYPE;
        (level > 0 && !prepared).then(|| level.min(self.delay_levels))
    }

    /// A `DELAY` level moves the message to SCHEDULE_TOPIC_XXXX, queue level - 1 (protocol.md 7.1).
    fn park_delayed(msg: &mut PutMessage, props: &mut Properties, level: i32) {
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
        let max_count = self.settings.get().max_batch_message_count;
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
        let batch_props = SendProperties::read(h.properties.as_deref().unwrap_or(""));
        let wait = wait_store_ok(&batch_props);
        // Every message gets the batch's properties (without WAIT) and the cluster.
        let shared: Vec<(&str, &str)> = batch_props
            .iter()
            .filter(|(name, _)| ![property::WAIT, property::CLUSTER].contains(name))
            .chain([(property::CLUSTER, self.identity.cluster_name.as_str())])
            .collect();
        let mut msgs = Vec::with_capacity(items.len());
        for item in items {
            if item.body.len() > max_size {
                return Err(ProcessorError::new(
                    ResponseCode::MESSAGE_ILLEGAL,
                    format!("the message body size over max value, MAX: {max_size}"),
                ));
            }
            let Some(properties) = props::batch_item_properties(&item.properties, &shared) else {
                return Err(ProcessorError::new(
                    ResponseCode::MESSAGE_ILLEGAL,
                    "batch messages cannot be delayed",
                ));
            };
            let mut msg = self.base_message(ctx, h, target, item.body);
            msg.flag = item.flag;
            msg.wait_store_ok = wait;
            msg.properties = properties;
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
        self.traffic.add_each(
            &target.topic,
            &[
                (TOPIC_PUT_NUMS, count, 1),
                (TOPIC_PUT_SIZE, append.wrote_bytes as u64, 1),
            ],
        );
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
            recall_handle: None,
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
        if !perm::is_writeable(self.settings.get().broker_permission) || !self.identity.is_master()
        {
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
            // The stored count came from a client's header: saturate, never overflow.
            let delay = if h.delay_level == 0 {
                reconsume.saturating_add(3)
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
            reconsume_times: reconsume.saturating_add(1),
            prepared_transaction_offset: 0,
            wait_store_ok: false,
        };
        if let Some(level) = self.delay_level(&msg, &props) {
            Self::park_delayed(&mut msg, &mut props, level);
        }
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

#[cfg(test)]
mod tests;
