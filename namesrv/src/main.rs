//! `mqnamesrv`: runs a StellMQ name server.
#![allow(clippy::print_stdout)] // -p prints the configuration, as RocketMQ does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use stellmq_config::{format_documented, read_properties_file, ConfigError};
use stellmq_namesrv::NamesrvConfig;
use stellmq_remoting::net::process::{init_logging, run_until_terminated};

/// StellMQ name server (RocketMQ-compatible).
#[derive(Parser, Debug)]
#[command(name = "mqnamesrv", version)]
struct Args {
    /// Name server config properties file (RocketMQ key names, e.g. listenPort, kvConfigPath).
    #[arg(short = 'c', long = "configFile")]
    config_file: Option<PathBuf>,
    /// Print all config items and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
    /// Accepted for compatibility with RocketMQ's script; a name server needs no name server.
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv_addr: Option<String>,
}

fn load_config(args: &Args) -> Result<NamesrvConfig, ConfigError> {
    let mut config = NamesrvConfig::default();
    if let Some(path) = &args.config_file {
        let props = read_properties_file(path)?;
        config.apply(&props)?;
    }
    Ok(config)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match load_config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mqnamesrv: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        print!(
            "{}",
            format_documented(config.entries(), NamesrvConfig::DOCS)
        );
        return ExitCode::SUCCESS;
    }
    init_logging();
    // Scripts wait for the boot line to know the server is up.
    run_until_terminated(
        "mqnamesrv",
        stellmq_namesrv::start(config),
        |h| {
            format!(
                "The Name Server boot success. serializeType=JSON, address {}",
                h.local_addr()
            )
        },
        |h| h.shutdown(),
    )
}
