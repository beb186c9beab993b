//! Consumers: [`PushConsumer`] (listener driven, clustering or broadcasting, concurrent or
//! orderly, with a plain or an async listener), [`LitePullConsumer`] (poll driven) and
//! [`PullConsumer`] (the classic pull consumer: the application picks queues and offsets).
//! All rest on `core::ConsumerCore`, the state they share, and on what acts on it, from the
//! bottom up:
//!
//! | module | holds |
//! | --- | --- |
//! | `config`, `allocate/` | options; how queues are split among a group's members (RocketMQ's six strategies) |
//! | `queue_state`, `subscription`, `routes`, `offset_store`, `registry` | one queue's progress; subscriptions; cached routes and broker choice; offset tables; one consumer per group and client |
//! | `core` | the shared state, where messages go, heartbeats, queue locks, send-back |
//! | `progress` | where a queue starts; storing consumed offsets |
//! | `pull_loop` | one long-polling loop per assigned queue |
//! | `rebalance` | which queues this member owns; starting and stopping their loops |
//! | `lifecycle` | subscribing, the background loop, shutdown |
//! | `stats`, `running_info` | pull and consume rates; what the broker's probes are told (running info, offsets, consuming a message directly) |
//! | `listener` | a push consumer's listener, plain or async |
//! | `pull_result` | one pull's outcome, read from the broker's answer |
//! | `push`, `lite_pull`, `pull` (with `pull_offsets`) | the three consumers applications use |

pub mod allocate;
mod config;
mod core;
mod lifecycle;
mod listener;
pub mod lite_pull;
pub mod offset_store;
mod progress;
pub mod pull;
mod pull_loop;
mod pull_offsets;
mod pull_result;
pub mod push;
mod queue_state;
mod rebalance;
mod registry;
mod routes;
mod running_info;
mod stats;
mod subscription;

pub use crate::message::ReceivedMessage;
pub use allocate::{AllocateError, AllocateStrategy, MachineRoomResolver};
pub use lite_pull::LitePullConsumer;
pub use pull::PullConsumer;
pub use pull_result::{PullResult, PullStatus};
pub use push::{ConsumeResult, ConsumerConfig, ExpressionType, PushConsumer};
