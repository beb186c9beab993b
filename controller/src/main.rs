//! `mqcontroller`: runs a StellMQ controller (RocketMQ 5 controller mode on Raft).
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]
#![allow(clippy::print_stdout)] // -p prints the configuration, as RocketMQ does.

/// mimalloc, as the other servers use.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use stellmq_config::{format_documented, read_properties_file, ConfigError};
use stellmq_controller::ControllerConfig;
use stellmq_remoting::net::process::{init_logging, run_until_terminated};

/// StellMQ controller (RocketMQ 5 controller mode).
#[derive(Parser, Debug)]
#[command(name = "mqcontroller", version)]
struct Args {
    /// Controller config properties file (RocketMQ key names: controllerDLegerGroup,
    /// controllerDLegerPeers, controllerDLegerSelfId, controllerStorePath, ...).
    #[arg(short = 'c', long = "configFile")]
    config_file: Option<PathBuf>,
    /// Print all config items and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
}

fn load_config(args: &Args) -> Result<ControllerConfig, ConfigError> {
    let mut config = ControllerConfig::default();
    if let Some(path) = &args.config_file {
        config.apply(&read_properties_file(path)?)?;
    }
    config.validate()?;
    Ok(config)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match load_config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mqcontroller: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        print!(
            "{}",
            format_documented(config.entries(), ControllerConfig::DOCS)
        );
        return ExitCode::SUCCESS;
    }
    init_logging();
    run_until_terminated(
        "mqcontroller",
        stellmq_controller::start(config),
        |h| {
            format!(
                "The ControllerManager boot success. serializeType=JSON, address {}",
                h.local_addr()
            )
        },
        |h| h.shutdown(),
    )
}
