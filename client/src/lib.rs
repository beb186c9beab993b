//! StellMQ's Rust client: producer, push and lite pull consumers, admin API.
//!
//! Not implemented yet (issue "Client SDK"); this crate is an empty library until then.
