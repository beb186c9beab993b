//! The bounded lanes the broker's requests run in, sized by the config's thread-pool keys.

use std::sync::Arc;

use stellmq_remoting::net::Lane;

use crate::config::BrokerConfig;

/// The bounded lanes requests run in: a busy area never starves another.
pub(super) struct Lanes {
    pub(super) send: Arc<Lane>,
    pub(super) pull: Arc<Lane>,
    /// POP, PEEK, NOTIFICATION, POLLING_INFO (RocketMQ's pop thread pool).
    pub(super) pop: Arc<Lane>,
    /// ACK, BATCH_ACK, CHANGE_MESSAGE_INVISIBLETIME (RocketMQ's ack thread pool).
    pub(super) ack: Arc<Lane>,
    pub(super) query: Arc<Lane>,
    pub(super) client: Arc<Lane>,
    pub(super) consumer: Arc<Lane>,
    pub(super) admin: Arc<Lane>,
    pub(super) end_transaction: Arc<Lane>,
}

impl Lanes {
    pub(super) fn new(bc: &BrokerConfig) -> Self {
        Self {
            // Sends start on their connection's task: most finish there (see Lane).
            send: Lane::run_inline_first(
                "send",
                bc.send_message_thread_pool_nums,
                bc.send_thread_pool_queue_capacity,
            ),
            pull: Lane::new(
                "pull",
                bc.pull_message_thread_pool_nums,
                bc.pull_thread_pool_queue_capacity,
            ),
            pop: Lane::new(
                "pop",
                bc.pull_message_thread_pool_nums,
                bc.pull_thread_pool_queue_capacity,
            ),
            ack: Lane::new("ack", 8, 100_000),
            query: Lane::new("query", bc.query_message_thread_pool_nums, 20_000),
            client: Lane::new("client-manage", bc.client_manage_thread_pool_nums, 50_000),
            consumer: Lane::new(
                "consumer-manage",
                bc.consumer_manage_thread_pool_nums,
                50_000,
            ),
            admin: Lane::new("admin", bc.admin_broker_thread_pool_nums, 10_000),
            end_transaction: Lane::new("end-transaction", 8, 100_000),
        }
    }
}
