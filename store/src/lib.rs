//! StellMQ's message store: CommitLog, ConsumeQueue and IndexFile in RocketMQ's file formats.
//!
//! Not implemented yet (issue "Store"); this crate is an empty library until then.
