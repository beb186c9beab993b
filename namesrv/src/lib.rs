//! StellMQ's name server: broker registration and topic routes.
//!
//! Not implemented yet (issue "NameServer"); this crate is an empty library until then.
