//! The broker's request table: every request code it serves appears here exactly once,
//! next to the one handler that serves it and the lane it runs in. A code not in the table
//! is answered REQUEST_CODE_NOT_SUPPORTED by the server; registering a code twice is a
//! start-up error. Every handler sits behind the name check ([`Guarded`]).

use std::sync::Arc;
use std::time::Instant;

use stellmq_remoting::net::{answer, handler, Lane, RemotingServer, RequestProcessor};
use stellmq_remoting::protocol::RequestCode;

use crate::context::now_ms;
use crate::processor::admin::{
    acl::AclAdminProcessor, auth::AuthAdminProcessor, config::ConfigAdminProcessor,
    consumer_call::ConsumerCallProcessor, epoch::EpochAdminProcessor, group::GroupAdminProcessor,
    half::HalfAdminProcessor, offset::OffsetAdminProcessor, role_notice::RoleNoticeProcessor,
    stats::StatsAdminProcessor, store::StoreAdminProcessor, topic::TopicAdminProcessor,
};
use crate::processor::client_manage::ClientManageProcessor;
use crate::processor::consumer_manage::{ConsumerManageProcessor, RebalanceLockManager};
use crate::processor::end_transaction::EndTransactionProcessor;
use crate::processor::guard::{
    Guarded, NameFields, CLONE_OFFSET, CORRECTION_OFFSET, GROUP, GROUP_AND_TOPIC, GROUP_FIELD,
    GROUP_FIELD_AND_TOPIC, GROUP_NAME, NO_NAMES, RESET_OFFSET, SEND_BACK, TOPIC, TOPIC_V2,
};
use crate::processor::pop::ack::AckProcessor;
use crate::processor::pop::change::ChangeInvisibleProcessor;
use crate::processor::pop::lite::admin::LiteAdminProcessor;
use crate::processor::pop::lite::ctl::LiteCtlProcessor;
use crate::processor::pop::lite::LitePopProcessor;
use crate::processor::pop::peek::PeekProcessor;
use crate::processor::pop::PopProcessor;
use crate::processor::pull::PullProcessor;
use crate::processor::query::QueryProcessor;
use crate::processor::recall::RecallProcessor;
use crate::processor::send::{HeaderForm, SendProcessor};
use crate::state::BrokerState;

mod lanes;
use lanes::Lanes;

/// One processor per area, each given only the state it needs.
struct Processors {
    send: Arc<SendProcessor>,
    end_transaction: Arc<EndTransactionProcessor>,
    recall: Arc<RecallProcessor>,
    pull: Arc<PullProcessor>,
    pop: Arc<PopProcessor>,
    peek: Arc<PeekProcessor>,
    ack: Arc<AckProcessor>,
    lite_pop: Arc<LitePopProcessor>,
    lite_ctl: Arc<LiteCtlProcessor>,
    lite_admin: Arc<LiteAdminProcessor>,
    change_invisible: Arc<ChangeInvisibleProcessor>,
    query: Arc<QueryProcessor>,
    client: Arc<ClientManageProcessor>,
    consumer: Arc<ConsumerManageProcessor>,
    topic_admin: Arc<TopicAdminProcessor>,
    group_admin: Arc<GroupAdminProcessor>,
    offset_admin: Arc<OffsetAdminProcessor>,
    stats_admin: Arc<StatsAdminProcessor>,
    config_admin: Arc<ConfigAdminProcessor>,
    store_admin: Arc<StoreAdminProcessor>,
    consumer_call: Arc<ConsumerCallProcessor>,
    half_admin: Arc<HalfAdminProcessor>,
    acl_admin: Arc<AclAdminProcessor>,
    auth_admin: Arc<AuthAdminProcessor>,
    epoch_admin: Arc<EpochAdminProcessor>,
    role_notice: Arc<RoleNoticeProcessor>,
}

