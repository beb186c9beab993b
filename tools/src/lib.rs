//! StellMQ's tools: benchmarks (`storebench`), and (to come) mqadmin and a store inspector.

pub mod stats;
