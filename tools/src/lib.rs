//! StellMQ's tools: `mqadmin` (RocketMQ's admin commands), `storebench` (store benchmark),
//! `mqbench` (producer and consumer benchmarks, over remoting and through mqproxy's gRPC),
//! `storeinspect`.

pub mod admin;
pub mod bench_acl;
pub mod bench_consumer;
pub mod bench_grpc;
pub mod credentials;
pub mod send_stats;
pub mod stats;
pub mod tls_args;

/// The name server list: `-n`, else `NAMESRV_ADDR`, else `127.0.0.1:9876`.
pub fn namesrv_addr(arg: &Option<String>) -> String {
    arg.clone()
        .or_else(|| std::env::var("NAMESRV_ADDR").ok())
        .unwrap_or_else(|| "127.0.0.1:9876".into())
}

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
