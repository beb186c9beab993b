//! `mqbroker`: runs a StellMQ broker.
#![allow(clippy::print_stdout)] // -p and -m print the configuration, as RocketMQ does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use stellmq_broker::BrokerStartConfig;
use stellmq_config::{read_properties_file, ConfigError};
use stellmq_remoting::net::process::{init_logging, run_until_terminated};

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
}

/// The configuration, and the keys of the config file that no part of it knows.
fn load_config(args: &Args) -> Result<(BrokerStartConfig, Vec<String>), ConfigError> {
    let mut config = BrokerStartConfig::default();
    let mut unknown_keys = Vec::new();
    if let Some(path) = &args.config_file {
        let props = read_properties_file(path)?;
        unknown_keys = config.apply(&props)?;
    }
    if let Some(ns) = &args.namesrv_addr {
        config.broker.namesrv_addr = ns.clone();
    }
    config.normalize()?;
    Ok((config, unknown_keys))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let (config, unknown_keys) = match load_config(&args) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("mqbroker: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        print!("{}", config.to_properties());
        return ExitCode::SUCCESS;
    }
    if args.print_important {
        print!("{}", config.important_properties());
        return ExitCode::SUCCESS;
    }
    init_logging();
    for key in &unknown_keys {
        tracing::warn!(key = %key, "config key not known to StellMQ: ignored");
    }
    // Scripts wait for the boot line to know the server is up.
    run_until_terminated(
        "mqbroker",
        stellmq_broker::start(config),
        |h| {
            format!(
                "The broker[{}] boot success. serializeType=JSON",
                h.broker_addr()
            )
        },
        |h| h.shutdown(),
    )
}
