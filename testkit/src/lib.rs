//! StellMQ's test kit: everything an integration test needs to run StellMQ for real, and a
//! small embedded cluster for applications' own tests.
//!
//! - [`EmbeddedStack`]: for an application's tests, a name server and a broker in one line,
//!   stopped and removed when dropped (`docs/testkit.md`, `examples/embedded.rs`):
//!
//! ```
//! # fn main() {
//! let mq = stellmq_testkit::EmbeddedStack::start(); // 127.0.0.1, ephemeral ports, temp files
//! let namesrv_addr = mq.namesrv_addr(); // give it to any RocketMQ client
//! # assert!(std::net::TcpStream::connect(namesrv_addr).is_ok());
//! drop(mq); // stops both and removes their files
//! # }
//! ```
//!
//! - [`Stack`]: a name server and a broker in process, on `127.0.0.1` ephemeral ports with
//!   temporary files, and a [`RawClient`] aimed at the broker; [`NameServer`] and
//!   [`TestBroker`] on their own, master/slave groups with [`Role`] and
//!   [`TestBroker::start_slave`].
//! - [`raw`]: requests as RocketMQ clients send them ([`send_request`], [`Pull`],
//!   [`heartbeat`], [`request`]) and a [`RawClient`] that sends them.
//! - [`Registration`]: what a broker registers with a name server, for name server tests.
//! - [`wait`]: [`eventually`] and friends, to wait on a condition instead of sleeping.
//! - [`process`]: `mqnamesrv`, `mqbroker` and `mqadmin` as child processes, killed on drop.
//! - [`tap`]: a TCP relay that records what two peers sent each other.
//! - [`consumers`]: recording consumers of the Rust client, and a wait for a group to have
//!   consumed everything.
//! - [`tls`]: a [`TestCa`] issuing certificates, and the TLS settings that use them.
//!
//! ```no_run
//! # async fn demo() {
//! use stellmq_testkit::Stack;
//!
//! let stack = Stack::start().await; // a name server and broker-a, ready
//! let sent = stack.send("Orders", 0, "hello", &[("KEYS", "order-1")]).await;
//! assert_eq!(sent.code, 0);
//! let got = stack.pull_until("my-group", "Orders", 0, 1).await;
//! assert_eq!(&got[0].body[..], b"hello");
//! // Clients of the Rust client library connect through the name server.
//! let _namesrv_addr = stack.ns_addr();
//! stack.stop().await; // stops both and removes their files
//! # }
//! ```

pub mod broker;
pub mod consumers;
pub mod embedded;
pub mod namesrv;
pub mod process;
pub mod raw;
pub mod registration;
pub mod scrape;
pub mod stack;
pub mod tap;
pub mod tls;
pub mod wait;

pub use broker::{broker_config, forget_topic, Role, TestBroker};
pub use consumers::{
    consumer_config, group_consumed_all, recording_consumer, wait_consumed_all, Bodies,
};
pub use embedded::EmbeddedStack;
pub use namesrv::{namesrv_config, NameServer};
pub use process::{bin_path, Process};
pub use raw::{heartbeat, request, send_header, send_request, Pull, RawClient};
pub use registration::Registration;
pub use scrape::{http_get, http_post, http_send, scrape, Scrape};
pub use stack::Stack;
pub use tap::{Side, TcpTap};
pub use tls::TestCa;
pub use wait::{
    eventually, eventually_some, eventually_within, wait_for, wait_for_blocking, TIMEOUT,
};
