//! What StellMQ's server binaries compose: `mqbroker --with-namesrv` runs a name server and a
//! broker in one process ([`with_namesrv`]), `mqnamesrv` may embed a controller. Server
//! libraries never depend on one another; a binary that starts several lives here.
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod with_namesrv;
