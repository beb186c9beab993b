//! StellMQ's tools: `mqadmin` (RocketMQ's admin commands), `storebench` (store benchmark).

pub mod admin;
pub mod stats;
