//! `mqnamesrv`: runs a StellMQ name server.
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]
#![allow(clippy::print_stdout)] // -p prints the configuration, as RocketMQ does.

/// mimalloc: fewer cycles per small allocation than glibc's malloc on the request path,
/// and no arena trimming (whose page releases shoot down TLBs on every core).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use stellmq_config::{format_documented, read_properties_file, ConfigError};
use stellmq_controller::{ControllerConfig, ControllerHandle};
use stellmq_namesrv::{NamesrvConfig, NamesrvHandle};
use stellmq_remoting::net::process::{init_logging, run_until_terminated};
use stellmq_remoting::net::tls::TlsConfig;

/// StellMQ name server (RocketMQ-compatible).
#[derive(Parser, Debug)]
#[command(name = "mqnamesrv", version)]
struct Args {
    /// Name server config properties file (RocketMQ key names, e.g. listenPort, kvConfigPath,
    /// and the tls.* keys).
    #[arg(short = 'c', long = "configFile")]
    config_file: Option<PathBuf>,
    /// Print all config items and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config: bool,
    /// Accepted for compatibility with RocketMQ's script; a name server needs no name server.
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv_addr: Option<String>,
}

type Loaded = (NamesrvConfig, TlsConfig, Option<ControllerConfig>);

fn load_config(args: &Args) -> Result<Loaded, ConfigError> {
    let mut config = NamesrvConfig::default();
    let props = match &args.config_file {
        Some(path) => read_properties_file(path)?,
        None => Default::default(),
    };
    config.apply(&props)?;
    let tls = TlsConfig::load(&props)?;
    Ok((config, tls, embedded_controller(&props)?))
}

/// With `enableControllerInNamesrv=true` (RocketMQ 5), a controller runs in this process on
/// its own port, configured by the controller keys of the same file. `listenPort` there is
/// the name server's, so the controller's single-node default stays 9878.
fn embedded_controller(
    props: &std::collections::BTreeMap<String, String>,
) -> Result<Option<ControllerConfig>, ConfigError> {
    let enabled = props
        .get("enableControllerInNamesrv")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if !enabled {
        return Ok(None);
    }
    let mut controller = ControllerConfig::default();
    controller.apply(props)?;
    controller.listen_port = ControllerConfig::default().listen_port;
    controller.validate()?;
    Ok(Some(controller))
}

async fn start_all(
    config: NamesrvConfig,
    tls: TlsConfig,
    controller: Option<ControllerConfig>,
) -> Result<(NamesrvHandle, Option<ControllerHandle>), String> {
    let namesrv = stellmq_namesrv::start_with_tls(config, tls)
        .await
        .map_err(|e| e.to_string())?;
    let controller = match controller {
        Some(c) => Some(
            stellmq_controller::start(c)
                .await
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    Ok((namesrv, controller))
}

async fn stop_all(handles: (NamesrvHandle, Option<ControllerHandle>)) {
    if let Some(controller) = handles.1 {
        controller.shutdown().await;
    }
    handles.0.shutdown().await;
}

fn main() -> ExitCode {
    let args = Args::parse();
    let (config, tls, controller) = match load_config(&args) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("mqnamesrv: {e}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        let mut entries = config.entries();
        entries.extend(tls.printable_entries());
        let docs: Vec<_> = NamesrvConfig::DOCS
            .iter()
            .chain(TlsConfig::DOCS)
            .copied()
            .collect();
        print!("{}", format_documented(entries, &docs));
        return ExitCode::SUCCESS;
    }
    init_logging();
    // Scripts wait for the boot line to know the server is up.
    run_until_terminated(
        "mqnamesrv",
        start_all(config, tls, controller),
        |(ns, _)| {
            format!(
                "The Name Server boot success. serializeType=JSON, address {}",
                ns.local_addr()
            )
        },
        stop_all,
    )
}
