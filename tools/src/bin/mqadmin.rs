//! `mqadmin`: RocketMQ's admin commands against StellMQ (or Apache RocketMQ).

/// mimalloc: fewer cycles per small allocation than glibc's malloc on the request path,
/// and no arena trimming (whose page releases shoot down TLBs on every core).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;
use stellmq_tools::admin::{run, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mqadmin: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mqadmin: {e}");
            ExitCode::FAILURE
        }
    }
}
