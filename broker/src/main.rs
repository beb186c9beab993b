//! `mqbroker`: runs a StellMQ broker.
#![allow(clippy::print_stdout)] // -p and -m print the configuration, as RocketMQ does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use stellmq_broker::BrokerStartConfig;
use stellmq_config::{read_properties_file, ConfigError};

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

fn load_config(args: &Args) -> Result<BrokerStartConfig, ConfigError> {
    let mut config = BrokerStartConfig::default();
    if let Some(path) = &args.config_file {
        let props = read_properties_file(path)?;
        config.apply(&props)?;
    }
    if let Some(ns) = &args.namesrv_addr {
        config.broker.namesrv_addr = ns.clone();
    }
    config.normalize()?;
    Ok(config)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match load_config(&args) {
        Ok(config) => config,
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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(false)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mqbroker: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let handle = match stellmq_broker::start(config).await {
            Ok(handle) => handle,
            Err(e) => {
                tracing::error!(error = %e, "broker failed to start");
                eprintln!("mqbroker: {e}");
                return ExitCode::FAILURE;
            }
        };
        // Scripts wait for this line to know the broker is up.
        tracing::info!(
            "The broker[{}] boot success. serializeType=JSON",
            handle.broker_addr()
        );
        wait_for_termination().await;
        tracing::info!("shutdown requested");
        handle.shutdown().await;
        ExitCode::SUCCESS
    })
}

async fn wait_for_termination() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
