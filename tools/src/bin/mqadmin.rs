//! `mqadmin`: RocketMQ's admin commands against StellMQ (or Apache RocketMQ).

/// mimalloc: fewer cycles per small allocation than glibc's malloc on the request path,
/// and no arena trimming (whose page releases shoot down TLBs on every core).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;
use stellmq_tools::admin::help::{early, Early};
use stellmq_tools::admin::{run, Cli};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args = match early(args) {
        Early::Print(text) => {
            stellmq_tools::outln!("{}", text.trim_end());
            return ExitCode::SUCCESS;
        }
        Early::Fail(text) => {
            eprintln!("{text}");
            return ExitCode::FAILURE;
        }
        Early::Parse(args) => args,
    };
    let cli = Cli::parse_from(std::iter::once("mqadmin".to_owned()).chain(args));
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
