//! StellMQ's Rust client for RocketMQ-compatible brokers: it speaks Apache RocketMQ's
//! remoting protocol to name servers and brokers (StellMQ's, or RocketMQ 4.x/5.x ones), and
//! everything an application needs is exported here, so it depends on this crate alone.
//!
//! - [`Producer`] (sync, oneway, batch, ordered with a queue selector, delayed and timer
//!   messages), [`TransactionProducer`] and request/reply ([`reply`]).
//! - [`PushConsumer`]: clustering or broadcasting, concurrently or orderly, with a plain
//!   listener (run on tokio's blocking pool) or an async one; queues split among a group's
//!   members by any of RocketMQ's [`AllocateStrategy`]s (averagely, by circle, consistent
//!   hash, by config, by machine room, machine room nearby), agreeing with Java members.
//! - [`LitePullConsumer`] (the application polls) and [`PullConsumer`] (RocketMQ's classic
//!   `DefaultMQPullConsumer`: the application picks queues and offsets, and records progress).
//! - [`pop::PopClient`] (RocketMQ 5 POP: receipt handles, acks, invisible times) and
//!   [`AdminClient`], what `mqadmin` needs (topics, groups, routes, cluster info, broker
//!   config and runtime info, offsets and consume progress, connections, message queries,
//!   offset resets, name server KV and config).
//!
//! With [`ConsumerConfig::namespace`] (or the producer's), topics and groups are
//! `<namespace>%<name>` on the broker, and the application sees its own names:
//! [`ReceivedMessage::topic`] and the pull consumer's queues come without the prefix.
//!
//! Plain ACL: give [`ProducerConfig::credentials`], [`ConsumerConfig::credentials`] or
//! [`AdminClient::with_credentials`] a [`SessionCredentials`], and every request to
//! name servers and brokers is signed (`AccessKey`, `Signature`) as RocketMQ's
//! `AclClientRPCHook` signs, by the remoting client as its last step before the wire.
//!
//! ```no_run
//! use stellmq_client::{
//!     AllocateStrategy, ClientError, ConsumeFromWhere, ConsumeResult, ConsumerConfig, Message,
//!     MessageModel, Producer, ProducerConfig, PullConsumer, PullStatus, PushConsumer,
//!     ReceivedMessage,
//! };
//!
//! # async fn demo() -> Result<(), ClientError> {
//! let producer = Producer::start(ProducerConfig {
//!     namesrv_addr: "127.0.0.1:9876".into(),
//!     group: "demo_producer".into(),
//!     ..Default::default()
//! })
//! .await?;
//! let sent = producer
//!     .send(Message::new("DemoTopic", "hello").with_tags("TagA").with_keys(["order-1"]))
//!     .await?;
//! tracing::info!(id = %sent.msg_id, queue = sent.queue.queue_id, "sent");
//!
//! // A push consumer with an async listener; the group's members split the queues by
//! // consistent hashing, as Java members configured alike would.
//! let consumer = PushConsumer::start_concurrently_async(
//!     ConsumerConfig {
//!         namesrv_addr: "127.0.0.1:9876".into(),
//!         group: "demo_consumer".into(),
//!         message_model: MessageModel::Clustering,
//!         consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
//!         allocate: AllocateStrategy::consistent_hash(),
//!         ..Default::default()
//!     },
//!     &[("DemoTopic", "TagA || TagB")],
//!     |messages: Vec<ReceivedMessage>| async move {
//!         for m in &messages {
//!             tracing::info!(topic = m.topic(), id = %m.msg_id(), "received");
//!         }
//!         ConsumeResult::Success
//!     },
//! )
//! .await?;
//!
//! // The classic pull consumer: every queue from the group's offset on.
//! let puller = PullConsumer::start(ConsumerConfig {
//!     namesrv_addr: "127.0.0.1:9876".into(),
//!     group: "demo_puller".into(),
//!     ..Default::default()
//! })
//! .await?;
//! for mq in puller.fetch_subscribe_message_queues("DemoTopic").await? {
//!     let offset = puller.fetch_consume_offset(&mq, true).await?.unwrap_or(0);
//!     let pulled = puller.pull(&mq, "TagA", offset, 32).await?;
//!     if pulled.status == PullStatus::Found {
//!         tracing::info!(queue = mq.queue_id, n = pulled.messages.len(), "pulled");
//!     }
//!     puller.update_consume_offset(&mq, pulled.next_begin_offset);
//! }
//!
//! puller.shutdown().await;
//! consumer.shutdown().await;
//! producer.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! Layers, each importing only those below it:
//! - `transaction`, `reply` (over the producer); `producer/`, `consumer/`, `admin/`
//! - `instance` (one shared client instance: connections, routes, heartbeats), `inbound`
//!   (the broker's calls to it) and `probe` (the broker's questions about a running consumer)
//! - `namesrv` (name-server list, route lookup), `request` (typed requests, response codes
//!   mapped to errors in one place)
//! - `message`, `route`, `namespace`, `error`
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod admin;
pub mod consumer;
pub mod error;
mod inbound;
mod instance;
pub mod message;
pub mod namespace;
mod namesrv;
pub mod pop;
mod probe;
pub mod producer;
pub mod reply;
mod request;
pub mod route;
pub mod trace;
pub mod transaction;

pub use admin::AdminClient;
pub use consumer::{
    AllocateError, AllocateStrategy, ConsumeResult, ConsumerConfig, ExpressionType,
    LitePullConsumer, MachineRoomResolver, PullConsumer, PullResult, PullStatus, PushConsumer,
};
pub use error::ClientError;
pub use message::{Message, ReceivedMessage, SendResult, SendStatus};
pub use producer::{Producer, ProducerConfig};
pub use transaction::{TransactionProducer, TransactionSendResult, TransactionState};

// The protocol's types an application meets, so it needs no other StellMQ crate.
pub use stellmq_remoting::net::tls::ClientTlsConfig;
pub use stellmq_remoting::net::{ClientConfig as RemotingClientConfig, RemotingError};
/// The protocol's JSON bodies, which the admin API takes and returns (`TopicConfig`,
/// `ClusterInfo`, `ConsumeStats`, `TopicRouteData`, ...).
pub use stellmq_remoting::protocol::body;
pub use stellmq_remoting::protocol::body::{
    ConsumeFromWhere, MessageModel, MessageQueue, SubscriptionData, TopicConfig, TopicRouteData,
};
/// Property keys of a message (`KEYS`, `TAGS`, `DELAY`, ...).
pub use stellmq_remoting::protocol::message::property;
pub use stellmq_remoting::protocol::message::{MessageRecord, Properties, RecordHead};
pub use stellmq_remoting::protocol::signature::SessionCredentials;
