//! StellMQ's tools: mqadmin, the benchmark tool and a store inspector.
//!
//! Not implemented yet (issue "Tools and distribution"); this crate is an empty library until then.
