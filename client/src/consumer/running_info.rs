//! What a consumer tells the broker's probes ([`crate::probe`]): its running info (settings
//! under Java's names, subscriptions, every owned queue's `ProcessQueueInfo`, per-topic
//! rates), its offsets of a topic, and its listener's verdict on a message handed to it
//! directly.

use std::collections::BTreeMap;

use stellmq_remoting::protocol::body::{running_prop, ConsumerRunningInfo, MqKeyMap};
use stellmq_remoting::protocol::version::CURRENT_VERSION_DESC;

use super::core::ConsumerCore;
use crate::message::ReceivedMessage;
use crate::probe::{ConsumerProbe, DirectConsume};

impl ConsumerCore {
    /// The consumer's settings as Java's `DefaultMQPushConsumer` fields name them, plus the
    /// `PROP_*` keys RocketMQ's tools read.
    fn running_properties(&self) -> BTreeMap<String, String> {
        let c = &self.config;
        let mut p = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            p.insert(k.to_owned(), v);
        };
        put("consumerGroup", c.group.clone());
        put("messageModel", c.message_model.name().to_owned());
        put("consumeFromWhere", c.consume_from_where.name().to_owned());
        put("consumeTimestamp", c.consume_timestamp.to_string());
        put("allocateMessageQueueStrategy", format!("{:?}", c.allocate));
        put("consumeThreadMin", c.consume_thread_count.to_string());
        put("consumeThreadMax", c.consume_thread_count.to_string());
        put(
            "consumeMessageBatchMaxSize",
            c.consume_message_batch_max_size.to_string(),
        );
        put("pullBatchSize", c.pull_batch_size.to_string());
        put(
            "pullThresholdForQueue",
            c.pull_threshold_for_queue.to_string(),
        );
        put(
            "pullThresholdSizeForQueue",
            c.pull_threshold_size_for_queue.to_string(),
        );
        put("maxReconsumeTimes", c.max_reconsume_times.to_string());
        put("namesrvAddr", c.namesrv_addr.clone());
        put("instanceName", c.instance_name.clone());
        put("clientIP", self.instance.local_ip.to_string());
        put("namespace", c.namespace.clone().unwrap_or_default());
        put("unitMode", "false".to_owned());
        put(
            running_prop::CONSUME_ORDERLY,
            self.sink.orderly().to_string(),
        );
        put(
            running_prop::THREADPOOL_CORE_SIZE,
            c.consume_thread_count.to_string(),
        );
        put(
            running_prop::CONSUMER_START_TIMESTAMP,
            self.started_ms.to_string(),
        );
        put(
            running_prop::CONSUME_TYPE,
            self.sink.consume_type().name().to_owned(),
        );
        // Java appends `;` to each name server address.
        let ns: String = crate::namesrv::parse_list(&c.namesrv_addr)
            .iter()
            .map(|a| format!("{a};"))
            .collect();
        put(running_prop::NAMESERVER_ADDR, ns);
        put(
            running_prop::CLIENT_VERSION,
            CURRENT_VERSION_DESC.to_owned(),
        );
        p
    }
}

impl ConsumerProbe for ConsumerCore {
    fn running_info(&self) -> ConsumerRunningInfo {
        let subscriptions = self.subscriptions.all();
        let queues: Vec<_> = self.queues.lock().values().cloned().collect();
        let mq_table = queues
            .iter()
            .map(|state| {
                let commit = self
                    .offsets
                    .get(&state.mq)
                    .unwrap_or_else(|| state.consumed_offset());
                (state.mq.clone(), state.info(commit))
            })
            .collect();
        let status_table = subscriptions
            .iter()
            .map(|s| (s.topic.clone(), self.stats.status(&s.topic)))
            .collect();
        ConsumerRunningInfo {
            properties: self.running_properties(),
            subscription_set: subscriptions,
            mq_table,
            status_table,
            ..ConsumerRunningInfo::default()
        }
    }

    fn offsets(&self, topic: &str) -> MqKeyMap<i64> {
        MqKeyMap(
            self.offsets
                .snapshot()
                .into_iter()
                .filter(|(mq, _)| mq.topic == topic)
                .collect(),
        )
    }

    fn consume_directly(&self, message: ReceivedMessage) -> Option<DirectConsume> {
        self.sink.consume_directly(message)
    }
}