impl Processors {
    fn new(s: &BrokerState) -> Self {
        let bc = s.config.read().clone();
        let send = SendProcessor::new(
            s.identity.clone(),
            s.config.send(),
            s.store.clone(),
            s.topics.clone(),
            s.groups.clone(),
            s.delay_levels as i32,
            s.writer.clone(),
        )
        .with_replies(s.producers.clone(), bc.store_reply_message_enable)
        .with_stats(s.traffic.clone());
        Self {
            send: Arc::new(send),
            end_transaction: Arc::new(EndTransactionProcessor {
                identity: s.identity.clone(),
                store: s.store.clone(),
                writer: s.writer.clone(),
                topics: s.topics.clone(),
                resolved: s.resolved_transactions.clone(),
            }),
            recall: Arc::new(RecallProcessor {
                identity: s.identity.clone(),
                settings: s.config.send(),
                topics: s.topics.clone(),
                timers: s.timers.clone(),
                writer: s.writer.clone(),
            }),
            pull: Arc::new(PullProcessor {
                hold: s.consumption.hold.clone(),
            }),
            pop: Arc::new(PopProcessor {
                core: s.consumption.pop.clone(),
                hold: s.consumption.pop_hold.clone(),
            }),
            peek: Arc::new(PeekProcessor {
                core: s.consumption.pop.clone(),
                hold: s.consumption.pop_hold.clone(),
            }),
            ack: Arc::new(AckProcessor {
                core: s.consumption.pop.clone(),
                hold: s.consumption.pop_hold.clone(),
            }),
            lite_pop: Arc::new(LitePopProcessor {
                core: s.consumption.pop.clone(),
                hold: s.consumption.pop_hold.clone(),
            }),
            lite_ctl: Arc::new(LiteCtlProcessor {
                core: s.consumption.pop.clone(),
                hold: s.consumption.pop_hold.clone(),
            }),
            lite_admin: Arc::new(LiteAdminProcessor {
                core: s.consumption.pop.clone(),
                hold: s.consumption.pop_hold.clone(),
            }),
            change_invisible: Arc::new(ChangeInvisibleProcessor {
                core: s.consumption.pop.clone(),
            }),
            query: Arc::new(QueryProcessor {
                store: s.store.clone(),
                default_query_max_num: bc.default_query_max_num,
            }),
            client: Arc::new(ClientManageProcessor {
                consumers: s.consumers.clone(),
                producers: s.producers.clone(),
                groups: s.groups.clone(),
                topics: s.topics.clone(),
                notify_enabled: bc.notify_consumer_ids_changed_enable,
                property_filter_enabled: bc.enable_property_filter,
            }),
            consumer: Arc::new(ConsumerManageProcessor {
                consumers: s.consumers.clone(),
                topics: s.topics.clone(),
                groups: s.groups.clone(),
                offsets: s.offsets.clone(),
                store: s.store.clone(),
                locks: Arc::new(RebalanceLockManager::default()),
            }),
            topic_admin: Arc::new(TopicAdminProcessor {
                identity: s.identity.clone(),
                config: s.config.clone(),
                topics: s.topics.clone(),
                offsets: s.offsets.clone(),
                store: s.store.clone(),
            }),
            group_admin: Arc::new(GroupAdminProcessor {
                groups: s.groups.clone(),
                config: s.config.clone(),
                offsets: s.offsets.clone(),
                is_slave: !s.is_master(),
            }),
            offset_admin: Arc::new(OffsetAdminProcessor {
                identity: s.identity.clone(),
                offsets: s.offsets.clone(),
                consumers: s.consumers.clone(),
                topics: s.topics.clone(),
                store: s.store.clone(),
                schedule: s.schedule.clone(),
            }),
            epoch_admin: Arc::new(EpochAdminProcessor {
                identity: s.identity.clone(),
                roles: s.replication.roles.clone(),
            }),
            role_notice: Arc::new(RoleNoticeProcessor {
                notices: s.replication.role_notices.clone(),
            }),
            stats_admin: Arc::new(StatsAdminProcessor {
                store: s.store.clone(),
                consumers: s.consumers.clone(),
                producers: s.producers.clone(),
                started: Instant::now(),
                boot_timestamp: now_ms(),
                ha_master: s.replication.ha_master.clone(),
                ha_slave: s.replication.ha_slave.clone(),
                traffic: s.traffic.clone(),
                runtime: s.runtime.clone(),
            }),
            config_admin: Arc::new(ConfigAdminProcessor {
                broker: s.config.clone(),
                store: s.start.store.clone(),
                topics: s.topics.clone(),
                groups: s.groups.clone(),
            }),
            store_admin: Arc::new(StoreAdminProcessor {
                store: s.store.clone(),
                topics: s.topics.clone(),
            }),
            consumer_call: Arc::new(ConsumerCallProcessor {
                identity: s.identity.clone(),
                consumers: s.consumers.clone(),
                topics: s.topics.clone(),
                store: s.store.clone(),
            }),
            half_admin: Arc::new(HalfAdminProcessor {
                identity: s.identity.clone(),
                store: s.store.clone(),
            }),
            acl_admin: Arc::new(AclAdminProcessor {
                acl: s.acl.clone(),
                identity: s.identity.clone(),
            }),
            auth_admin: Arc::new(AuthAdminProcessor {
                registry: s.auth.registry.clone(),
            }),
        }
    }
}

