//! `mqdashboard`, StellMQ's web console: server-rendered HTML pages over
//! [`stellmq_client::AdminClient`], so every action is one of the admin requests `mqadmin`
//! sends, signed with the same credentials.
//!
//! - `html`: escaping and the page layout (every value from a broker goes through `esc`).
//! - `form`: query strings and urlencoded bodies, bounded.
//! - `pages/`: one module per page (cluster, topics, groups, messages, DLQ, explain).
//! - `login`: the origin check of every form and, with `--loginRequired`, sign-in with
//!   ACL 2.0 users.
//! - `server`: the router, limits and the listener loop with graceful shutdown.
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod error;
pub mod form;
pub mod html;
pub mod login;
pub mod lookup;
mod pages;
pub mod server;

pub use error::ConsoleError;
pub use server::{router, serve, Console};
