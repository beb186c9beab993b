//! StellMQ's tools: `mqadmin` (RocketMQ's admin commands), `storebench` (store benchmark),
//! `mqbench` (producer and consumer benchmarks, over remoting and through mqproxy's gRPC),
//! `storeinspect`.

pub mod admin;
pub mod bench_acl;
pub mod bench_consumer;
pub mod bench_grpc;
pub mod bench_lite;
pub mod bench_metadata;
pub mod send_stats;
pub mod stats;

pub use stellmq_cli::{credentials, namesrv_addr, tls_args};

/// `println!` for command-line output that ends the process quietly when the reader goes
/// away (`mqadmin topicList | head`), instead of panicking on a broken pipe.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}
