//! What StellMQ's command-line tools share (`mqadmin`, `mqbench`, `mqdashboard`): where the
//! name servers are, the credentials to sign with, and the TLS flags. Small on purpose: the
//! console depends on it instead of on the tools, which link the store and the proxy.

pub mod credentials;
pub mod tls_args;

/// The name server list: `-n`, else `NAMESRV_ADDR`, else `127.0.0.1:9876`.
pub fn namesrv_addr(arg: &Option<String>) -> String {
    arg.clone()
        .or_else(|| std::env::var("NAMESRV_ADDR").ok())
        .unwrap_or_else(|| "127.0.0.1:9876".into())
}
