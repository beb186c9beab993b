//! Consumers: [`PushConsumer`] (listener driven, clustering or broadcasting, concurrent or
//! orderly) and [`LitePullConsumer`] (poll driven). Both rest on [`core::ConsumerCore`]:
//! routes, heartbeats, rebalancing, per-queue long-polling pull loops and offset stores.

pub mod allocate;
mod core;
pub mod lite_pull;
pub mod offset_store;
mod pull_loop;
pub mod push;
mod registry;

pub use crate::message::ReceivedMessage;
pub use lite_pull::LitePullConsumer;
pub use push::{ConsumeResult, ConsumerConfig, ExpressionType, PushConsumer};
