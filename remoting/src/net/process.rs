//! The life of a server binary (`mqnamesrv`, `mqbroker`): a runtime, start-up, the boot line
//! scripts wait for, then serving until SIGTERM or Ctrl-C, then a graceful stop.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;

/// Logs through `tracing` to stdout, at `RUST_LOG`'s level (default info), without colours,
/// one line per event whatever the logged values hold ([`super::log_line`]).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(false)
        .with_writer(super::log_line::Escaping(std::io::stdout))
        .init();
}

/// Runs `start` on a new multi-thread runtime, logs `boot_line(&handle)`, waits for SIGTERM or
/// Ctrl-C and runs `stop(handle)`. Errors are logged and printed as `program: error`.
pub fn run_until_terminated<H, E, Stop>(
    program: &str,
    start: impl Future<Output = Result<H, E>>,
    boot_line: impl FnOnce(&H) -> String,
    stop: impl FnOnce(H) -> Stop,
) -> ExitCode
where
    E: Display,
    Stop: Future<Output = ()>,
{
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{program}: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let handle = match start.await {
            Ok(handle) => handle,
            Err(e) => {
                tracing::error!(error = %e, "{program} failed to start");
                eprintln!("{program}: {e}");
                return ExitCode::FAILURE;
            }
        };
        tracing::info!("{}", boot_line(&handle));
        wait_for_termination().await;
        tracing::info!("shutdown requested");
        stop(handle).await;
        ExitCode::SUCCESS
    })
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn wait_for_termination() {
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
