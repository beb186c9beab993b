//! `mqproxy`: StellMQ's gRPC proxy for RocketMQ 5 clients.
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]
#![allow(clippy::print_stdout)] // -p prints the configuration, as the other binaries do.

/// mimalloc: fewer cycles per small allocation than glibc's malloc on the request path,
/// and no arena trimming (whose page releases shoot down TLBs on every core).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use stellmq_config::{format_documented, ConfigError};
use stellmq_proxy::config::{self, ProxyConfig};
use stellmq_remoting::net::process::{init_logging, run_until_terminated};
use stellmq_remoting::net::tls::TlsConfig;

/// StellMQ gRPC proxy (RocketMQ 5 compatible, cluster mode).
#[derive(Parser, Debug)]
#[command(name = "mqproxy", version)]
struct Args {
    /// Name servers, `ip:port;ip:port` (overrides namesrvAddr of the config file).
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv_addr: Option<String>,
    /// The proxy's JSON config file (RocketMQ's rmq-proxy.json keys); also `-pc`.
    #[arg(long = "pc", alias = "proxyConfigPath")]
    config_file: Option<PathBuf>,
    /// Proxy mode: only `cluster` (brokers run apart) is offered; also `-pm`.
    #[arg(long = "pm", alias = "proxyMode")]
    proxy_mode: Option<String>,
    /// Print all config items and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
}

fn load(args: &Args) -> Result<(ProxyConfig, TlsConfig), ConfigError> {
    let (mut proxy, tls) = match &args.config_file {
        Some(path) => config::load_json_file(path)?,
        None => config::load(&Default::default())?,
    };
    if let Some(namesrv) = &args.namesrv_addr {
        proxy.namesrv_addr = namesrv.clone();
    }
    if let Some(mode) = &args.proxy_mode {
        if !mode.eq_ignore_ascii_case("cluster") {
            return Err(ConfigError::Rejected {
                key: "proxyMode".into(),
                reason: format!("'{mode}' is not offered: StellMQ's proxy runs in cluster mode"),
            });
        }
    }
    Ok((proxy, tls))
}

/// RocketMQ's proxy takes `-pc FILE` and `-pm MODE` (two-letter short options); clap's short
/// options are one letter, so those are read as their long forms.
fn rocketmq_style_args() -> Vec<std::ffi::OsString> {
    std::env::args_os()
        .map(|arg| match arg.to_str() {
            Some("-pc") => "--pc".into(),
            Some("-pm") => "--pm".into(),
            _ => arg,
        })
        .collect()
}

fn main() -> ExitCode {
    let args = Args::parse_from(rocketmq_style_args());
    let (config, tls) = match load(&args) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("mqproxy: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        let mut entries = config.entries();
        entries.extend(tls.printable_entries());
        let docs: Vec<_> = ProxyConfig::DOCS
            .iter()
            .chain(TlsConfig::DOCS)
            .copied()
            .collect();
        print!("{}", format_documented(entries, &docs));
        return ExitCode::SUCCESS;
    }
    init_logging();
    run_until_terminated(
        "mqproxy",
        async move { stellmq_proxy::server::start(config, &tls).await },
        |h| {
            let remoting = h
                .remoting_addr()
                .map(|a| format!(", remoting address {a}"))
                .unwrap_or_default();
            format!(
                "rocketmq-proxy startup successfully, gRPC address {}{remoting}",
                h.local_addr()
            )
        },
        |h| h.shutdown(),
    )
}
