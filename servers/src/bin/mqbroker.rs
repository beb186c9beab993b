//! `mqbroker`: runs a StellMQ broker (with `--with-namesrv`, a name server beside it).
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]
#![allow(clippy::print_stdout)] // -p and -m print the configuration, as RocketMQ does.

/// mimalloc: fewer cycles per small allocation than glibc's malloc on the request path,
/// and no arena trimming (whose page releases shoot down TLBs on every core).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use stellmq_broker::BrokerStartConfig;
use stellmq_config::{read_properties_file, ConfigError};
use stellmq_remoting::net::process::{init_logging, run_until_terminated};
use stellmq_servers::with_namesrv::{
    self, WithNamesrvOptions, DEFAULT_NAMESRV_PORT, TEMP_STORE_COMMIT_LOG_FILE_SIZE,
};

/// StellMQ broker (RocketMQ-compatible).
#[derive(Parser, Debug)]
#[command(name = "mqbroker", version)]
struct Args {
    /// Broker config file (RocketMQ's broker.conf keys).
    #[arg(short = 'c', long = "configFile")]
    config_file: Option<PathBuf>,
    /// Name server list `ip:port;ip:port` (overrides namesrvAddr).
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv_addr: Option<String>,
    /// Print all config items and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
    /// Print important config items and exit.
    #[arg(short = 'm', long = "printImportantConfig")]
    print_important: bool,
    /// Developer mode: also run a name server in this process (on --namesrv-port) and
    /// register with it. Without storePathRootDir, store in a temporary directory removed
    /// at exit.
    #[arg(long = "with-namesrv")]
    with_namesrv: bool,
    /// The in-process name server's port with --with-namesrv (0: any free port).
    #[arg(long = "namesrv-port", default_value_t = DEFAULT_NAMESRV_PORT, requires = "with_namesrv")]
    namesrv_port: u16,
}

/// The configuration, and what the config file said that matters beyond it.
struct Loaded {
    config: BrokerStartConfig,
    /// Keys of the config file that no part of the configuration knows.
    unknown_keys: Vec<String>,
    /// Whether the config file set storePathRootDir.
    store_root_given: bool,
    /// Whether the config file set the CommitLog segment size.
    commit_log_file_size_given: bool,
    /// Whether -n or the config file named name servers (not the NAMESRV_ADDR default).
    namesrv_addr_given: bool,
}

fn load_config(args: &Args) -> Result<Loaded, ConfigError> {
    let mut config = BrokerStartConfig::default();
    let mut unknown_keys = Vec::new();
    let mut store_root_given = false;
    let mut commit_log_file_size_given = false;
    let mut namesrv_addr_given = args.namesrv_addr.is_some();
    if let Some(path) = &args.config_file {
        let props = read_properties_file(path)?;
        unknown_keys = config.apply(&props)?;
        store_root_given = props.contains_key("storePathRootDir");
        commit_log_file_size_given = ["mappedFileSizeCommitLog", "mapedFileSizeCommitLog"]
            .iter()
            .any(|key| props.contains_key(*key));
        namesrv_addr_given |= props.contains_key("namesrvAddr");
    }
    if let Some(ns) = &args.namesrv_addr {
        config.broker.namesrv_addr = ns.clone();
    }
    config.normalize()?;
    Ok(Loaded {
        config,
        unknown_keys,
        store_root_given,
        commit_log_file_size_given,
        namesrv_addr_given,
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    let loaded = match load_config(&args) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("mqbroker: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        print!("{}", loaded.config.to_properties());
        return ExitCode::SUCCESS;
    }
    if args.print_important {
        print!("{}", loaded.config.important_properties());
        return ExitCode::SUCCESS;
    }
    init_logging();
    for key in &loaded.unknown_keys {
        tracing::warn!(key = %key, "config key not known to StellMQ: ignored");
    }
    if args.with_namesrv {
        return run_with_namesrv(args.namesrv_port, loaded);
    }
    run_until_terminated(
        "mqbroker",
        stellmq_broker::start(loaded.config),
        boot_line,
        |h| h.shutdown(),
    )
}

/// `--with-namesrv`: the name server and the broker in this process, registering with it
/// (and with name servers given by -n or namesrvAddr), on a temporary store unless the
/// config file sets storePathRootDir.
fn run_with_namesrv(namesrv_port: u16, mut loaded: Loaded) -> ExitCode {
    let options = WithNamesrvOptions {
        namesrv_port,
        temp_store: !loaded.store_root_given,
    };
    if !loaded.namesrv_addr_given {
        // Only the in-process name server, whatever NAMESRV_ADDR says.
        loaded.config.broker.namesrv_addr.clear();
    }
    if options.temp_store && !loaded.commit_log_file_size_given {
        // A temporary directory is often in memory (tmpfs): smaller CommitLog segments.
        let store = &mut loaded.config.store;
        store.mapped_file_size_commit_log =
            TEMP_STORE_COMMIT_LOG_FILE_SIZE.max(store.max_message_size + 1024);
    }
    run_until_terminated(
        "mqbroker",
        with_namesrv::start(loaded.config, options),
        |h| boot_line(h.broker()),
        |h| h.shutdown(),
    )
}

/// The line scripts wait for to know the broker is up.
fn boot_line(broker: &stellmq_broker::BrokerHandle) -> String {
    format!(
        "The broker[{}] boot success. serializeType=JSON",
        broker.broker_addr()
    )
}