/// One row: a request code, the header fields that name topics or groups, its handler, its
/// lane.
type Route = (
    RequestCode,
    NameFields,
    Arc<dyn RequestProcessor>,
    Arc<Lane>,
);

/// Every request code the broker serves, the names it carries, its handler and its lane.
fn table(p: &Processors, l: &Lanes) -> Vec<Route> {
    use RequestCode as C;
    let send = |code, names, h| (code, names, h, l.send.clone());
    let pull = |code, names, h| (code, names, h, l.pull.clone());
    let pop = |code, names, h| (code, names, h, l.pop.clone());
    let ack = |code, names, h| (code, names, h, l.ack.clone());
    let query = |code, names, h| (code, names, h, l.query.clone());
    let client = |code, names, h| (code, names, h, l.client.clone());
    let consumer = |code, names, h| (code, names, h, l.consumer.clone());
    let admin = |code, names, h| (code, names, h, l.admin.clone());
    vec![
        // Producers (protocol.md 2.4).
        send(
            C::SEND_MESSAGE,
            TOPIC,
            handler(&p.send, |p, ctx, r| {
                Box::pin(async move { p.send(ctx, r, HeaderForm::V1).await })
            }),
        ),
        send(
            C::SEND_MESSAGE_V2,
            TOPIC_V2,
            handler(&p.send, |p, ctx, r| {
                Box::pin(async move { p.send(ctx, r, HeaderForm::V2).await })
            }),
        ),
        send(
            C::SEND_BATCH_MESSAGE,
            TOPIC_V2,
            handler(&p.send, |p, ctx, r| {
                Box::pin(async move { p.send(ctx, r, HeaderForm::V2).await })
            }),
        ),
        send(
            C::SEND_REPLY_MESSAGE,
            TOPIC,
            handler(&p.send, |p, ctx, r| {
                Box::pin(async move { p.reply(ctx, r, HeaderForm::V1).await })
            }),
        ),
        send(
            C::SEND_REPLY_MESSAGE_V2,
            TOPIC_V2,
            handler(&p.send, |p, ctx, r| {
                Box::pin(async move { p.reply(ctx, r, HeaderForm::V2).await })
            }),
        ),
        send(
            C::RECALL_MESSAGE,
            TOPIC,
            handler(&p.recall, |p, ctx, r| {
                Box::pin(async move { p.recall(ctx, r).await })
            }),
        ),
        send(
            C::CONSUMER_SEND_MSG_BACK,
            SEND_BACK,
            handler(&p.send, |p, ctx, r| {
                Box::pin(async move { p.send_back(ctx, r).await })
            }),
        ),
        (
            C::END_TRANSACTION,
            TOPIC,
            handler(&p.end_transaction, |p, ctx, r| {
                Box::pin(async move { p.end(ctx, r).await })
            }),
            l.end_transaction.clone(),
        ),
        // Consumers (protocol.md 2.5).
        pull(
            C::PULL_MESSAGE,
            GROUP_AND_TOPIC,
            answer(&p.pull, PullProcessor::pull),
        ),
        pull(
            C::LITE_PULL_MESSAGE,
            GROUP_AND_TOPIC,
            answer(&p.pull, PullProcessor::pull),
        ),
        // POP consumption (RocketMQ 5).
        pop(
            C::POP_MESSAGE,
            GROUP_AND_TOPIC,
            handler(&p.pop, |p, ctx, r| Box::pin(PopProcessor::pop(p, ctx, r))),
        ),
        pop(
            C::PEEK_MESSAGE,
            GROUP_AND_TOPIC,
            answer(&p.peek, PeekProcessor::peek),
        ),
        pop(
            C::NOTIFICATION,
            GROUP_AND_TOPIC,
            handler(&p.peek, |p, ctx, r| {
                Box::pin(PeekProcessor::notification(p, ctx, r))
            }),
        ),
        pop(
            C::POLLING_INFO,
            GROUP_AND_TOPIC,
            answer(&p.peek, PeekProcessor::polling_info),
        ),
        // Lite topics (RocketMQ 5.5).
        pop(
            C::POP_LITE_MESSAGE,
            GROUP_AND_TOPIC,
            handler(&p.lite_pop, |p, ctx, r| {
                Box::pin(LitePopProcessor::pop(p, ctx, r))
            }),
        ),
        ack(
            C::LITE_SUBSCRIPTION_CTL,
            NO_NAMES,
            answer(&p.lite_ctl, LiteCtlProcessor::ctl),
        ),
        admin(
            C::GET_BROKER_LITE_INFO,
            NO_NAMES,
            answer(&p.lite_admin, LiteAdminProcessor::broker_info),
        ),
        admin(
            C::GET_PARENT_TOPIC_INFO,
            TOPIC,
            answer(&p.lite_admin, LiteAdminProcessor::parent_topic_info),
        ),
        admin(
            C::GET_LITE_TOPIC_INFO,
            NO_NAMES,
            answer(&p.lite_admin, LiteAdminProcessor::lite_topic_info),
        ),
        admin(
            C::GET_LITE_CLIENT_INFO,
            NO_NAMES,
            answer(&p.lite_admin, LiteAdminProcessor::lite_client_info),
        ),
        admin(
            C::GET_LITE_GROUP_INFO,
            NO_NAMES,
            answer(&p.lite_admin, LiteAdminProcessor::lite_group_info),
        ),
        admin(
            C::TRIGGER_LITE_DISPATCH,
            NO_NAMES,
            answer(&p.lite_admin, LiteAdminProcessor::trigger_dispatch),
        ),
        ack(
            C::ACK_MESSAGE,
            GROUP_AND_TOPIC,
            handler(&p.ack, |p, ctx, r| Box::pin(AckProcessor::ack(p, ctx, r))),
        ),
        ack(
            C::BATCH_ACK_MESSAGE,
            NO_NAMES,
            handler(&p.ack, |p, ctx, r| {
                Box::pin(AckProcessor::batch_ack(p, ctx, r))
            }),
        ),
        ack(
            C::CHANGE_MESSAGE_INVISIBLETIME,
            GROUP_AND_TOPIC,
            handler(&p.change_invisible, |p, ctx, r| {
                Box::pin(ChangeInvisibleProcessor::change(p, ctx, r))
            }),
        ),
        consumer(
            C::GET_CONSUMER_LIST_BY_GROUP,
            GROUP,
            answer(&p.consumer, |p, _, r| p.consumer_list(&r)),
        ),
        consumer(
            C::QUERY_CONSUMER_OFFSET,
            GROUP_AND_TOPIC,
            answer(&p.consumer, |p, _, r| p.query_offset(&r)),
        ),
        consumer(
            C::UPDATE_CONSUMER_OFFSET,
            GROUP_AND_TOPIC,
            answer(&p.consumer, |p, _, r| p.update_offset(&r)),
        ),
        consumer(
            C::LOCK_BATCH_MQ,
            NO_NAMES,
            answer(&p.consumer, |p, _, r| p.lock(&r)),
        ),
        consumer(
            C::UNLOCK_BATCH_MQ,
            NO_NAMES,
            answer(&p.consumer, |p, _, r| p.unlock(&r)),
        ),
        consumer(
            C::GET_MAX_OFFSET,
            TOPIC,
            answer(&p.consumer, |p, _, r| p.max_offset(&r)),
        ),
        consumer(
            C::GET_MIN_OFFSET,
            TOPIC,
            answer(&p.consumer, |p, _, r| p.min_offset(&r)),
        ),
        consumer(
            C::SEARCH_OFFSET_BY_TIMESTAMP,
            TOPIC,
            answer(&p.consumer, |p, _, r| p.offset_by_time(&r)),
        ),
        consumer(
            C::GET_EARLIEST_MSG_STORETIME,
            TOPIC,
            answer(&p.consumer, |p, _, r| p.earliest_store_time(&r)),
        ),
        // Clients.
        client(
            C::HEART_BEAT,
            NO_NAMES,
            answer(&p.client, |p, ctx, r| p.heartbeat(&ctx, &r)),
        ),
        client(
            C::UNREGISTER_CLIENT,
            NO_NAMES,
            answer(&p.client, |p, ctx, r| p.unregister(&ctx, &r)),
        ),
        client(
            C::CHECK_CLIENT_CONFIG,
            NO_NAMES,
            answer(&p.client, |p, _, r| p.check_client_config(&r)),
        ),
        // Queries (protocol.md 2.6).
        query(
            C::QUERY_MESSAGE,
            TOPIC,
            answer(&p.query, |p, _, r| p.query(&r)),
        ),
        query(
            C::VIEW_MESSAGE_BY_ID,
            TOPIC,
            answer(&p.query, |p, _, r| p.view(&r)),
        ),
        // Topics and groups (protocol.md 2.7).
        admin(
            C::UPDATE_AND_CREATE_TOPIC,
            TOPIC,
            handler(&p.topic_admin, |p, _, r| {
                Box::pin(async move { p.create(&r).await })
            }),
        ),
        admin(
            C::UPDATE_AND_CREATE_TOPIC_LIST,
            NO_NAMES,
            handler(&p.topic_admin, |p, _, r| {
                Box::pin(async move { p.create_list(&r).await })
            }),
        ),
        admin(
            C::DELETE_TOPIC_IN_BROKER,
            TOPIC,
            handler(&p.topic_admin, |p, _, r| {
                Box::pin(async move { p.delete(&r).await })
            }),
        ),
        admin(
            C::GET_ALL_TOPIC_CONFIG,
            NO_NAMES,
            answer(&p.topic_admin, |p, _, r| p.all_configs(&r)),
        ),
        admin(
            C::GET_TOPIC_CONFIG,
            TOPIC,
            answer(&p.topic_admin, |p, _, r| p.one_config(&r)),
        ),
        admin(
            C::GET_TOPIC_STATS_INFO,
            TOPIC,
            answer(&p.topic_admin, |p, _, r| p.stats(&r)),
        ),
        admin(
            C::GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
            NO_NAMES,
            answer(&p.topic_admin, |p, _, r| p.system_topics(&r)),
        ),
        admin(
            C::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            NO_NAMES,
            handler(&p.group_admin, |p, _, r| {
                Box::pin(async move { p.update(&r).await })
            }),
        ),
        admin(
            C::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
            NO_NAMES,
            handler(&p.group_admin, |p, _, r| {
                Box::pin(async move { p.create_list(&r).await })
            }),
        ),
        admin(
            C::DELETE_SUBSCRIPTIONGROUP,
            GROUP_NAME,
            handler(&p.group_admin, |p, _, r| {
                Box::pin(async move { p.delete(&r).await })
            }),
        ),
        admin(
            C::GET_SUBSCRIPTIONGROUP_CONFIG,
            GROUP_FIELD,
            answer(&p.group_admin, |p, _, r| p.one_config(&r)),
        ),
        admin(
            C::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
            NO_NAMES,
            answer(&p.group_admin, |p, _, r| p.all_configs(&r)),
        ),
        // Offsets and consumption.
        admin(
            C::GET_ALL_CONSUMER_OFFSET,
            NO_NAMES,
            answer(&p.offset_admin, |p, _, r| p.all_consumer_offsets(&r)),
        ),
        admin(
            C::GET_ALL_DELAY_OFFSET,
            NO_NAMES,
            answer(&p.offset_admin, |p, _, r| p.all_delay_offsets(&r)),
        ),
        admin(
            C::GET_CONSUME_STATS,
            GROUP_AND_TOPIC,
            answer(&p.offset_admin, |p, _, r| p.consume_stats(&r)),
        ),
        admin(
            C::INVOKE_BROKER_TO_RESET_OFFSET,
            RESET_OFFSET,
            answer(&p.offset_admin, |p, _, r| p.reset_offset(&r)),
        ),
        admin(
            C::QUERY_TOPIC_CONSUME_BY_WHO,
            TOPIC,
            answer(&p.offset_admin, |p, _, r| p.consumed_by(&r)),
        ),
        admin(
            C::GET_BROKER_CONSUME_STATS,
            NO_NAMES,
            answer(&p.offset_admin, |p, _, r| p.broker_consume_stats(&r)),
        ),
        admin(
            C::CLONE_GROUP_OFFSET,
            CLONE_OFFSET,
            answer(&p.offset_admin, |p, _, r| p.clone_offsets(&r)),
        ),
        admin(
            C::QUERY_CONSUME_QUEUE,
            GROUP_AND_TOPIC,
            answer(&p.offset_admin, |p, _, r| p.query_consume_queue(&r)),
        ),
        admin(
            C::QUERY_CONSUME_TIME_SPAN,
            GROUP_FIELD_AND_TOPIC,
            answer(&p.offset_admin, |p, _, r| p.consume_time_span(&r)),
        ),
        admin(
            C::QUERY_CORRECTION_OFFSET,
            CORRECTION_OFFSET,
            answer(&p.offset_admin, |p, _, r| p.correction_offset(&r)),
        ),
        // Runtime information and connections.
        admin(
            C::GET_BROKER_RUNTIME_INFO,
            NO_NAMES,
            answer(&p.stats_admin, |p, _, r| p.runtime_info(&r)),
        ),
        admin(
            C::GET_BROKER_EPOCH_CACHE,
            NO_NAMES,
            answer(&p.epoch_admin, |p, _, r| p.epoch_cache(&r)),
        ),
        admin(
            C::NOTIFY_BROKER_ROLE_CHANGED,
            NO_NAMES,
            answer(&p.role_notice, |p, _, r| p.role_changed(&r)),
        ),
        admin(
            C::GET_CONSUMER_CONNECTION_LIST,
            GROUP,
            answer(&p.stats_admin, |p, _, r| p.consumer_connections(&r)),
        ),
        admin(
            C::GET_PRODUCER_CONNECTION_LIST,
            NO_NAMES,
            answer(&p.stats_admin, |p, _, r| p.producer_connections(&r)),
        ),
        admin(
            C::GET_ALL_PRODUCER_INFO,
            NO_NAMES,
            answer(&p.stats_admin, |p, _, r| p.all_producers(&r)),
        ),
        // Questions the broker relays to consumer clients.
        admin(
            C::GET_CONSUMER_RUNNING_INFO,
            GROUP,
            handler(&p.consumer_call, |p, _, r| Box::pin(p.running_info(r))),
        ),
        admin(
            C::CONSUME_MESSAGE_DIRECTLY,
            GROUP_AND_TOPIC,
            handler(&p.consumer_call, |p, _, r| Box::pin(p.consume_directly(r))),
        ),
        admin(
            C::INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            GROUP_FIELD_AND_TOPIC,
            handler(&p.consumer_call, |p, _, r| Box::pin(p.consumer_status(r))),
        ),
        admin(
            C::VIEW_BROKER_STATS_DATA,
            NO_NAMES,
            answer(&p.stats_admin, |p, _, r| p.stats_data(&r)),
        ),
        // Configuration and the store.
        admin(
            C::UPDATE_BROKER_CONFIG,
            NO_NAMES,
            answer(&p.config_admin, |p, _, r| p.update(&r)),
        ),
        admin(
            C::GET_BROKER_CONFIG,
            NO_NAMES,
            answer(&p.config_admin, |p, _, r| p.get(&r)),
        ),
        admin(
            C::DELETE_EXPIRED_COMMITLOG,
            NO_NAMES,
            handler(&p.store_admin, |s, _, r| Box::pin(s.delete_expired(r))),
        ),
        admin(
            C::CLEAN_EXPIRED_CONSUMEQUEUE,
            NO_NAMES,
            handler(&p.store_admin, |s, _, r| {
                Box::pin(s.clean_expired_queues(r))
            }),
        ),
        admin(
            C::CLEAN_UNUSED_TOPIC,
            NO_NAMES,
            handler(&p.store_admin, |s, _, r| Box::pin(s.clean_unused_topics(r))),
        ),
        // Transactions.
        admin(
            C::RESUME_CHECK_HALF_MESSAGE,
            NO_NAMES,
            handler(&p.half_admin, |h, _, r| Box::pin(h.resume_check(r))),
        ),
        // The plain ACL (RocketMQ 4.x).
        admin(
            C::UPDATE_AND_CREATE_ACL_CONFIG,
            NO_NAMES,
            handler(&p.acl_admin, |p, _, r| {
                Box::pin(async move { p.update(&r).await })
            }),
        ),
        admin(
            C::DELETE_ACL_CONFIG,
            NO_NAMES,
            handler(&p.acl_admin, |p, _, r| {
                Box::pin(async move { p.delete(&r).await })
            }),
        ),
        admin(
            C::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
            NO_NAMES,
            handler(&p.acl_admin, |p, _, r| {
                Box::pin(async move { p.update_global_white(&r).await })
            }),
        ),
        admin(
            C::GET_BROKER_CLUSTER_ACL_INFO,
            NO_NAMES,
            answer(&p.acl_admin, |p, _, r| p.version(&r)),
        ),
        admin(
            C::GET_BROKER_CLUSTER_ACL_CONFIG,
            NO_NAMES,
            answer(&p.acl_admin, |p, _, r| p.config(&r)),
        ),
        // ACL 2.0 (RocketMQ 5.3+): users and policies.
        admin(
            C::AUTH_CREATE_USER,
            NO_NAMES,
            handler(&p.auth_admin, |p, _, r| {
                Box::pin(async move { p.create_user(r).await })
            }),
        ),
        admin(
            C::AUTH_UPDATE_USER,
            NO_NAMES,
            handler(&p.auth_admin, |p, _, r| {
                Box::pin(async move { p.update_user(r).await })
            }),
        ),
        admin(
            C::AUTH_DELETE_USER,
            NO_NAMES,
            handler(&p.auth_admin, |p, _, r| {
                Box::pin(async move { p.delete_user(r).await })
            }),
        ),
        admin(
            C::AUTH_GET_USER,
            NO_NAMES,
            answer(&p.auth_admin, |p, _, r| p.get_user(&r)),
        ),
        admin(
            C::AUTH_LIST_USER,
            NO_NAMES,
            answer(&p.auth_admin, |p, _, r| p.list_users(&r)),
        ),
        admin(
            C::AUTH_CREATE_ACL,
            NO_NAMES,
            handler(&p.auth_admin, |p, _, r| {
                Box::pin(async move { p.put_acl(r).await })
            }),
        ),
        admin(
            C::AUTH_UPDATE_ACL,
            NO_NAMES,
            handler(&p.auth_admin, |p, _, r| {
                Box::pin(async move { p.put_acl(r).await })
            }),
        ),
        admin(
            C::AUTH_DELETE_ACL,
            NO_NAMES,
            handler(&p.auth_admin, |p, _, r| {
                Box::pin(async move { p.delete_acl(r).await })
            }),
        ),
        admin(
            C::AUTH_GET_ACL,
            NO_NAMES,
            answer(&p.auth_admin, |p, _, r| p.get_acl(&r)),
        ),
        admin(
            C::AUTH_LIST_ACL,
            NO_NAMES,
            answer(&p.auth_admin, |p, _, r| p.list_acls(&r)),
        ),
    ]
}

/// Registers every handler of the table, each behind the ACL (when on) and the name check.
pub(crate) fn register(server: &mut RemotingServer, state: &BrokerState) {
    let lanes = Lanes::new(&state.config.read());
    let _ = state.runtime.lanes.set(crate::runtime::QueueLanes {
        send: lanes.send.clone(),
        pull: lanes.pull.clone(),
        query: lanes.query.clone(),
    });
    let processors = Processors::new(state);
    for (code, fields, handler, lane) in table(&processors, &lanes) {
        let acl = state.acl.clone();
        let auth = state.auth.checker.clone();
        server.register(
            &[code],
            Arc::new(Guarded {
                handler,
                fields,
                acl,
                auth,
            }),
            lane,
        );
    }
}
