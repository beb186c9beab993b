//! StellMQ's broker: send, pull, offsets, groups, retry and delay over the store.
//!
//! Not implemented yet (issue "Broker"); this crate is an empty library until then.
